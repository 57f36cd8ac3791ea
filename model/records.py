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
        self._completed = np.full(n, np.nan)
        self._callbacks: list[tuple] = []     # runs of callbacks not yet written to `completed` (see below)
        self.failed = np.zeros(n, dtype=bool)
        self.outstanding = n
        self.done = env.event()             # every record acknowledged or failed

    def __len__(self) -> int:
        return len(self.value_size)

    @property
    def completed(self) -> np.ndarray:
        """When each record's callback ran (NaN: not yet)."""
        if self._callbacks:
            self._write_callbacks()
        return self._completed

    def complete_segments(self, segments: list[tuple], first: float, step: float) -> None:
        """Callbacks for a batch's records (segments as ProducerBatch keeps them) run one after another from
        `first`, `step` apart. Ranges of ids are noted and written all at once when `completed` is read."""
        done = 0
        for seg in segments:
            if len(seg) == 4:
                self._callbacks.append((seg[0], seg[1], first, step, done))
                count = seg[1]
            else:
                count = len(seg[0])
                self._completed[seg[0]] = first + step * np.arange(done, done + count)
            done += count
        self._settle(done)

    def _write_callbacks(self) -> None:
        """completed[first_id + j] = first + step · (done + j) for every noted run, as one numpy pass."""
        first_id, count, first, step, done = (np.array(column) for column in zip(*self._callbacks))
        self._callbacks = []
        starts = np.cumsum(count) - count          # each run's place in the concatenation
        j = np.arange(int(count.sum())) - np.repeat(starts, count)
        self._completed[np.repeat(first_id, count) + j] = np.repeat(first, count) + np.repeat(step, count) * (
            np.repeat(done, count) + j)

    def fail(self, ids: np.ndarray, time: float) -> None:
        self._completed[ids] = time
        self.failed[ids] = True
        self._settle(len(ids))

    def skip(self, ids: np.ndarray) -> None:
        """Records the run ended before sending (workload.seconds)."""
        self._settle(len(ids))

    def _settle(self, n: int) -> None:
        self.outstanding -= n
        if self.outstanding == 0 and not self.done.triggered:
            self.done.succeed()
