"""Per-record arrays of one run: sizes, when send() was called, when the callback ran, and failures."""
from __future__ import annotations

import numpy as np
import simpy


class Records:
    def __init__(self, env: simpy.Environment, value_size: np.ndarray, batch_bytes: np.ndarray):
        n = len(value_size)
        self.env = env
        self.value_size = value_size        # bytes the application sent (perf-test's --record-size)
        self.size = batch_bytes             # bytes each record takes inside a batch (value + key + overhead)
        self.send_start = np.full(n, np.nan)
        self.completed = np.full(n, np.nan)
        self.failed = np.zeros(n, dtype=bool)
        self.outstanding = n
        self.done = env.event()             # every record acknowledged or failed

    def __len__(self) -> int:
        return len(self.value_size)

    def complete(self, ids: np.ndarray, times: np.ndarray | float) -> None:
        self.completed[ids] = times
        self._settle(len(ids))

    def complete_segments(self, segments: list[tuple], first: float, step: float) -> None:
        """Callbacks for a batch's records (segments as ProducerBatch keeps them) run one after another from
        `first`, `step` apart."""
        done = 0
        for seg in segments:
            if len(seg) == 4:
                first_id, count = seg[0], seg[1]
                self.completed[first_id:first_id + count] = first + step * np.arange(done, done + count)
            else:
                count = len(seg[0])
                self.completed[seg[0]] = first + step * np.arange(done, done + count)
            done += count
        self._settle(done)

    def fail(self, ids: np.ndarray, time: float) -> None:
        self.completed[ids] = time
        self.failed[ids] = True
        self._settle(len(ids))

    def skip(self, ids: np.ndarray) -> None:
        """Records the run ended before sending (workload.seconds)."""
        self._settle(len(ids))

    def _settle(self, n: int) -> None:
        self.outstanding -= n
        if self.outstanding == 0 and not self.done.triggered:
            self.done.succeed()
