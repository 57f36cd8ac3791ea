"""The run store: one JSON object per line, one line per measured run, appended as soon as the run ends."""
from __future__ import annotations

import json
import os
from pathlib import Path


class RunStore:
    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self) -> list[dict]:
        if not self.path.exists():
            return []
        out = []
        for line in self.path.read_text().splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a line cut short by a crash mid-write: that run is simply measured again
        return out

    def done_repeats(self, key: str) -> set[int]:
        """Repeats of a configuration already measured successfully (failed runs are tried again)."""
        return {r["repeat"] for r in self.records() if r.get("key") == key and r.get("ok")}

    def append(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True, allow_nan=False) + "\n"
        with open(self.path, "a") as f:  # one write per record, flushed: Ctrl-C keeps every finished run
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
