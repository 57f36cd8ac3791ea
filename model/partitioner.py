"""Partition choice for the records a worker thread sends (docs/kafka-internals.md §2).

A partitioner hands out *runs*: the partitions of the next records, up to the point where its own state would
change (a sticky switch) — one int when they all go to one partition (the common, cheap case), else an array.
The worker calls `on_new_batch` when a batch of the partition it wrote is full, which is where the sticky
partitioners of 2.4–3.2 switch.
"""
from __future__ import annotations

import bisect
import itertools

import numpy as np


class Partitioner:
    abort_on_new_batch = False    # KIP-480: a record that needs a new batch first asks for another partition

    def __init__(self, partitions: list[int], rng: np.random.Generator):
        self.partitions = np.asarray(partitions)   # the partitions this thread may write
        self.rng = rng
        self.only = int(self.partitions[0]) if len(self.partitions) == 1 else None   # the one partition, if so

    def run(self, n: int, sizes) -> tuple[int | np.ndarray, int]:
        """(partition or per-record partitions, count) for up to n records; count < n where a switch follows.
        `sizes` is the records' sizes (an array) or one int when all records are the same size.
        Does not change the partitioner's state: commit() does, for the records really sent."""
        raise NotImplementedError

    def commit(self, k: int, sizes: np.ndarray) -> None:
        """k records of the last run were sent."""

    def on_new_batch(self, partition: int) -> None:
        """A record found the batch of `partition` full."""


class PerRecordPartitioner(Partitioner):
    """A partition chosen for every record (records(n)); with one partition to choose from, runs of it."""

    def run(self, n, sizes):
        if self.only is not None:
            return self.only, n
        return self.records(n), n

    def records(self, n: int) -> np.ndarray:
        """The partitions of the next n records."""
        raise NotImplementedError


class RoundRobinPartitioner(PerRecordPartitioner):
    """≤ 2.3 without a key: a counter from a random start, counter++ % partitions."""

    def __init__(self, partitions, rng):
        super().__init__(partitions, rng)
        self.counter = int(rng.integers(len(self.partitions)))

    def records(self, n):
        return self.partitions[(self.counter + np.arange(n)) % len(self.partitions)]

    def commit(self, k, sizes):
        self.counter += k


class RandomPartitioner(PerRecordPartitioner):
    """kafka-python's DefaultPartitioner without a key: a random partition per record."""

    def records(self, n):
        return self.partitions[self.rng.integers(len(self.partitions), size=n)]


class KeyedPartitioner(PerRecordPartitioner):
    """murmur2(key) % partitions, keys drawn uniformly from `keys` distinct values (each hashed to one partition)."""

    def __init__(self, partitions, rng, keys: int):
        super().__init__(partitions, rng)
        self.key_partition = self.partitions[rng.integers(len(self.partitions), size=min(keys, 1 << 20))]

    def records(self, n):
        return self.key_partition[self.rng.integers(len(self.key_partition), size=n)]


class StickyPartitioner(Partitioner):
    """2.4–3.2 (KIP-480): stay on one partition until a new batch is needed, then a random *other* partition.
    Also used for explicit per-thread partitions, each thread cycling over its own set one batch at a time."""

    def __init__(self, partitions, rng, cycle: bool = False):
        super().__init__(partitions, rng)
        self.cycle = cycle
        self.abort_on_new_batch = not cycle
        self.index = int(rng.integers(len(self.partitions)))

    def run(self, n, sizes):
        return int(self.partitions[self.index]), n

    def after_drain(self, partition: int) -> int:
        """Records that find `partition`'s batch drained start a new batch, so the partitioner moves on first
        (abortOnNewBatch): the partition they go to."""
        self.on_new_batch(partition)
        return int(self.partitions[self.index])

    def on_new_batch(self, partition):
        if partition != self.partitions[self.index] or len(self.partitions) == 1:
            return
        if self.cycle:
            self.index = (self.index + 1) % len(self.partitions)
        else:
            self.index = (self.index + 1 + int(self.rng.integers(len(self.partitions) - 1))) % len(self.partitions)


class UniformStickyPartitioner(Partitioner):
    """≥ 3.3 (KIP-794, BuiltInPartitioner): switch once batch.size bytes were produced to the partition and its
    batches are all full, or at 2 × batch.size regardless, to a partition drawn at random — weighted by
    (longest queue + 1 − queue length) when adaptive partitioning is on, leaving out the partitions whose leader
    `available(partition)` says has had data it could not take for partitioner.availability.timeout.ms."""

    def __init__(self, partitions, rng, batch_size: int, queues=None, available=None):
        super().__init__(partitions, rng)
        self.batch_size = batch_size
        self.partition_ids = [int(p) for p in self.partitions]
        # the accumulator's deques of these partitions, or None (not adaptive)
        self.queues = None if queues is None else [queues[p] for p in self.partition_ids]
        self.available = available
        self.uniforms: list[float] = []
        self.current = self._next()
        self.produced = 0

    def _next(self) -> int:
        if self.queues is None or len(self.partitions) == 1:
            return int(self.partitions[self.rng.integers(len(self.partitions))])
        ids = self.partition_ids
        queues = [len(q) for q in self.queues]
        if self.available is not None:
            kept = [i for i, p in enumerate(ids) if self.available(p)]
            if kept and len(kept) < len(ids):       # (none available: all of them, as the built-in partitioner)
                ids, queues = [ids[i] for i in kept], [queues[i] for i in kept]
        longest = max(queues)
        cumulative = list(itertools.accumulate([longest + 1 - q for q in queues]))
        pick = bisect.bisect_right(cumulative, self._uniform() * cumulative[-1])
        return ids[min(pick, len(cumulative) - 1)]

    def _uniform(self) -> float:
        """rng.random(), drawn 256 at a time: the same numbers (a Generator's stream does not depend on how the
        draws are grouped), without a numpy call per switch."""
        if not self.uniforms:
            self.uniforms = self.rng.random(256).tolist()[::-1]
        return self.uniforms.pop()

    def run(self, n, sizes):
        # Records up to and including the one that takes the stint past 2 × batch.size stay on this partition.
        left = 2 * self.batch_size - self.produced
        if isinstance(sizes, (int, np.integer)):
            k = -(-left // int(sizes))
        else:
            k = int(np.searchsorted(np.cumsum(sizes[:n]), left, side="left")) + 1
        return self.current, max(1, min(n, k))

    def commit(self, k, sizes):
        self.produced += int(sizes) * k if isinstance(sizes, (int, np.integer)) else int(sizes[:k].sum())
        if self.produced >= 2 * self.batch_size:
            self._switch()

    def on_new_batch(self, partition):
        if partition == self.current and self.produced >= self.batch_size:   # its batches are all full now
            self._switch()

    def _switch(self) -> None:
        self.current, self.produced = self._next(), 0


def make_partitioner(kind: str, partitions: list[int], rng: np.random.Generator, batch_size: int, keys: int,
                     adaptive: bool, queues, available=None) -> Partitioner:
    if keys > 0:
        return KeyedPartitioner(partitions, rng, keys)
    if kind == "round-robin":
        return RoundRobinPartitioner(partitions, rng)
    if kind == "random":
        return RandomPartitioner(partitions, rng)
    if kind == "sticky":
        return StickyPartitioner(partitions, rng)
    if kind == "per-thread":
        return StickyPartitioner(partitions, rng, cycle=True)
    if kind == "uniform-sticky":
        return UniformStickyPartitioner(partitions, rng, batch_size, queues if adaptive else None, available)
    raise ValueError(f"unknown partitioner {kind}")
