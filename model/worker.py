"""Worker threads: the application threads calling KafkaProducer.send() (docs/kafka-internals.md §1).

A worker sends its records in *chunks*: the records it can send back to back without its state changing — until
the throttle would sleep, a batch is full, or the partitioner switches. A chunk costs one or a few SimPy events;
inside it, each record's send() start and append time are computed with numpy. Each record's send() costs
per-record and per-byte CPU, the streaming compression of its bytes (Java: a codec buffer each time the batch fills
one, and the rest of a batch it finds full and closes), and time under the partition's
deque lock and the producer-wide lock; threads contend on those locks. Between sends the application does its own
work (worker.app_us): the thread is busy, but not in send(). A new batch needs BufferPool memory, and
send() blocks for it up to max.block.ms.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.accumulator import ProducerBatch, RecordAccumulator, partition_groups
from kafkasim.model.buffer_pool import BufferExhausted
from kafkasim.model.host import ContendedLock, Host, Slots, wait_for
from kafkasim.model.partitioner import Partitioner, PerRecordPartitioner
from kafkasim.model.records import Records

GIL_SWITCH = 0.005        # sys.getswitchinterval(): how long a thread waits for the GIL before the holder must drop it
GIL_CHECK = 0.001         # a Python worker's chunks are at most this long, so it notices such a wait in time
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


def application_seconds(workers: list, pools: list, value=getattr) -> float:
    """The CPU the application's threads take: their time in and between send() less their waits for locks, cores
    and buffer memory (a thread waiting for a core is held back by the host, not by its own work). `value(o, name)`
    reads each figure (getattr: the run's so far)."""
    return (sum(value(wk, "send_seconds") + value(wk, "app_seconds") - value(wk, "lock_wait_seconds")
                - value(wk, "core_wait_seconds") for wk in workers)
            - sum(value(pool, "wait_seconds") for pool in pools))


@dataclass(frozen=True)
class WorkerCosts:
    record: float            # seconds of CPU per send() outside the locks
    byte: float              # seconds per value byte
    compress_byte: float     # seconds per byte of compression on this thread (Java's streaming codec), else 0
    lock: float              # seconds per record under the partition deque lock
    metadata_lock: float     # seconds per record under the producer-wide lock
    contention: float        # extra seconds per record per thread waiting on the same deque lock
    metadata_contention: float   # the same for the producer-wide lock
    transfer: float = 0.0    # extra seconds per record under a deque lock another thread held last
    batch: float = 0.0       # seconds per batch the thread starts (sender.wakeup(), the batch's set-up)
    app: float = 0.0         # seconds per record of the application's own work between send() calls
    first_send: float = 0.0  # seconds the first send() blocks for the topic's metadata (0: a warm producer)


class WorkerThread:
    """One application thread sending the records with ids first_id … first_id + count − 1, in order."""

    STEADY_COUNTERS = ("send_seconds", "app_seconds", "sleep_seconds", "lock_wait_seconds", "core_wait_seconds")
    STEADY_SENDING = True     # (its counters stop with its last send)

    def __init__(self, env: simpy.Environment, name: str, first_id: int, count: int, release: np.ndarray | None,
                 records: Records, accumulator: RecordAccumulator, partitioner: Partitioner, sender,
                 host: Host, gil: Slots | None, costs: WorkerCosts,
                 partition_locks: list[ContendedLock] | None, metadata_lock: ContendedLock | None,
                 stop_at: float, max_chunk: int, jvm=None, sharing: int = 1):
        self.env = env
        self.name = name
        self.first_id = first_id
        self.count = count
        self.release = release
        self.records = records
        self.acc = accumulator
        self.partitioner = partitioner
        self.sender = sender
        self.host = host
        self.gil = gil
        self.costs = costs
        self.jvm = jvm                # the producer's Jvm: its code costs more until compiled
        self.partition_locks = partition_locks      # None: a single thread, nothing to contend with
        self.metadata_lock = metadata_lock
        self.stop_at = stop_at
        self.send_seconds = 0.0       # time inside send(): CPU, lock and core waits, buffer waits
        self.app_seconds = 0.0        # the application's own work between sends (busy, but not in send())
        self.sleep_seconds = 0.0      # time asleep in the throttle
        self.lock_wait_seconds = 0.0
        self.core_wait_seconds = 0.0  # waiting for a core (or the GIL) the host is short of
        self.sent = 0                 # records whose send() has returned
        self.switched = False         # this thread's last append moved the sticky partition on
        self.max_chunk = max_chunk
        # Threads sharing the producer's partitioner append to the same batches: each chunk takes at most its
        # share of a batch, so the threads fill every batch together as Java's record-by-record appends do. Where
        # the partitioner leaves a full batch's partition (2.4–3.2's sticky), a chunk also reserves its room, and
        # a thread that finds the rest reserved moves on as the record after the batch's last would.
        self.sharing = sharing
        # (a per-record partitioner spreads a chunk over its partitions: its share of each of their batches)
        self.spread = len(partitioner.partitions) if isinstance(partitioner, PerRecordPartitioner) else 1
        self.reserves = sharing > 1 and partitioner.abort_on_new_batch and len(partitioner.partitions) > 1
        self.mean_size = (accumulator.fixed_size if accumulator.fixed_size is not None
                          else float(records.size[first_id:first_id + count].mean()) if count else 1.0)
        self.reservation: tuple[ProducerBatch, int] | None = None
        # Each send()'s CPU: its Java code's, the same for every record, and its bulk copies of the value's bytes
        # (intrinsics, never slowed by a cold JIT): one figure where records are all of one size, else an array.
        self.fixed = accumulator.fixed_size is not None
        values = records.value_size[first_id:first_id + (1 if self.fixed else count)]
        self.copies = values * costs.byte
        self.per_record = costs.record + costs.app
        if partition_locks is None:   # one thread: the locks are uncontended and cost their hold time only
            self.per_record += costs.lock + costs.metadata_lock
        self.owed_compression = 0     # bytes of batches this thread closed, compressed in its next chunk
        self.owed_batches = 0         # batches this thread started, paid for in its next chunk
        self.prepaid = None           # the batch whose close the last chunk paid for
        self.gil_held = False         # this thread holds the GIL between chunks (kafka-python)
        if gil is not None:           # the GIL changes hands only between chunks: keep them short of the interval
            mean = self.per_record + (float(self.copies.mean()) if len(self.copies) else 0.0)
            self.max_chunk = max(1, min(self.max_chunk, int(GIL_CHECK / max(mean, 1e-9))))
        self.process = env.process(self.run())

    def behind(self, now: float) -> int:
        """Records the throttle has let go by `now` whose send() has not yet returned (none unthrottled)."""
        return 0 if self.release is None else max(0, int(np.searchsorted(self.release, now, "right")) - self.sent)

    def run(self) -> Generator:
        env, i, n, lo = self.env, 0, self.count, self.first_id
        acc, records, partitioner, release = self.acc, self.records, self.partitioner, self.release
        fixed = acc.fixed_size
        started = env.now
        if n and self.costs.first_send > 0:
            # KafkaProducer.waitOnMetadata: the first send() blocks until the topic's metadata is known. The
            # throttle's schedule started with it, so the records due meanwhile then leave in one burst.
            yield env.timeout(self.costs.first_send)
            self.send_seconds += self.costs.first_send
        while i < n:
            if release is not None and release[i] > env.now:
                self._drop_gil()
                start = env.now
                yield env.timeout(release[i] - env.now)
                self.sleep_seconds += env.now - start
            t0 = env.now
            if t0 >= self.stop_at:     # workload.seconds is up: the rest is never sent
                records.skip(np.arange(lo + i, lo + n))
                break
            cap = self._cap(i, t0)
            sizes = fixed if fixed is not None else records.size[lo + i:lo + i + cap]
            parts, cap = partitioner.run(cap, sizes)
            first = parts if isinstance(parts, int) else int(parts[0])
            if acc.open_batch(first) is None:
                if partitioner.abort_on_new_batch and not self.switched:
                    # KIP-480: a record that would start a new batch (its partition's was drained) first moves
                    # the sticky partition, once.
                    self.switched = True
                    partitioner.on_new_batch(first)
                    continue
                allocated = max(acc.batch_size, int(records.size[lo + i]))
                if acc.pool.try_allocate(allocated):      # (memory at hand: no generator to wait in)
                    self._start_batch(first, allocated)
                else:
                    try:
                        self._drop_gil()
                        yield from self._wait_for_memory(first, allocated)
                    except BufferExhausted:
                        records.sent(lo + i, 1, t0, 0.0)
                        records.fail(np.array([lo + i]), env.now)
                        self.send_seconds += env.now - t0
                        i += 1
                        self.sent = i
                        continue
            parts, cap, groups = self._start_batches(parts, cap, i)
            k, full = self.acc.fit(parts, cap, None if fixed is not None else sizes, groups)
            if k == 0:
                if full.reserved:
                    # Other threads' chunks fill it: their records come first, and the sticky partitioner moves on.
                    partitioner.on_new_batch(full.partition)
                    continue
                self.close(full)               # the first record finds its batch full: close it, start anew
                continue
            if self.reserves:
                self._reserve(parts, i, k)
            partitioner.commit(k, sizes)
            self.switched = False
            if not isinstance(parts, int):
                parts = parts[:k]
            if self.partition_locks is None and self.host.uncontended(self.gil):
                # (_append_alone, where there is nothing to wait for, without a generator: most chunks go this way)
                total = self._chunk_cost(parts, i, k, full)
                self._append(parts, i, k, env.now + total / k, total / k)
                yield env.timeout(total)
                self.host.busy_seconds += total
            elif self.partition_locks is None:
                yield from self._append_alone(parts, i, k, full)
            else:
                yield from self._append_shared(parts, i, k, full)
            if full is not None and full.full_at == np.inf:
                self.close(full)
            self._sent(i, k, t0, started)
            app = k * self.costs.app
            self.app_seconds += app
            self.send_seconds += env.now - t0 - app
            i += k
            self.sent = i
        self._drop_gil()

    # --- pieces of one chunk
    def _cap(self, i: int, now: float) -> int:
        """The most records the chunk from record i may hold: those released by now (at least record i: a sleep
        may end one ulp before its release time), model.max_chunk, and a thread's share of a shared batch."""
        n, release = self.count, self.release
        released = n - i if release is None else max(1, int(np.searchsorted(release, now, "right")) - i)
        cap = min(released, self.max_chunk)
        if self.sharing > 1:
            cap = min(cap, -(-self.acc.batch_records(self.mean_size) * self.spread // self.sharing))
        return cap

    def _sent(self, i: int, k: int, t0: float, started: float) -> None:
        """Records i … i+k−1 were in send() from t0 until now, evenly spaced."""
        lo, spacing = self.first_id + i, (self.env.now - t0) / k
        if i == 0:     # the first send() began before its metadata wait
            self.records.sent(lo, 1, started, 0.0)
            if k > 1:
                self.records.sent(lo + 1, k - 1, t0, spacing, offset=1)
        else:
            self.records.sent(lo, k, t0, spacing)

    def _wait_for_memory(self, partition: int, allocated: int) -> Generator:
        """A new batch whose memory is not at hand: BufferPool.allocate blocks up to max.block.ms."""
        yield from self.acc.pool.allocate(allocated)
        if self.acc.open_batch(partition) is not None:     # another thread made one meanwhile
            self.acc.pool.deallocate(allocated)
        else:
            self._start_batch(partition, allocated)

    def owe_batch(self) -> None:
        """A batch was started for this thread's records (sender.wakeup() and its set-up, paid in the next chunk)."""
        self.owed_batches += 1

    def _start_batch(self, partition: int, allocated: int) -> None:
        self.started(self.acc.new_batch(partition, allocated))

    def _start_batches(self, parts, cap: int, i: int) -> tuple:
        """Java's append starts a batch in each partition it finds without one, record by record: the chunk's
        partitions (one each a round-robin or keyed record goes to) get theirs now, while their memory is at hand;
        the chunk stops before the first partition whose batch would have to wait for memory. Returns the chunk's
        partitions, records and grouping for fit (None where it has one partition or was cut short)."""
        if isinstance(parts, int):
            return parts, cap, None
        acc, size, groups = self.acc, self.records.size, partition_groups(parts)
        starts = sorted((int(positions[0]), p) for p, positions in groups
                        if positions is not None and acc.open_batch(p) is None)
        for first, p in starts:
            allocated = max(acc.batch_size, int(size[self.first_id + i + first]))
            if not acc.pool.try_allocate(allocated):
                return parts[:first], first, None
            self._start_batch(p, allocated)
        return parts, cap, groups

    def _reserve(self, p: int, i: int, k: int) -> None:
        """Hold room in partition p's open batch for the chunk's k records until they are appended."""
        batch = self.acc.open_batch(p)
        nbytes = self._bytes(self.first_id + i, k)
        batch.reserved += nbytes
        self.reservation = (batch, nbytes)

    def _unreserve(self) -> None:
        if self.reservation is not None:
            batch, nbytes = self.reservation
            batch.reserved -= nbytes
            self.reservation = None

    def started(self, batch: ProducerBatch) -> None:
        """A batch was started for this thread's records: its set-up is paid in the next chunk."""
        self.owe_batch()
        if len(self.acc.deques[batch.partition]) > 1:
            # The batch ahead is sendable now (RecordAccumulator.ready): a sleeping Sender's last "nothing ready"
            # no longer holds, so a response must wake it rather than be completed asleep.
            self.sender.idle = False

    def lingering(self, batch: ProducerBatch) -> None:
        """A batch got its first records: tell the Sender when linger.ms makes it sendable."""
        self.sender.wakeup_at(batch.created + self.acc.linger)

    def close(self, batch: ProducerBatch, at: float | None = None) -> None:
        """An append found no room: Java closes the batch for appends (compressing what its codec holds, unless
        the chunk that filled it did so already), wakes the Sender, and the sticky partitioner of 2.4–3.2 moves
        on."""
        batch.full_at = self.env.now if at is None else at
        if self.costs.compress_byte and batch is not self.prepaid and math.isnan(batch.drained):
            # (a drained batch was closed by the Sender) Paid with the thread's next chunk: a close found at the
            # start of a chunk, or under a deque lock another thread's appends changed.
            self.owed_compression += self.acc.compressed_on_close(batch.bytes)
        self.sender.wakeup_at(batch.full_at)
        self.partitioner.on_new_batch(batch.partition)
        self.switched = True          # the record after it goes to the new partition without aborting again

    def _chunk_cost(self, parts, i: int, k: int, closing: ProducerBatch | None, groups=None) -> float:
        """The chunk's CPU: its records' Java code and that of the batches the thread started since its last
        chunk, slowed while the JIT is cold; their bulk copies; and its compression (`groups`: the chunk's
        partition_groups, if the caller has them)."""
        cost = k * self.per_record
        if self.owed_batches:
            cost += self.owed_batches * self.costs.batch
            self.owed_batches = 0
        if self.jvm is not None:
            cost *= self.jvm.factor("worker", k)
        # (ndarray.sum without its Python wrapper)
        cost += k * float(self.copies[0]) if self.fixed else float(np.add.reduce(self.copies[i:i + k]))
        if self.costs.compress_byte:
            # Compression runs native code (zlib, lz4, zstd, snappy through JNI): the JIT does not speed it up.
            groups = partition_groups(parts) if groups is None else groups
            cost += self.costs.compress_byte * self._compressed(groups, i, k, closing)
        return cost

    def _compressed(self, groups, i: int, k: int, closing: ProducerBatch | None) -> int:
        """Bytes Java's codecs compress while the chunk's records are appended: each time a batch's bytes fill the
        codec's buffer; the rest of `closing`, the batch the chunk fills, which the next append finds full and
        closes (Java compresses it under the deque lock, before the Sender can drain it); and any close owed
        from before. Reckoned on the batches open now; under contention another thread may fill them first (a
        small error)."""
        compressed, self.owed_compression = self.owed_compression, 0
        self.prepaid = closing
        lo, acc = self.first_id + i, self.acc
        closed = closing is None
        for p, positions in groups:
            batch = acc.open_batch(p)
            count = k if positions is None else len(positions)
            if acc.fixed_size is not None:
                added = acc.fixed_size * count
            else:
                sizes = self.records.size[lo:lo + k]
                added = int(np.add.reduce(sizes if positions is None else sizes[positions]))
            before = 0 if batch is None else batch.bytes
            compressed += acc.compressed_on_append(before, added)
            if batch is closing and not closed:
                compressed += acc.compressed_on_close(before + added)
                closed = True
        if not closed:       # (the chunk stops at a batch it adds nothing to)
            compressed += acc.compressed_on_close(closing.bytes)
        return compressed

    def _append_alone(self, parts, i: int, k: int, closing: ProducerBatch | None) -> Generator:
        """One thread: nothing contends, so the chunk is one piece of CPU work; records land as it runs, evenly
        spaced (each record's own cost would shift them by less than a record's time)."""
        total = self._chunk_cost(parts, i, k, closing)
        asked = self.env.now
        if self.gil is not None and not self.gil_held:
            self.gil_held = True
            yield from wait_for(self.gil, asked)
        held = yield from self.host.acquire()
        self.core_wait_seconds += self.env.now - asked
        self._append(parts, i, k, self.env.now + total / k, total / k)
        self.core_wait_seconds += yield from self.host.spend(total)
        self.core_wait_seconds += yield from self.host.release(held, total)
        if self.gil_held and self.gil.queue and self.env.now - self.gil.queue[0].asked_at >= GIL_SWITCH:
            self._drop_gil()

    def _drop_gil(self) -> None:
        """CPython's GIL: a running thread keeps it until it blocks (sleeps, waits) or until another thread has
        waited the switch interval for it; only then does the Sender's thread get to run."""
        if self.gil_held:
            self.gil.give()
            self.gil_held = False

    def _append_shared(self, parts, i: int, k: int, closing: ProducerBatch | None) -> Generator:
        """Several threads: CPU work in parallel, then the producer-wide lock, then each partition's deque lock,
        under which the records are appended to whatever batch is open by then. Time under a lock takes a core
        of the host, as the same work does on one thread."""
        groups = partition_groups(parts)
        asked, cost = self.env.now, self._chunk_cost(parts, i, k, closing, groups)
        yield from self.host.run(cost, self.gil)
        self.core_wait_seconds += self.env.now - asked - cost
        start = self.env.now
        core_wait = yield from self.metadata_lock.hold_for(k, host=self.host)
        for p, positions in groups:
            count = k if positions is None else len(positions)

            def append(now, per_record, p=p, positions=positions):
                self._append(p, i, k, now + per_record, per_record, positions, locked=True)
            core_wait += yield from self.partition_locks[p].hold_for(count, append, self, self.host)
        self.core_wait_seconds += core_wait
        # (beyond the bare holds and the waits for a core: queueing, and what sharing costs, per waiter and per
        # transfer)
        self.lock_wait_seconds += (self.env.now - start) - core_wait - k * (self.costs.metadata_lock +
                                                                            self.costs.lock)

    def _append(self, parts, i: int, k: int, first: float, spacing: float, positions=None,
                locked: bool = False) -> None:
        """Register records i … i+k−1 (or those at `positions`) in their partitions' open batches, the first
        landing at `first` and the rest `spacing` apart. Under a deque lock (several threads) the open batch may
        have changed since the plan: records that do not fit start the next batch, whose memory is taken without
        blocking (Java would release the lock, allocate and retry)."""
        lo = self.first_id + i
        self._unreserve()
        if isinstance(parts, int) and positions is None:     # one partition, contiguous ids: a range
            self._append_range(parts, lo, k, first, spacing, locked)
            return
        if isinstance(parts, int) and len(positions) == 1:  # one record (a per-record partitioner's usual group)
            self._append_range(parts, lo + int(positions[0]), 1, first, spacing, locked)
            return
        # Records spread over partitions (a per-record partitioner): arrays of ids and append times; a partition's
        # lone record is a range of one.
        sizes = self.records.size
        fixed = self.acc.fixed_size is not None
        idx = np.arange(k) if positions is None else np.asarray(positions)
        appends = first + spacing * np.arange(len(idx))
        for p, sel in [(parts, None)] if isinstance(parts, int) else partition_groups(parts):
            ids = lo + (idx if sel is None else idx[sel])
            times = appends if sel is None else appends[sel]
            if len(ids) == 1:
                self._append_range(p, int(ids[0]), 1, float(times[0]), spacing, locked)
                continue
            self.acc.append(p, len(ids), locked,
                            lambda a, b, ids=ids: None if fixed else sizes[ids[a:b]],
                            lambda batch, a, b, ids=ids, times=times: batch.add(ids[a:b], times[a:b],
                                                                                int(sizes[ids[a:b]].sum())),
                            lambda j, times=times: float(times[j]), self)

    def _bytes(self, lo: int, k: int) -> int:
        """Bytes of records lo … lo+k−1 in their batch."""
        fixed_size = self.acc.fixed_size
        return fixed_size * k if fixed_size is not None else int(np.add.reduce(self.records.size[lo:lo + k]))

    def _append_range(self, p: int, lo: int, k: int, first: float, spacing: float, locked: bool) -> None:
        """Records lo … lo+k−1 into partition p's open batch, as one segment where the plan made room for them."""
        if not locked:     # the plan (fit) made room for all k records: one segment, no append loop
            batch = self.acc.open_or_new(p, self)
            if batch.add_range(lo, k, first, spacing, self._bytes(lo, k)):
                self.lingering(batch)
            return
        sizes, fixed = self.records.size, self.acc.fixed_size is not None
        self.acc.append(p, k, locked,
                        lambda a, b: None if fixed else sizes[lo + a:lo + b],
                        lambda batch, a, b: batch.add_range(lo + a, b - a, first + a * spacing, spacing,
                                                            self._bytes(lo + a, b - a)),
                        lambda j: first + j * spacing, self)
