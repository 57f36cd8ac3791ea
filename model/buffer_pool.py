"""BufferPool: `buffer.memory` bytes shared by queued and in-flight batches (docs/kafka-internals.md §4)."""
from __future__ import annotations

from collections import deque
from typing import Generator

import simpy


class BufferExhausted(Exception):
    """allocate() waited max.block.ms without getting memory (Java's BufferExhaustedException)."""


class BufferPool:
    """FIFO allocation of batch buffers. total == 0 means unbounded (kafka-python ≥ 2.1.5 has no bound)."""

    def __init__(self, env: simpy.Environment, total: int, max_block: float):
        self.env = env
        self.total = total
        self.available = total
        self.max_block = max_block
        self.waiters: deque[tuple[int, simpy.Event]] = deque()
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
        entry = (size, granted)
        self.waiters.append(entry)
        self.on_exhausted()
        start = self.env.now
        result = yield granted | self.env.timeout(self.max_block)
        self.wait_seconds += self.env.now - start
        if granted not in result:
            self.waiters.remove(entry)
            self._serve()
            raise BufferExhausted(f"failed to allocate {size} bytes within max.block.ms")

    def deallocate(self, size: int) -> None:
        if self.total == 0:
            return
        self.available += size
        self._serve()

    def _serve(self) -> None:
        while self.waiters and self.available >= self.waiters[0][0]:
            size, granted = self.waiters.popleft()
            self.available -= size
            granted.succeed()

    @property
    def used(self) -> int:
        return self.total - self.available
