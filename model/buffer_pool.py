"""BufferPool: `buffer.memory` bytes shared by queued and in-flight batches (docs/kafka-internals.md §4)."""
from __future__ import annotations

from collections import deque
from typing import Generator

import simpy


class BufferExhausted(Exception):
    """allocate() waited max.block.ms without getting memory (Java's BufferExhaustedException)."""


class BufferPool:
    """FIFO allocation of batch buffers. total == 0 means unbounded (kafka-python ≥ 2.1.5 has no bound)."""

    STEADY_COUNTERS = ("wait_seconds",)
    STEADY_SENDING = True

    def __init__(self, env: simpy.Environment, total: int, max_block: float):
        self.env = env
        self.total = total
        self.available = total
        self.max_block = max_block
        # (bytes, granted, deadline) in arrival order: the deadlines (arrival + max.block.ms) come in order too
        self.waiters: deque[tuple[int, simpy.Event, float]] = deque()
        self.watching = False         # a process is waiting for the first waiter's deadline
        self.wait_seconds = 0.0       # summed over threads: bufferpool-wait-ratio's numerator
        self.on_exhausted = lambda: None   # the Sender's wakeup: every partition is ready while threads wait

    @property
    def exhausted(self) -> bool:
        """While a thread waits for memory every partition counts as ready (Sender §5.1)."""
        return bool(self.waiters)

    def try_allocate(self, size: int) -> bool:
        if self.total == 0:
            return True
        if not self.waiters and self.available >= size:
            self.available -= size
            return True
        return False

    def force_allocate(self, size: int) -> None:
        """Take memory even if that overdraws the pool (used where blocking would have to be retroactive)."""
        if self.total and not self.try_allocate(size):
            self.available -= size

    def allocate(self, size: int) -> Generator:
        """Block until `size` bytes are free (FIFO) or raise BufferExhausted after max.block.ms."""
        if self.try_allocate(size):
            return
        granted = self.env.event()
        start = self.env.now
        self.waiters.append((size, granted, start + self.max_block))
        self.on_exhausted()
        if not self.watching:
            self.watching = True
            self.env.process(self._expire())
        ok = yield granted
        self.wait_seconds += self.env.now - start
        if not ok:
            raise BufferExhausted(f"failed to allocate {size} bytes within max.block.ms")

    def _expire(self) -> Generator:
        """One timer for all waiters (not one per wait, which would outlive most waits by max.block.ms): wakes at
        the first waiter's deadline and fails those whose time is up, while any wait."""
        while self.waiters:
            size, granted, deadline = self.waiters[0]
            if deadline > self.env.now:
                yield self.env.timeout(deadline - self.env.now)
                continue
            self.waiters.popleft()
            granted.succeed(False)
            self._serve()
        self.watching = False

    def deallocate(self, size: int) -> None:
        if self.total == 0:
            return
        self.available += size
        self._serve()

    def _serve(self) -> None:
        while self.waiters and self.available >= self.waiters[0][0]:
            size, granted, _ = self.waiters.popleft()
            self.available -= size
            granted.succeed(True)

    @property
    def used(self) -> int:
        return self.total - self.available
