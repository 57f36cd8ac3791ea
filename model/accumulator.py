"""RecordAccumulator, ProducerBatch and the CompressionRatioEstimator (kafka-internals.md §3, §5).

Records are appended in chunks (see worker.py): a chunk registers its records in a batch together with the times
at which each append completes, which may lie a little in the future. A batch's contents at time t are the records
appended by t; when the Sender drains a batch while a chunk is still appending to it, the records not yet appended
move to a batch of their own, sent next, as Java's next append would have started a new batch for them.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from kafkasim.model.buffer_pool import BufferPool

# DefaultRecordBatch.RECORD_BATCH_OVERHEAD (v2 magic): the batch header.
BATCH_HEADER_BYTES = 61
# MemoryRecordsBuilder's COMPRESSION_RATE_ESTIMATION_FACTOR: estimates are padded by 5 %.
ESTIMATION_FACTOR = 1.05


def varint_size(n: np.ndarray | int) -> np.ndarray | int:
    """Bytes of a zig-zag varint for non-negative sizes (1 byte up to 63, 2 up to 8191, ...)."""
    n = np.asarray(n)
    zz = n * 2
    return 1 + (zz >= 128) + (zz >= 1 << 14) + (zz >= 1 << 21) + (zz >= 1 << 28)


def record_bytes(value_size: np.ndarray, key_size: int) -> np.ndarray:
    """Size of each record inside a v2 batch: attributes, timestamp and offset deltas (taken as 2 and 1 bytes),
    key and value with their varint lengths, an empty header count and the leading varint length."""
    key_len = varint_size(key_size) if key_size else 1          # null key: varint(-1) is one byte
    body = 1 + 2 + 1 + key_len + key_size + varint_size(value_size) + value_size + 1
    return (body + varint_size(body)).astype(np.int64)


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
    """One partition's batch. Holds record ids (into the run's record arrays) with their append times."""

    __slots__ = ("partition", "created", "ids", "appends", "bytes", "records", "last_append", "full_at",
                 "allocated", "drained", "size_on_wire", "compression_ratio", "offset")

    def __init__(self, partition: int, allocated: int):
        self.partition = partition
        self.created = np.inf          # the first append's time
        self.ids: list[np.ndarray] = []
        self.appends: list[np.ndarray] = []
        self.bytes = 0                 # uncompressed record bytes
        self.records = 0
        self.last_append = -np.inf
        self.full_at = np.inf          # when an append found no room (Java closes the batch for appends)
        self.allocated = allocated     # bytes held in the BufferPool until the response
        self.drained = np.nan
        self.size_on_wire = 0
        self.compression_ratio = 1.0
        self.offset = 0                # end offset in the leader's log, in batches (replication.py)

    def add(self, ids: np.ndarray, appends: np.ndarray, nbytes: int) -> None:
        self.ids.append(ids)
        self.appends.append(appends)
        self.bytes += nbytes
        self.records += len(ids)
        self.created = min(self.created, float(appends[0]))
        self.last_append = max(self.last_append, float(appends[-1]))

    def estimated_bytes(self, ratio: float) -> float:
        """MemoryRecordsBuilder.estimatedBytesWritten(): header + uncompressed × estimated ratio × 1.05."""
        if ratio == 1.0:
            return BATCH_HEADER_BYTES + self.bytes
        return BATCH_HEADER_BYTES + self.bytes * ratio * ESTIMATION_FACTOR

    def visible(self, now: float) -> bool:
        return self.created <= now

    def is_full(self, now: float) -> bool:
        return self.full_at <= now

    def split_after(self, now: float, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        """Keep the records appended by `now`; return the ids and append times of the rest."""
        if self.last_append <= now:
            return None
        ids, appends = np.concatenate(self.ids), np.concatenate(self.appends)
        keep = appends <= now
        self.ids, self.appends = [ids[keep]], [appends[keep]]
        self.records = int(keep.sum())
        self.bytes = int(sizes[self.ids[0]].sum())
        self.last_append = float(self.appends[0][-1]) if self.records else -np.inf
        self.full_at = np.inf if self.full_at > now else self.full_at
        return ids[~keep], appends[~keep]

    def record_ids(self) -> np.ndarray:
        return self.ids[0] if len(self.ids) == 1 else np.concatenate(self.ids)


class RecordAccumulator:
    """Per-partition deques of batches, the BufferPool, and the compression-ratio estimator."""

    def __init__(self, partitions: int, batch_size: int, linger: float, pool: BufferPool, codec: str,
                 compression_ratio: float, record_sizes: np.ndarray):
        self.deques: list[deque[ProducerBatch]] = [deque() for _ in range(partitions)]
        self.batch_size = batch_size
        self.linger = linger
        self.pool = pool
        self.codec = codec
        self.true_ratio = compression_ratio      # what the codec really achieves on this payload
        self.estimator = CompressionRatioEstimator()
        self.sizes = record_sizes                # bytes of each record inside a batch, by record id
        self.muted: set[int] = set()

    # --- the worker side
    def open_batch(self, partition: int) -> ProducerBatch | None:
        """The tail batch if it can take more records."""
        dq = self.deques[partition]
        if dq and dq[-1].full_at == np.inf and np.isnan(dq[-1].drained):
            return dq[-1]
        return None

    def room(self, batch: ProducerBatch, record_sizes: np.ndarray) -> int:
        """How many of these records fit in the batch (the first record into an empty batch always fits)."""
        ratio = self.estimator.estimate if self.codec != "none" else 1.0
        factor = ratio * ESTIMATION_FACTOR if self.codec != "none" else 1.0
        # Record k fits if header + (bytes + sizes[:k]) × factor + sizes[k] ≤ batch.size.
        before = batch.bytes + np.concatenate(([0], np.cumsum(record_sizes[:-1])))
        fits = BATCH_HEADER_BYTES + before * factor + record_sizes <= self.batch_size
        n = len(record_sizes) if fits.all() else int(np.argmin(fits))
        if batch.records == 0 and n == 0:
            n = 1
        return n

    def new_batch(self, partition: int, allocated: int) -> ProducerBatch:
        batch = ProducerBatch(partition, allocated)
        self.deques[partition].append(batch)
        return batch

    # --- the sender side
    def close(self, batch: ProducerBatch, now: float) -> None:
        """Drain-time close: records not yet appended move to a batch of their own at the head of the deque (ahead
        of any newer batch, keeping the partition's order); the batch is compressed."""
        full_at = batch.full_at
        tail = batch.split_after(now, self.sizes)
        if tail is not None:
            # The worker's next append would allocate a new batch here. If buffer.memory is exhausted we let
            # the pool run over briefly instead of blocking the worker retroactively (a rare, small error).
            self.pool.force_allocate(batch.allocated)
            moved = ProducerBatch(batch.partition, batch.allocated)
            moved.add(tail[0], tail[1], int(self.sizes[tail[0]].sum()))
            moved.full_at = full_at           # the rest of a full batch is full too
            self.deques[batch.partition].appendleft(moved)
        batch.drained = now
        if self.codec == "none":
            batch.size_on_wire = BATCH_HEADER_BYTES + batch.bytes
        else:
            batch.compression_ratio = self.true_ratio
            batch.size_on_wire = int(BATCH_HEADER_BYTES + batch.bytes * self.true_ratio)
            self.estimator.update(self.true_ratio)
