"""Scenario sources for the app: the example files, uploaded YAML, saved YAML and the shareable URL.

Pure functions (no Streamlit) so the pages stay thin and this stays testable. A scenario in the app is a *base*
(an example file's keys, or an uploaded file's) plus *edits* (flat key -> value as typed); from_flat validates
the two together, so unset producer properties keep following the client version's defaults.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import yaml

from kafkasim.model.fields import parse_mapping
from kafkasim.model.scenario import ScenarioError, from_flat
from kafkasim.model.scenario_fields import FIELDS, check_key, flatten, parse_overrides

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_EXAMPLE = "kontur-2020/I"
NO_EXAMPLE = "(field defaults)"
UPLOADED = "(uploaded file)"


def example_names() -> list[str]:
    """Example scenarios by their path under examples/ without .yaml, e.g. `kontur-2020/I`. Other YAML files
    there (calibration snapshots, ...) are left out: a scenario's keys are all scenario fields."""
    if not EXAMPLES_DIR.is_dir():
        return []
    paths = sorted(EXAMPLES_DIR.rglob("*.yaml"), key=lambda p: (len(p.relative_to(EXAMPLES_DIR).parts), str(p)))
    return [str(p.relative_to(EXAMPLES_DIR).with_suffix("")) for p in paths
            if _is_scenario(str(p), p.stat().st_mtime_ns)]


@functools.lru_cache(maxsize=512)
def _is_scenario(path: str, mtime_ns: int) -> bool:
    try:
        keys = parse_yaml(Path(path).read_text(), path)
    except (ScenarioError, OSError, UnicodeDecodeError):
        return False
    try:
        for key in keys:
            check_key(key)
    except ScenarioError:
        return False
    return bool(keys)


def default_example() -> str:
    """The example a fresh page starts from (none when examples/ is not there, e.g. installed from a wheel)."""
    return DEFAULT_EXAMPLE if DEFAULT_EXAMPLE in example_names() else NO_EXAMPLE


def parse_yaml(text: str, source: str) -> dict[str, Any]:
    """A scenario file's keys, flattened; ScenarioError (one line) if it is not a mapping of valid YAML."""
    try:
        tree = parse_mapping(text, source, "a scenario file must be a mapping of sections (producer:, workload:, ...)")
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    return flatten(tree)


def example_raw(name: str) -> dict[str, Any]:
    """An example's own keys (not resolved: unset producer properties stay unset)."""
    if name in ("", NO_EXAMPLE, UPLOADED):
        return {}
    path = EXAMPLES_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ScenarioError(f"example {name!r} does not exist; examples are {', '.join(example_names()) or 'none'}")
    return parse_yaml(path.read_text(), str(path))


def build(base: dict[str, Any], edits: dict[str, Any]):
    """The validated scenario from a base and edits (None or blank = the field's default)."""
    raw = dict(base)
    for key, value in edits.items():
        if isinstance(value, str) and value.strip() == "":
            value = None
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return from_flat(raw, source="app")


def nest(flat: dict[str, Any]) -> dict[str, Any]:
    """Flat keys back to sections for a readable YAML file; Kafka property names keep their dots."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if "." not in key:
            out[key] = value
            continue
        section, rest = key.split(".", 1)
        if section == "cluster" and rest.startswith("broker."):
            out.setdefault("cluster", {}).setdefault("broker", {})[rest[len("broker."):]] = value
        else:
            out.setdefault(section, {})[rest] = value
    return out


def to_yaml(scenario, explicit: dict[str, Any] | None = None) -> str:
    """YAML for a scenario: only the explicit keys (so client defaults still apply when re-loaded), or everything
    resolved if explicit is None. Typed values come from the resolved scenario."""
    flat = scenario.flat()
    keys = list(explicit) if explicit is not None else list(flat)
    chosen = {k: flat[k] for k in FIELDS if k in keys and k in flat}
    return yaml.safe_dump(nest(chosen), sort_keys=False, allow_unicode=True)


# --- the URL: ?example=kontur-2020/I&producer.batch.size=32768 (every edited key as itself) -------------------

def to_query(example: str, edits: dict[str, Any], extra: dict[str, str] | None = None) -> dict[str, str]:
    q = {"example": example}
    for key, value in edits.items():
        q[key] = "" if value is None else (("true" if value else "false") if isinstance(value, bool) else str(value))
    q.update(extra or {})
    return q


PAGE_PARAMS = ("example", "cap")       # the URL's own parameters beside the scenario's keys


def from_query(params: dict[str, str]) -> tuple[str, dict[str, Any], list[str]]:
    """The example and edits a URL carries (the scenario check reports bad values), and the parameters that are
    neither a scenario key nor the page's own (a misspelt key), for the page to name."""
    example = params.get("example", default_example())
    edits, unknown = {}, []
    for key, value in params.items():
        if key in PAGE_PARAMS:
            continue
        try:
            check_key(key)
        except ScenarioError:
            unknown.append(key)
        else:
            edits[key] = value
    return example, edits, unknown


# --- Compare: a scenario as one line, `example key=value key=value` --------------------------------------------

def parse_spec(example: str, overrides_text: str):
    """An example plus `key=value` lines (as `kafkasim predict --set` takes them) -> (scenario, overrides)."""
    lines = [ln.strip() for ln in overrides_text.replace(";", "\n").splitlines()]
    overrides = parse_overrides([ln for ln in lines if ln and not ln.startswith("#")])
    return build(example_raw(example), overrides), overrides


def to_spec(example: str, edits: dict[str, Any]) -> str:
    """The Compare page's one-line form of a scenario: `example;key=value;key=value`."""
    items = [f"{k}={'' if v is None else (str(v).lower() if isinstance(v, bool) else v)}" for k, v in edits.items()]
    return ";".join([example] + items)
