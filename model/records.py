"""Per-record arrays of one run: sizes, when send() was called, when the callback ran, and failures.

Send and callback times come in runs — consecutive record ids at even spacing, one per chunk a worker sends and
per batch the Sender completes — which are noted as they happen and written into the arrays in one numpy pass
when an array is read.
"""
from __future__ import annotations

from array import array
from typing import NamedTuple

import numpy as np
import simpy


class RangeSegment(NamedTuple):
    """Records first_id … first_id + count − 1 of one batch, appended `spacing` apart from first_append (a chunk's
    records on one partition: the common case)."""
    first_id: int
    count: int
    first_append: float
    spacing: float


class ArraySegment(NamedTuple):
    """Records `ids` of one batch, appended at `appends` (a chunk that spread its records over partitions)."""
    ids: np.ndarray
    appends: np.ndarray


class EvenRuns:
    """A float array per record id, filled by runs: values[first_id + j] = first + step · (offset + j). Runs are
    kept in compact columns (8 bytes a figure, not a tuple of objects): a run can be a single record."""

    def __init__(self, n: int):
        self._n = n
        self._values: np.ndarray | None = None     # allocated when first needed
        self._runs = self._columns()

    @staticmethod
    def _columns() -> tuple[array, ...]:
        return array("q"), array("q"), array("d"), array("d"), array("q")    # first_id, count, first, step, offset

    def note(self, first_id: int, count: int, first: float, step: float, offset: int = 0) -> None:
        runs = self._runs
        runs[0].append(first_id)
        runs[1].append(count)
        runs[2].append(first)
        runs[3].append(step)
        runs[4].append(offset)

    def put(self, ids: np.ndarray, values: np.ndarray | float) -> None:
        """Values for ids no noted run covers."""
        self._array()[ids] = values

    def _array(self) -> np.ndarray:
        if self._values is None:
            self._values = np.full(self._n, np.nan)
        return self._values

    @property
    def values(self) -> np.ndarray:
        if self._runs[0]:
            first_id, count, first, step, offset = (np.frombuffer(column, dtype=column.typecode)
                                                    for column in self._runs)
            self._runs = self._columns()
            keep = count > 0
            if not keep.all():
                first_id, count, first, step, offset = (a[keep] for a in (first_id, count, first, step, offset))
            if len(count):
                self._write(first_id, count, first, step, offset)
        return self._array()

    def _write(self, first_id, count, first, step, offset) -> None:
        n = int(count.sum())
        starts = np.cumsum(count) - count
        in_order = (first_id[1:] == first_id[:-1] + count[:-1]).all()    # runs one after another
        if in_order and self._values is None and first_id[0] == 0 and n == self._n:
            k = self._values = np.empty(n)            # the runs cover every id: nothing is left NaN
        else:
            k = self._array()[first_id[0]:first_id[0] + n] if in_order else np.empty(n)
        # offset + j of every record as a running sum (exact: small integers): +1 along a run, a jump to the
        # next run's offset where it starts.
        k.fill(1.0)
        k[starts] = offset - np.concatenate(([0], offset[:-1] + count[:-1] - 1))
        np.cumsum(k, out=k)
        k *= step[0] if (step == step[0]).all() else np.repeat(step, count)
        k += np.repeat(first, count)
        if not in_order:
            self._array()[np.repeat(first_id - starts, count) + np.arange(n)] = k


class Records:
    def __init__(self, env: simpy.Environment, value_size: np.ndarray, batch_bytes: np.ndarray):
        n = len(value_size)
        self.env = env
        self.value_size = value_size        # bytes the application sent (perf-test's --record-size)
        self.size = batch_bytes             # bytes each record takes inside a batch (value + key + overhead)
        self._send_start = EvenRuns(n)
        self._completed = EvenRuns(n)
        self.failed = np.zeros(n, dtype=bool)
        self.outstanding = n
        self.done = env.event()             # every record acknowledged or failed

    def __len__(self) -> int:
        return len(self.value_size)

    @property
    def send_start(self) -> np.ndarray:
        """When send() was called for each record (NaN: never)."""
        return self._send_start.values

    @property
    def completed(self) -> np.ndarray:
        """When each record's callback ran, or it failed (NaN: neither yet)."""
        return self._completed.values

    def sent(self, first_id: int, count: int, first: float, spacing: float, offset: int = 0) -> None:
        """send() for records first_id … first_id + count − 1 started `spacing` apart, the first at
        first + offset · spacing."""
        self._send_start.note(first_id, count, first, spacing, offset)

    def complete_segments(self, segments: list[RangeSegment | ArraySegment], first: float, step: float) -> None:
        """Callbacks for a batch's records (segments as ProducerBatch keeps them) run one after another from
        `first`, `step` apart."""
        done = 0
        for seg in segments:
            if type(seg) is RangeSegment:
                count = seg.count
                self._completed.note(seg.first_id, count, first, step, done)
            else:
                count = len(seg.ids)
                self._completed.put(seg.ids, first + step * np.arange(done, done + count))
            done += count
        self._settle(done)

    def fail(self, ids: np.ndarray, time: float) -> None:
        self._completed.put(ids, time)
        self.failed[ids] = True
        self._settle(len(ids))

    def skip(self, ids: np.ndarray) -> None:
        """Records the run ended before sending (workload.seconds)."""
        self._settle(len(ids))

    def _settle(self, n: int) -> None:
        self.outstanding -= n
        if self.outstanding == 0 and not self.done.triggered:
            self.done.succeed()
