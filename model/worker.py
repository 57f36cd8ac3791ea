"""Worker threads: the application threads calling KafkaProducer.send() (kafka-internals.md §1).

A worker sends its records in *chunks*: the records it can send back to back without its state changing — until
the throttle would sleep, a batch is full, or the partitioner switches. A chunk costs one or a few SimPy events;
inside it, each record's send() start and append time are computed with numpy. Each record's send() costs
per-record and per-byte CPU, the streaming compression of its bytes (Java), and time under the partition's
deque lock and the producer-wide lock; threads contend on those locks. A new batch needs BufferPool memory, and
send() blocks for it up to max.block.ms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.accumulator import ProducerBatch, RecordAccumulator
from kafkasim.model.buffer_pool import BufferExhausted
from kafkasim.model.host import ContendedLock, Host
from kafkasim.model.partitioner import Partitioner
from kafkasim.model.records import Records

SHARED_CHUNK = 32         # with several threads: small chunks, so threads meet on the same sticky partition and
                          # its lock at close to Java's per-record granularity
MIN_SLEEP = 0.002         # ThroughputThrottler.MIN_SLEEP_NS: the throttle sleeps in steps of at least 2 ms


def throttle_release_times(n: int, rate: float) -> np.ndarray | None:
    """When perf-test's ThroughputThrottler lets record i go, for a thread sending `rate` records/s.

    The throttler adds 1/rate to a sleep deficit for every record sent ahead of schedule and sleeps once the
    deficit reaches 2 ms, so records leave in bursts of ceil(2 ms × rate), each burst on its schedule.
    """
    if rate <= 0:
        return None
    burst = max(1, math.ceil(MIN_SLEEP * rate))
    return (np.arange(n) // burst) * (burst / rate)


@dataclass(frozen=True)
class WorkerCosts:
    record: float            # seconds of CPU per send() outside the locks
    byte: float              # seconds per value byte
    compress_byte: float     # seconds per byte of streaming compression on this thread (Java), else 0
    lock: float              # seconds per record under the partition deque lock
    metadata_lock: float     # seconds per record under the producer-wide lock
    contention: float        # extra seconds per record per thread waiting on the same deque lock
    metadata_contention: float   # the same for the producer-wide lock


class WorkerThread:
    def __init__(self, env: simpy.Environment, name: str, ids: np.ndarray, release: np.ndarray | None,
                 records: Records, accumulator: RecordAccumulator, partitioner: Partitioner, sender,
                 host: Host, gil: simpy.Resource | None, costs: WorkerCosts,
                 partition_locks: list[ContendedLock] | None, metadata_lock: ContendedLock | None,
                 stop_at: float, max_chunk: int):
        self.env = env
        self.name = name
        self.ids = ids
        self.release = release
        self.records = records
        self.acc = accumulator
        self.partitioner = partitioner
        self.sender = sender
        self.host = host
        self.gil = gil
        self.costs = costs
        self.partition_locks = partition_locks      # None: a single thread, nothing to contend with
        self.metadata_lock = metadata_lock
        self.stop_at = stop_at
        self.max_chunk = max_chunk    # model.max_chunk: 1 steps record by record (the fine granularity)
        self.send_seconds = 0.0       # time inside send(): CPU, lock and core waits, buffer waits
        self.sleep_seconds = 0.0      # time asleep in the throttle
        self.lock_wait_seconds = 0.0
        self.chunk_time_cap = 0.005 if gil is not None else math.inf   # CPython's switch interval
        sizes = records.value_size[ids]
        self.cost = costs.record + sizes * (costs.byte + costs.compress_byte)
        if partition_locks is None:   # one thread: the locks are uncontended and cost their hold time only
            self.cost = self.cost + costs.lock + costs.metadata_lock
        self.process = env.process(self.run())

    def run(self) -> Generator:
        env, i, n = self.env, 0, len(self.ids)
        while i < n:
            if self.release is not None and self.release[i] > env.now:
                start = env.now
                yield env.timeout(self.release[i] - env.now)
                self.sleep_seconds += env.now - start
            if env.now >= self.stop_at:     # workload.seconds is up: the rest is never sent
                self.records.skip(self.ids[i:])
                break
            t0 = env.now
            released = n - i if self.release is None else int(np.searchsorted(self.release, t0, "right")) - i
            cap = min(released, self.max_chunk if self.partition_locks is None else min(self.max_chunk, SHARED_CHUNK))
            if self.chunk_time_cap < math.inf:
                cap = max(1, min(cap, int(self.chunk_time_cap / max(self.cost[i], 1e-9))))
            ids = self.ids[i:i + cap]
            sizes = self.records.size[ids]
            parts = self.partitioner.run(cap, sizes)
            if self.acc.open_batch(int(parts[0])) is None:
                try:
                    yield from self._new_batch(int(parts[0]), int(sizes[0]))
                except BufferExhausted:
                    self.records.send_start[ids[0]] = t0
                    self.records.fail(ids[:1], env.now)
                    self.send_seconds += env.now - t0
                    i += 1
                    continue
            k, full = self._fit(parts, sizes)
            if k == 0:                         # the first record finds its batch full: close it, start anew
                self._close(full)
                continue
            self.partitioner.commit(k, sizes[:k])
            if self.partition_locks is None:
                yield from self._append_alone(ids[:k], parts[:k], sizes[:k], i)
            else:
                yield from self._append_shared(ids[:k], parts[:k], sizes[:k], i)
            if full is not None and full.full_at == np.inf:
                self._close(full)
            self.records.send_start[ids[:k]] = t0 + (env.now - t0) / k * np.arange(k)
            self.send_seconds += env.now - t0
            i += k

    # --- pieces of one chunk
    def _new_batch(self, partition: int, size: int) -> Generator:
        allocated = max(self.acc.batch_size, size)
        yield from self.acc.pool.allocate(allocated)
        if self.acc.open_batch(partition) is not None:     # another thread made one meanwhile
            self.acc.pool.deallocate(allocated)
        else:
            self.acc.new_batch(partition, allocated)

    def _fit(self, parts: np.ndarray, sizes: np.ndarray) -> tuple[int, ProducerBatch | None]:
        """How many records of the chunk fit in their partitions' open batches, and the batch the next record
        would find full (None if the chunk ends at a partition that has no batch yet). With several threads this
        is a plan: by the time the deque lock is held another thread may have filled the batch."""
        k, full = len(parts), None
        for p, positions in partition_groups(parts):
            batch = self.acc.open_batch(p)
            theirs = sizes[positions]
            room = 0 if batch is None else self.acc.room(batch, theirs)
            if room < len(theirs):
                stop = room if isinstance(positions, slice) else int(positions[room])
                if stop < k:
                    k, full = stop, batch
        return k, full

    def _close(self, batch: ProducerBatch, at: float | None = None) -> None:
        """An append found no room: Java closes the batch for appends, wakes the Sender, and the sticky
        partitioner of 2.4–3.2 moves on."""
        batch.full_at = self.env.now if at is None else at
        self.sender.wakeup_at(batch.full_at)
        self.partitioner.on_new_batch(batch.partition)

    def _append_alone(self, ids: np.ndarray, parts: np.ndarray, sizes: np.ndarray, i: int) -> Generator:
        """One thread: nothing contends, so the chunk is one piece of CPU work; records land as it runs."""
        cost = self.cost[i:i + len(ids)]
        total = float(cost.sum())
        held = yield from self.host.acquire(self.gil)
        appends = self.env.now + np.cumsum(cost)
        for p, sel in partition_groups(parts):
            batch = self.acc.open_batch(p)
            if batch is None:
                # The Sender drained this batch while we waited for a core: Java's append would allocate a new
                # one here; we do not block retroactively.
                self.acc.pool.force_allocate(self.acc.batch_size)
                batch = self.acc.new_batch(p, self.acc.batch_size)
            self._add(batch, ids[sel], appends[sel], sizes[sel])
        yield self.env.timeout(total)
        self.host.release(held, total)

    def _append_shared(self, ids: np.ndarray, parts: np.ndarray, sizes: np.ndarray, i: int) -> Generator:
        """Several threads: CPU work in parallel, then the producer-wide lock, then each partition's deque lock,
        under which the records are appended to whatever batch is open by then. Time under a lock is not
        charged to the host's cores."""
        yield from self.host.run(float(self.cost[i:i + len(ids)].sum()), self.gil)
        start = self.env.now
        yield from self.metadata_lock.hold_for(len(ids))
        for p, sel in partition_groups(parts):
            count = len(ids[sel])

            def append(now, per_record, p=p, sel=sel, count=count):
                self._append_locked(p, ids[sel], sizes[sel], now + per_record * np.arange(1, count + 1))
            yield from self.partition_locks[p].hold_for(count, append)
        self.lock_wait_seconds += (self.env.now - start) - len(ids) * (self.costs.metadata_lock + self.costs.lock)

    def _append_locked(self, p: int, ids: np.ndarray, sizes: np.ndarray, appends: np.ndarray) -> None:
        """Under the deque lock: fill the open batch; what does not fit starts the next one. New batches made here
        take their memory without blocking (Java would release the lock, allocate and retry)."""
        while len(ids):
            batch = self.acc.open_batch(p)
            if batch is None:
                self.acc.pool.force_allocate(self.acc.batch_size)
                batch = self.acc.new_batch(p, self.acc.batch_size)
            room = self.acc.room(batch, sizes)
            if room:
                self._add(batch, ids[:room], appends[:room], sizes[:room])
            if room < len(ids):
                self._close(batch, at=float(appends[room - 1]) if room else self.env.now)
            ids, sizes, appends = ids[room:], sizes[room:], appends[room:]

    def _add(self, batch: ProducerBatch, ids: np.ndarray, appends: np.ndarray, sizes: np.ndarray) -> None:
        new = batch.records == 0
        batch.add(ids, appends, int(sizes.sum()))
        if new:
            self.sender.wakeup_at(batch.created)


def partition_groups(parts: np.ndarray) -> list[tuple[int, slice | np.ndarray]]:
    """The chunk's records grouped by partition: (partition, positions) — one slice in the common sticky case."""
    if (parts == parts[0]).all():
        return [(int(parts[0]), slice(None))]
    return [(int(p), np.flatnonzero(parts == p)) for p in np.unique(parts)]
