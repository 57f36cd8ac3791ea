"""RecordAccumulator, ProducerBatch and the CompressionRatioEstimator (docs/kafka-internals.md §3, §5).

Records are appended in chunks (see worker.py): a chunk registers its records in a batch together with the times
at which each append completes, which may lie a little in the future. A batch's contents at time t are the records
appended by t; when the Sender drains a batch while a chunk is still appending to it, the records not yet appended
move to a batch of their own, sent next, as Java's next append would have started a new batch for them.
"""
from __future__ import annotations

import math
from collections import deque

import numpy as np

from kafkasim.model.buffer_pool import BufferPool
from kafkasim.model.records import ArraySegment, RangeSegment

# DefaultRecordBatch.RECORD_BATCH_OVERHEAD (v2 magic): the batch header.
BATCH_HEADER_BYTES = 61
# MemoryRecordsBuilder's COMPRESSION_RATE_ESTIMATION_FACTOR: estimates are padded by 5 %.
ESTIMATION_FACTOR = 1.05
# The bytes Java's compressing stream holds before it compresses them (docs/kafka-internals.md §3): gzip's 16 KiB
# BufferedOutputStream (deflate then keeps only its small lookahead), snappy's and lz4's blocks, and zstd's own
# 128 KiB block behind its 16 KiB buffer. The worker pays for a buffer each time a batch's bytes fill one; whoever
# closes the batch compresses the rest.
CODEC_BUFFER_BYTES = {"gzip": 16 << 10, "snappy": 32 << 10, "lz4": 64 << 10, "zstd": 128 << 10}
SMALL_CHUNK = 64          # partition_groups groups chunks up to this long in Python, longer ones with numpy
GROUPED_KEPT = 1024       # ... and keeps that many groupings of longer chunks (read only: their arrays are shared)
_GROUPED: dict[tuple[str, bytes], list] = {}
# Append times come from float arithmetic; a record "appended" this close after a drain was appended by it.
TIME_EPSILON = 1e-12


def varint_size(n: np.ndarray | int) -> np.ndarray | int:
    """Bytes of a zig-zag varint for non-negative sizes (1 byte up to 63, 2 up to 8191, ...)."""
    n = np.asarray(n)
    zz = n * 2
    return 1 + (zz >= 128) + (zz >= 1 << 14) + (zz >= 1 << 21) + (zz >= 1 << 28)


def record_bytes(value_size: np.ndarray, key_size: int) -> np.ndarray:
    """Size of each record inside a v2 batch: attributes, timestamp and offset deltas (taken as 2 and 1 bytes),
    key and value with their varint lengths, an empty header count and the leading varint length. Worked out once
    per size between the smallest and the largest, then looked up."""
    low, high = int(value_size.min()), int(value_size.max())
    sizes = np.arange(low, high + 1)
    key_len = varint_size(key_size) if key_size else 1          # null key: varint(-1) is one byte
    body = 1 + 2 + 1 + key_len + key_size + varint_size(sizes) + sizes + 1
    table = (body + varint_size(body)).astype(np.int64)
    return np.broadcast_to(table[0], len(value_size)) if low == high else table[value_size - low]


class CompressionRatioEstimator:
    """Per topic and codec: starts at 1.0, jumps up to what it sees, creeps down by 0.005 (Java's estimator)."""

    def __init__(self) -> None:
        self.estimate = 1.0

    def update(self, observed: float) -> None:
        if observed > self.estimate:
            self.estimate = max(self.estimate + 0.05, observed)
        else:
            self.estimate = max(self.estimate - 0.005, observed)


class ProducerBatch:
    """One partition's batch. Its records are *segments*, one per chunk that appended to it: a RangeSegment of
    record ids appended at even spacing — the common case — or an ArraySegment, when a chunk spread its records
    over several partitions."""

    __slots__ = ("partition", "created", "segments", "bytes", "records", "last_append", "full_at",
                 "allocated", "drained", "size_on_wire", "compression_ratio", "offset", "reserved")

    def __init__(self, partition: int, allocated: int):
        self.partition = partition
        self.created = np.inf          # the first append's time
        self.segments: list[RangeSegment | ArraySegment] = []
        self.bytes = 0                 # uncompressed record bytes
        self.records = 0
        self.last_append = -np.inf
        self.full_at = np.inf          # when an append found no room (Java closes the batch for appends)
        self.allocated = allocated     # bytes held in the BufferPool until the response
        self.drained = np.nan
        self.size_on_wire = 0
        self.compression_ratio = 1.0
        self.offset = 0                # end offset in the leader's log, in batches (replication.py)
        self.reserved = 0              # bytes other threads' planned chunks will append (see RecordAccumulator.fit)

    def add_range(self, first_id: int, count: int, first_append: float, spacing: float, nbytes: int) -> bool:
        """Records first_id … first_id + count − 1; True if they are the batch's first."""
        self.segments.append(RangeSegment(first_id, count, first_append, spacing))
        return self._grew(count, nbytes, first_append, first_append + (count - 1) * spacing)

    def add(self, ids: np.ndarray, appends: np.ndarray, nbytes: int) -> bool:
        """Records `ids`, appended at `appends`; True if they are the batch's first."""
        self.segments.append(ArraySegment(ids, appends))
        return self._grew(len(ids), nbytes, float(appends[0]), float(appends[-1]))

    def _grew(self, count: int, nbytes: int, first: float, last: float) -> bool:
        self.bytes += nbytes
        self.records += count
        if first < self.created:
            self.created = first
        if last > self.last_append:
            self.last_append = last
        return self.records == count

    def estimated_bytes(self, ratio: float) -> float:
        """MemoryRecordsBuilder.estimatedBytesWritten(): header + uncompressed × estimated ratio × 1.05."""
        if ratio == 1.0:
            return BATCH_HEADER_BYTES + self.bytes
        return BATCH_HEADER_BYTES + self.bytes * ratio * ESTIMATION_FACTOR

    def split_after(self, now: float, sizes: np.ndarray) -> list[RangeSegment | ArraySegment] | None:
        """Keep the records appended by `now`; return the segments of the rest."""
        now += TIME_EPSILON
        if self.last_append <= now:
            return None
        keep, rest = [], []
        for seg in self.segments:
            if type(seg) is RangeSegment:
                first_id, count, first, spacing = seg
                if spacing <= 0:
                    n = count if first <= now else 0
                else:
                    n = min(count, max(0, int((now - first) // spacing) + 1))
                if n:
                    keep.append(RangeSegment(first_id, n, first, spacing))
                if n < count:
                    rest.append(RangeSegment(first_id + n, count - n, first + n * spacing, spacing))
            else:
                ids, appends = seg
                mask = appends <= now
                if mask.any():
                    keep.append(ArraySegment(ids[mask], appends[mask]))
                if not mask.all():
                    rest.append(ArraySegment(ids[~mask], appends[~mask]))
        self.segments = []
        self.bytes = self.records = 0
        self.created, self.last_append = np.inf, -np.inf
        for seg in keep:
            self.restore(seg, sizes)
        if self.full_at > now:
            self.full_at = np.inf
        return rest

    def restore(self, seg: RangeSegment | ArraySegment, sizes: np.ndarray) -> None:
        """Add a segment taken from another batch."""
        if type(seg) is RangeSegment:
            first_id, count, first, spacing = seg
            self.add_range(first_id, count, first, spacing, int(sizes[first_id:first_id + count].sum()))
        else:
            self.add(seg.ids, seg.appends, int(sizes[seg.ids].sum()))

    def record_ids(self) -> np.ndarray:
        parts = [np.arange(s.first_id, s.first_id + s.count) if type(s) is RangeSegment else s.ids
                 for s in self.segments]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)


class RecordAccumulator:
    """Per-partition deques of batches, the BufferPool, and the compression-ratio estimator. The worker side plans
    and makes appends (fit, append, open_or_new); the Sender's finds ready nodes, drains and expires batches."""

    def __init__(self, partitions: int, batch_size: int, linger: float, pool: BufferPool, codec: str,
                 compression_ratio: float, record_sizes: np.ndarray, repeat_ratio: float | None = None,
                 streams: bool = True, delivery_timeout: float = math.inf):
        self.deques: list[deque[ProducerBatch]] = [deque() for _ in range(partitions)]
        self.batch_size = batch_size
        self.linger = linger
        self.pool = pool
        self.codec = codec
        # Java compresses as records are appended (streams); kafka-python compresses the whole batch at drain.
        self.streams = streams
        self.codec_buffer = CODEC_BUFFER_BYTES.get(codec, 0) if streams else 0
        self.true_ratio = compression_ratio      # what the codec really achieves on this payload
        self.repeat_ratio = repeat_ratio         # on records repeating the batch's first value, if they all do
        self.estimator = CompressionRatioEstimator()
        self.sizes = record_sizes                # bytes of each record inside a batch, by record id
        # All records the same size (a broadcast view is, without looking): room() is plain arithmetic.
        one_size = len(record_sizes) and (record_sizes.strides == (0,) or (record_sizes == record_sizes[0]).all())
        self.fixed_size = int(record_sizes[0]) if one_size else None
        self.muted: set[int] = set()
        self.delivery_timeout = delivery_timeout     # delivery.timeout.ms, in seconds
        self.drain_index: dict[int, int] = {}        # per node: the partition its next drain starts from
        # per node: when the Sender last found it with data to send, and last could send it (NodeLatencyStats);
        # None until a partitioner asks (watch_nodes), as Kafka keeps them only with an availability timeout
        self.node_ready: dict[int, float] | None = None
        self.node_drain: dict[int, float] = {}
        self._node_partitions: dict[int, list[int]] | None = None
        # Called with each batch expired by ready() before its memory is freed (the Sender fails its records).
        self.on_expired = lambda batch, now: None
        # Where the records a drain split off go: their partition (None), or the partitioner's choice for records
        # that find their batch drained (the sticky partitioner of 2.4–3.2 moves on then, KIP-480).
        self.redirect = None
        # Called with the first record of each batch a drain-time split starts: that record's thread would have
        # started the batch (and pays for it, worker.batch_us).
        self.on_split = lambda record_id: None

    # --- the worker side
    def open_batch(self, partition: int) -> ProducerBatch | None:
        """The tail batch if it can take more records."""
        dq = self.deques[partition]
        if dq and dq[-1].full_at == math.inf and math.isnan(dq[-1].drained):
            return dq[-1]
        return None

    def room(self, batch: ProducerBatch, n: int, record_sizes: np.ndarray | None) -> int:
        """How many of n records fit in the batch (the first record into an empty batch always fits).
        record_sizes None means all records are `fixed_size` bytes."""
        factor = self._estimate()
        held = batch.bytes + batch.reserved
        # Record k fits if header + (bytes + sizes[:k]) × factor + sizes[k] ≤ batch.size.
        if record_sizes is None:
            size = self.fixed_size
            spare = self.batch_size - BATCH_HEADER_BYTES - size - held * factor
            fit = int(spare // (size * factor)) + 1 if spare >= 0 else 0
        else:
            before = held + np.concatenate(([0], np.cumsum(record_sizes[:n - 1])))
            fits = BATCH_HEADER_BYTES + before * factor + record_sizes[:n] <= self.batch_size
            fit = n if fits.all() else int(np.argmin(fits))
        fit = min(fit, n)
        return 1 if fit == 0 and held == 0 else fit

    def batch_records(self, record_bytes: float) -> int:
        """How many records of `record_bytes` an empty batch takes at the current compression estimate."""
        return max(1, int((self.batch_size - BATCH_HEADER_BYTES) // (record_bytes * self._estimate())))

    def _estimate(self) -> float:
        """Compressed ÷ uncompressed size as MemoryRecordsBuilder estimates it (1 uncompressed)."""
        return self.estimator.estimate * ESTIMATION_FACTOR if self.codec != "none" else 1.0

    def new_batch(self, partition: int, allocated: int) -> ProducerBatch:
        batch = ProducerBatch(partition, allocated)
        self.deques[partition].append(batch)
        return batch

    def fit(self, parts, n: int, sizes: np.ndarray | None, groups=None) -> tuple[int, ProducerBatch | None]:
        """How many of a chunk's n records (`parts`: their partition, or each one's) fit in their partitions' open
        batches, and the batch the next record would find full (None if the chunk ends at a partition that has no
        batch yet). With several threads this is a plan: by the time the deque lock is held another thread may
        have filled the batch. `groups`: the chunk's partition_groups, if the caller has them."""
        if isinstance(parts, int):            # (the common case, without partition_groups)
            batch = self.open_batch(parts)
            room = 0 if batch is None else self.room(batch, n, sizes)
            return (room, batch) if room < n else (n, None)
        k, full = n, None
        for p, positions in partition_groups(parts) if groups is None else groups:
            batch = self.open_batch(p)
            mine = n if positions is None else len(positions)
            theirs = None if sizes is None else (sizes if positions is None else sizes[positions])
            room = 0 if batch is None else self.room(batch, mine, theirs)
            if room < mine:
                stop = room if positions is None else int(positions[room])
                if stop < k:
                    k, full = stop, batch
        return k, full

    def append(self, p: int, count: int, locked: bool, sizes_of, add, append_time, thread) -> None:
        """Put `count` records into partition p's open batch (RecordAccumulator.append). Without contention the
        plan (fit) guarantees the room; under a deque lock the open batch may have changed since the plan, so
        records that do not fit close it and start the next one. `thread` hears of each batch started (started),
        given its first records (lingering) and found full (close); `add(batch, a, b)` adds records a … b − 1."""
        done = 0
        while done < count:
            batch = self.open_or_new(p, thread)
            room = count - done
            if locked:
                room = self.room(batch, room, sizes_of(done, count))
            if room and add(batch, done, done + room):
                thread.lingering(batch)
            if done + room < count:
                thread.close(batch, at=append_time(done + room - 1) if room else thread.env.now)
            done += room

    def open_or_new(self, p: int, thread) -> ProducerBatch:
        """Partition p's open batch, or a new one. Where the Sender drained (or another thread filled) it while
        the thread waited for a core or a lock, Java's append allocates here; the model does not block
        retroactively."""
        batch = self.open_batch(p)
        if batch is None:
            self.pool.force_allocate(self.batch_size)
            batch = self.new_batch(p, self.batch_size)
            thread.started(batch)
        return batch

    def compressed_on_append(self, before: int, added: int) -> int:
        """Bytes Java's codec compresses as `added` bytes join a batch holding `before`: a whole buffer each time
        the batch's bytes fill one."""
        block = self.codec_buffer
        return block * ((before + added) // block - before // block) if block else 0

    def compressed_on_close(self, nbytes: int) -> int:
        """Bytes compressed when a batch of `nbytes` is closed: the rest of Java's codec buffer, or (kafka-python)
        the whole batch."""
        if self.codec == "none":
            return 0
        return nbytes % self.codec_buffer if self.streams else nbytes

    # --- the sender side
    def watch_nodes(self) -> None:
        """Keep the nodes' latency stats from now on (partitioner.availability.timeout.ms)."""
        self.node_ready = {}

    def update_node_latency(self, node: int, now: float, can_drain: bool) -> None:
        """The Sender found `node` with data ready at `now`, and could send to it or not (its connection full)."""
        self.node_ready[node] = now
        if can_drain or node not in self.node_drain:
            self.node_drain[node] = now

    def node_waiting(self, node: int) -> float:
        """How long `node` has had data ready that could not be sent to it."""
        return self.node_ready.get(node, 0.0) - self.node_drain.get(node, 0.0)

    def ready(self, leaders: list[int], now: float) -> tuple[list[int], float, float]:
        """RecordAccumulator.ready: the nodes with a sendable batch, when to look again otherwise, and the oldest
        head batch's creation time. Head batches older than delivery.timeout.ms are expired on the way."""
        ready, deadline, oldest = [], math.inf, now
        linger, muted, exhausted = self.linger, self.muted, self.pool.exhausted
        delivery_timeout = self.delivery_timeout
        for p, dq in enumerate(self.deques):
            if not dq or (muted and p in muted):
                continue
            head = dq[0]
            created = head.created
            if created < oldest:
                oldest = created
            if created > now:                          # its first append has not happened yet
                if created + linger < deadline:
                    deadline = created + linger
                continue
            if now - created > delivery_timeout:
                self._expire(p, now)
                if not dq:
                    continue
                head = dq[0]                           # what is left is judged like any other batch
                created = head.created
                if created > now:
                    deadline = min(deadline, created + linger)
                    continue
            leader = leaders[p]
            if leader in ready:
                continue
            due = created + linger
            if len(dq) > 1 or head.full_at <= now or due <= now or exhausted:
                ready.append(leader)
            else:                                      # (comparisons rather than min(), twice a batch)
                if head.full_at < due:
                    due = head.full_at
                if due < deadline:
                    deadline = due
        ready.sort()
        return ready, deadline, oldest     # (heads made later are younger than `now`)

    def drain(self, leaders: list[int], node: int, max_size: int, now: float) -> tuple[list[ProducerBatch], int]:
        """RecordAccumulator.drainBatchesForOneNode: round-robin from the node's drain index, at most one batch
        per partition, up to max.request.size (the first batch always goes). Also returns the bytes the Sender
        compresses closing them."""
        if self._node_partitions is None:
            self._node_partitions = {}
            for p, b in enumerate(leaders):
                self._node_partitions.setdefault(b, []).append(p)
        deques, muted = self.deques, self.muted
        parts = self._node_partitions[node]
        count = len(parts)
        start = self.drain_index.get(node, 0)
        batches, size, compressed = [], 0, 0
        for step in range(count):
            p = parts[(start + step) % count]
            dq = deques[p]
            if not dq or p in muted or dq[0].created > now:
                continue
            head = dq[0]
            if batches and size + head.estimated_bytes(self.estimator.estimate) > max_size:
                self.drain_index[node] = (start + step) % count
                return batches, compressed
            dq.popleft()
            compressed += self.close(head, now)
            batches.append(head)
            size += head.size_on_wire
        self.drain_index[node] = (start + 1) % count
        return batches, compressed

    def _expire(self, partition: int, now: float) -> None:
        """Batches older than delivery.timeout.ms fail with TimeoutException (their records count as errors)."""
        dq = self.deques[partition]
        while dq and dq[0].created <= now and now - dq[0].created > self.delivery_timeout and dq[0].last_append <= now:
            batch = dq.popleft()
            self.on_expired(batch, now)
            self.pool.deallocate(batch.allocated)

    def close(self, batch: ProducerBatch, now: float) -> int:
        """Drain-time close: records not yet appended move to a batch of their own at the head of the deque (ahead
        of any newer batch, keeping the partition's order), or, where the partitioner moves on at a new batch, to
        the partition it moves to, behind its full batches and ahead of its open one; the batch is compressed.
        Returns the bytes the Sender compresses closing it: none if a Java worker found it full and closed it
        already."""
        full_at = batch.full_at
        closed_by_worker = self.streams and full_at <= now
        tail = batch.split_after(now, self.sizes)
        if tail:
            # The worker's next append would allocate a new batch here. If buffer.memory is exhausted we let
            # the pool run over briefly instead of blocking the worker retroactively (a rare, small error).
            self.pool.force_allocate(batch.allocated)
            target = batch.partition if self.redirect is None else self.redirect(batch.partition)
            moved = ProducerBatch(target, batch.allocated)
            for seg in tail:
                moved.restore(seg, self.sizes)
            moved.full_at = full_at           # the rest of a full batch is full too
            dq = self.deques[target]
            if target == batch.partition:
                dq.appendleft(moved)
            elif self.open_batch(target) is not None:     # (ahead of the batch appends go to, which stays last)
                dq.insert(len(dq) - 1, moved)
            else:
                dq.append(moved)
            first = tail[0]
            self.on_split(first.first_id if type(first) is RangeSegment else int(first.ids[0]))
        batch.drained = now
        if self.codec == "none":
            batch.size_on_wire = BATCH_HEADER_BYTES + batch.bytes
        else:
            ratio = self.true_ratio
            if self.repeat_ratio is not None:
                # Every record holds the same value (perf-test before 3.0, KAFKA-12611): only the first is
                # compressed in full, the others become back-references to it.
                ratio = (ratio + (batch.records - 1) * self.repeat_ratio) / max(1, batch.records)
            batch.compression_ratio = ratio
            batch.size_on_wire = int(BATCH_HEADER_BYTES + batch.bytes * ratio)
            self.estimator.update(ratio)
        return 0 if closed_by_worker else self.compressed_on_close(batch.bytes)


def partition_groups(parts) -> list[tuple[int, np.ndarray | None]]:
    """The chunk's records grouped by partition, in partition order: (partition, positions), positions None for all
    of them."""
    if isinstance(parts, int):
        return [(parts, None)]
    if len(parts) <= SMALL_CHUNK:     # (a dict of lists: quicker than a numpy pass per partition)
        groups: dict[int, list[int]] = {}
        for position, p in enumerate(parts.tolist()):
            groups.setdefault(p, []).append(position)
        if len(groups) == 1:
            return [(int(parts[0]), None)]
        return [(p, np.array(groups[p])) for p in sorted(groups)]
    # A chunk is grouped twice (planned, then appended), and a round-robin's chunks repeat: each grouping is kept.
    key = (parts.dtype.str, parts.tobytes())
    groups = _GROUPED.get(key)
    if groups is None:
        if len(_GROUPED) >= GROUPED_KEPT:
            _GROUPED.clear()
        groups = _GROUPED[key] = _grouped(parts)
    return groups


def _grouped(parts: np.ndarray) -> list[tuple[int, np.ndarray | None]]:
    if (parts == parts[0]).all():
        return [(int(parts[0]), None)]
    order = np.argsort(parts, kind="stable")           # (one pass: each partition's positions, ascending)
    ordered = parts[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    return [(int(ordered[a]), positions) for a, positions in zip((0, *cuts.tolist()), np.split(order, cuts))]
