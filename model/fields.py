"""One scenario field: its kind, default, bounds and Kafka's description (used by validation and the app)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


@dataclass(frozen=True)
class Field:
    kind: type | tuple            # int, float, str, bool, or a tuple of allowed strings
    default: Any                  # None = taken from the client version's defaults (clients.py)
    doc: str
    low: float | None = None      # inclusive bounds for numbers
    high: float | None = None

    def allowed(self) -> str:
        if isinstance(self.kind, tuple):
            return "one of " + ", ".join(str(k) for k in self.kind)
        name = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}[self.kind]
        if self.low is not None and self.high is not None:
            return f"{name} from {fmt(self.low)} to {fmt(self.high)}"
        if self.low is not None:
            return f"{name} ≥ {fmt(self.low)}"
        return name


def clip(value: Any, limit: int = 80) -> str:
    """repr(value) cut to `limit` characters: an error names a value, it does not echo a huge one whole."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def read_mapping(path: Path, label: str, what: str) -> dict:
    """A YAML file that must hold a mapping; ValueError with one line (naming `label`) otherwise."""
    try:
        text = Path(path).read_text()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{label}: not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})") from None
    return parse_mapping(text, label, what)


def parse_mapping(text: str, label: str, what: str) -> dict:
    """YAML text that must hold a mapping; ValueError with one line (naming `label`) otherwise."""
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise ValueError(f"{label}: nested too deeply to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ValueError(f"{label}: not valid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    if not isinstance(data, dict) or not data:        # (an empty file is no scenario either)
        raise ValueError(f"{label}: {what}")
    return data
