"""A broker's page cache (docs/kafka-internals.md §10).

Appends land in memory as dirty pages. The kernel starts writing them back, in order, once they reach
vm.dirty_background_ratio of the cache or the oldest is vm.dirty_expire_centisecs old, and from then on keeps the
disk busy; once the data not yet written back reaches vm.dirty_ratio, appends wait for the disk. So a run writing
faster than the disk runs at its own rate for (background + (limit − background) ÷ (1 − disk ÷ write rate)) ÷ write
rate before the disk sets the pace. Simplified: writeback, once started, does not stop again below the background
threshold, and the kernel's gradual throttling between the two thresholds is a hard limit at the upper one. A fetch of data the cache no longer holds (a consumer that
lags by more than the cache) reads it from the disk: inside sendfile, on the network thread that sends the
response. The I/O scheduler lets reads go ahead of writeback, which they push back by their own time.
"""
from __future__ import annotations

import math

from kafkasim.model.pipes import Pipe


class PageCache:
    STEADY_COUNTERS = ("pending", "read_bytes", "read_seconds")

    def __init__(self, disk: Pipe, size_bytes: float, dirty_ratio: float, logs: int,
                 background_ratio: float = 0.0, expire: float = 0.0):
        self.disk = disk
        self.size = size_bytes
        self.dirty_limit = size_bytes * dirty_ratio / 100.0
        self.background_limit = size_bytes * min(background_ratio, dirty_ratio) / 100.0
        self.expire = expire
        self.pending = 0                  # dirty bytes writeback has not started on
        self.pending_since = None         # when the oldest of them was written
        self.flushing = False             # writeback has started
        self.logs = max(1, logs)          # the replicas it holds: each log gets an even share of the cache
        self.reads_free_at = 0.0
        self.read_bytes = 0
        self.read_seconds = 0.0

    def write(self, now: float, nbytes: int) -> float:
        """`nbytes` appended at `now`; returns how long the append must wait for the disk (> 0 once the dirty
        data reaches its limit)."""
        if not self.flushing:
            self.pending += nbytes
            self.pending_since = now if self.pending_since is None else self.pending_since
            if self.pending < self.background_limit and now - self.pending_since < self.expire:
                return 0.0
            self.flushing, nbytes = True, self.pending
        self.disk.reserve(now, nbytes)
        return self.disk.free_at - now - self.dirty_limit / self.disk.rate

    def peak_backlog(self, start: float, end: float, rate: float) -> float:
        """The most bytes writeback will have queued on the disk by `end` if appends go on at `rate` bytes a second
        from `start` (writeback not yet started): appends wait once it passes the dirty limit."""
        begins, pending = self._writeback(start, rate)
        return 0.0 if begins >= end else pending + max(0.0, rate - self.disk.rate) * (end - begins)

    def extend(self, start: float, end: float, rate: float) -> None:
        """Appends at `rate` bytes a second from `start` to `end`, in closed form (a fast-forward's; writeback not
        yet started): pending until writeback starts, then booked on the disk as a steady stream."""
        begins, pending = self._writeback(start, rate)
        if begins >= end:
            self.pending = int(self.pending + rate * (end - start))
            return
        self.pending, self.flushing = int(pending), True
        disk, flushed = self.disk, pending + rate * (end - begins)
        disk.free_at = float(max(end, max(disk.free_at, begins) + flushed / disk.rate))
        disk.busy_seconds += float(flushed / disk.rate)
        disk.bytes += int(flushed)

    def _writeback(self, start: float, rate: float) -> tuple[float, float]:
        """When writeback starts if appends go on at `rate` bytes a second from `start` (the background threshold
        reached or the oldest dirty page expired), and the bytes pending then."""
        if self.flushing or rate <= 0:
            return (start if self.flushing else math.inf), self.pending
        expires = (start if self.pending_since is None else self.pending_since) + self.expire
        begins = max(start, min(expires, start + (self.background_limit - self.pending) / rate))
        return begins, self.pending + rate * (begins - start)

    def uncached(self, written: list[int], first: int, last: int) -> int:
        """Bytes of a log's batches first..last-1 (`written`: the log's bytes up to each batch) that are older
        than the log's share of the cache."""
        oldest_cached = written[-1] - self.size / self.logs
        return int(max(0.0, min(written[last], oldest_cached) - written[first]))

    def read(self, now: float, nbytes: int) -> float:
        """Read `nbytes` from the disk, after the reads before it; returns when they are in memory."""
        seconds = nbytes / self.disk.rate
        self.reads_free_at = max(now, self.reads_free_at) + seconds
        self.disk.free_at = max(self.disk.free_at, now) + seconds
        self.disk.busy_seconds += seconds
        self.read_bytes += nbytes
        self.read_seconds += seconds
        return self.reads_free_at
