"""Imports go one way only: app → validation → calibration → model (and model imports none of the others), at
module level and inside functions alike."""
import ast

import pytest

from conftest import ROOT

LAYERS = ["model", "calibration", "validation", "app"]      # each may import those before it


def _imports(path) -> set[str]:
    """The kafkasim packages a module imports (kafkasim.<package>...), anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                 else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        for name in names:
            parts = name.split(".")
            if parts[0] == "kafkasim" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_imports_only_go_down(layer):
    allowed = set(LAYERS[:LAYERS.index(layer) + 1])
    upward = {str(path.relative_to(ROOT)): sorted(_imports(path) & set(LAYERS) - allowed)
              for path in sorted((ROOT / layer).rglob("*.py"))}
    assert not {k: v for k, v in upward.items() if v}, f"{layer} imports from a layer above it"


def test_the_check_sees_imports_inside_functions(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from kafkasim.app import cli\n    import kafkasim.validation.cluster\n")
    assert _imports(module) == {"app", "validation"}


def _modules(path) -> set[str]:
    """The kafkasim modules a module imports, as 'package.module', anywhere in it."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("kafkasim."):
            parts = node.module.split(".")
            found |= {".".join(parts[1:3])} if len(parts) > 2 else {f"{parts[1]}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {".".join(a.name.split(".")[1:3]) for a in node.names if a.name.startswith("kafkasim.")}
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_no_import_cycles_within_a_layer(layer):
    graph = {f"{layer}.{p.stem}": {m for m in _modules(p) if m.startswith(layer + ".")}
             for p in (ROOT / layer).glob("*.py")}
    done, path = set(), []

    def visit(module):
        if module in path:
            raise AssertionError("import cycle: " + " → ".join(path[path.index(module):] + [module]))
        if module in done:
            return
        path.append(module)
        for other in sorted(graph.get(module, ())):
            visit(other)
        path.pop()
        done.add(module)
    for module in sorted(graph):
        visit(module)


MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80      # small modules with one job, functions that fit on a screen


@pytest.mark.parametrize("layer", LAYERS)
def test_modules_and_functions_stay_small(layer):
    too_long = []
    for path in sorted((ROOT / layer).rglob("*.py")):
        text = path.read_text()
        name = str(path.relative_to(ROOT))
        if len(text.splitlines()) > MAX_MODULE_LINES:
            too_long.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text, name)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{name}:{node.lineno} {node.name}(): {lines} lines")
    assert not too_long, "over the limits: " + "; ".join(too_long)


def test_every_reference_to_the_docs_resolves():
    """A docstring's "docs/NAME.md §N" names a file in docs/ and a "## N." section in it."""
    import re
    missing = []
    for layer in LAYERS:
        for path in sorted((ROOT / layer).rglob("*.py")):
            for doc, section in set(re.findall(r"(docs/[\w-]+\.md)(?: §(\d+))?", path.read_text())):
                target = ROOT / doc
                if not target.exists():
                    missing.append(f"{path.relative_to(ROOT)}: {doc}")
                elif section and not re.search(rf"^## {section}\. ", target.read_text(), re.M):
                    missing.append(f"{path.relative_to(ROOT)}: {doc} §{section}")
    assert not missing, missing
