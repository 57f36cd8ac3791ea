"""Java .properties files (a user's --command-config) and keeping their secrets out of everything we print or store."""
from __future__ import annotations

import re
from pathlib import Path

from kafkasim.model.errors import UserError

# Kafka's own list of password-type settings is longer, but every one of them has one of these words in its name.
SECRET_WORDS = ("password", "secret", "jaas", "token", "credential", "key.password", "keystore.key")
REDACTED = "[redacted]"


def is_secret(key: str) -> bool:
    key = key.lower()
    return any(word in key for word in SECRET_WORDS)


def read_properties(path: Path) -> dict[str, str]:
    """key=value / key: value lines; # and ! comments; a trailing backslash continues a line."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise UserError(f"--command-config {path}: cannot read it ({exc.strerror})") from None
    props: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        m = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", logical)
        if m:
            props[m.group(1)] = m.group(2)
        logical = ""
    return props


def secret_values(props: dict[str, str]) -> list[str]:
    """The secret strings in a config, including the quoted parts of sasl.jaas.config, longest first."""
    found = []
    for key, value in props.items():
        if is_secret(key):
            found.append(value)
            found += re.findall(r'"([^"]+)"', value)  # username="…" password="…" inside a JAAS line
    return sorted({v for v in found if len(v) >= 3}, key=len, reverse=True)


def redact(text: str, secrets: list[str]) -> str:
    for value in secrets:
        text = text.replace(value, REDACTED)
    return text


def redacted(props: dict[str, str]) -> dict[str, str]:
    return {k: (REDACTED if is_secret(k) else v) for k, v in props.items()}
