"""RecordAccumulator alone, in the manner of Kafka's RecordAccumulatorTest: full batches are ready at once, a lone
batch after linger.ms, drains go round-robin over a node's partitions with one batch each up to max.request.size,
an exhausted BufferPool makes every partition ready, and batches past delivery.timeout.ms expire and free their
memory."""
from __future__ import annotations

import math

import numpy as np
import simpy

from kafkasim.model.accumulator import BATCH_HEADER_BYTES, RecordAccumulator
from kafkasim.model.buffer_pool import BufferPool

RECORD = 100                   # bytes a record takes in a batch
BATCH = 1024                   # batch.size: (1024 − 61 − 100) // 100 + 1 = 9 records
PER_BATCH = (BATCH - BATCH_HEADER_BYTES - RECORD) // RECORD + 1
LINGER = 0.010


class Appender:
    """The thread side RecordAccumulator.append reports to: batches it starts, fills and finds full."""

    def __init__(self, env: simpy.Environment):
        self.env = env
        self.started_batches, self.closed = [], []

    def started(self, batch) -> None:
        self.started_batches.append(batch)

    def lingering(self, batch) -> None:
        pass

    def close(self, batch, at: float) -> None:
        batch.full_at = at
        self.closed.append(batch)


def accumulator(partitions: int = 2, memory: int = 1 << 20, delivery_timeout: float = math.inf):
    env = simpy.Environment()
    pool = BufferPool(env, memory, max_block=1.0)
    acc = RecordAccumulator(partitions, BATCH, LINGER, pool, "none", 1.0, np.full(1000, RECORD),
                            delivery_timeout=delivery_timeout)
    return env, acc, Appender(env)


def append(acc: RecordAccumulator, thread: Appender, partition: int, first_id: int, count: int, at: float) -> None:
    acc.append(partition, count, True, lambda a, b: None,
               lambda batch, a, b: batch.add_range(first_id + a, b - a, at, 0.0, RECORD * (b - a)),
               lambda j: at, thread)


def test_a_full_batch_is_ready_at_once():
    """testFull: records past one batch's room close it and start the next; the node is ready before linger.ms."""
    _, acc, thread = accumulator(partitions=1)
    append(acc, thread, 0, 0, PER_BATCH + 1, at=0.0)
    assert [b.records for b in acc.deques[0]] == [PER_BATCH, 1] and thread.closed == [acc.deques[0][0]]
    ready, _, _ = acc.ready([0], now=0.0)
    assert ready == [0]
    batches, _ = acc.drain([0], 0, max_size=1 << 20, now=0.0)
    assert [b.records for b in batches] == [PER_BATCH]


def test_a_lone_batch_is_ready_after_linger():
    """testLinger: a batch with room waits linger.ms from its first append; ready() says when to look again."""
    _, acc, thread = accumulator(partitions=1)
    append(acc, thread, 0, 0, 1, at=0.0)
    ready, deadline, _ = acc.ready([0], now=0.0)
    assert ready == [] and deadline == LINGER
    assert acc.ready([0], now=LINGER)[0] == [0]


def test_drains_go_round_robin_over_a_nodes_partitions():
    """testPartialDrain / the drain index: one batch per partition per drain, and with max.request.size room
    for one batch, successive drains take the partitions in turn (the first batch always goes)."""
    _, acc, thread = accumulator(partitions=3)
    for p in range(3):
        append(acc, thread, p, 10 * p, 2 * PER_BATCH, at=0.0)     # two full batches each
    leaders = [0, 0, 0]
    one_batch = RECORD
    order = [acc.drain(leaders, 0, one_batch, now=0.0)[0][0].partition for _ in range(6)]
    assert order == [0, 1, 2, 0, 1, 2]
    assert all(not dq for dq in acc.deques)


def test_a_drain_takes_one_batch_from_each_partition_up_to_max_request_size():
    _, acc, thread = accumulator(partitions=3)
    for p in range(3):
        append(acc, thread, p, 100 * p, 2 * PER_BATCH, at=0.0)
    batches, _ = acc.drain([0, 0, 0], 0, max_size=1 << 20, now=0.0)
    assert sorted(b.partition for b in batches) == [0, 1, 2]
    two = BATCH_HEADER_BYTES + PER_BATCH * RECORD
    batches, _ = acc.drain([0, 0, 0], 0, max_size=2 * two, now=0.0)
    assert len(batches) == 2


def test_only_the_leaders_node_is_drained():
    """Partitions led by another node stay in their deques."""
    _, acc, thread = accumulator(partitions=2)
    append(acc, thread, 0, 0, PER_BATCH + 1, at=0.0)
    append(acc, thread, 1, 20, PER_BATCH + 1, at=0.0)
    assert acc.ready([0, 1], now=0.0)[0] == [0, 1]
    batches, _ = acc.drain([0, 1], 1, max_size=1 << 20, now=0.0)
    assert [b.partition for b in batches] == [1] and len(acc.deques[0]) == 2


def test_an_exhausted_pool_makes_every_partition_ready():
    """While a thread waits for buffer memory, every partition with a batch is ready, linger or not."""
    env, acc, thread = accumulator(partitions=2, memory=BATCH)
    assert acc.pool.try_allocate(BATCH)
    append(acc, thread, 0, 0, 1, at=0.0)
    assert acc.ready([0, 1], now=0.0)[0] == []

    def wait_for_memory():
        yield from acc.pool.allocate(BATCH)
    env.process(wait_for_memory())
    env.run(until=1e-6)
    assert acc.pool.exhausted and acc.ready([0, 1], now=env.now)[0] == [0]


def test_batches_past_the_delivery_timeout_expire_and_free_their_memory():
    """testExpiredBatches: a head batch older than delivery.timeout.ms fails, its memory goes back to the pool."""
    _, acc, thread = accumulator(partitions=1, memory=4 * BATCH, delivery_timeout=0.5)
    acc.pool.force_allocate(BATCH)
    append(acc, thread, 0, 0, 1, at=0.0)
    expired = []
    acc.on_expired = lambda batch, now: expired.append((batch.records, now))
    free = acc.pool.available
    assert acc.ready([0], now=0.4)[0] == [0] and not expired     # past linger, not past the timeout
    ready, _, _ = acc.ready([0], now=0.6)
    assert ready == [] and expired == [(1, 0.6)] and not acc.deques[0]
    assert acc.pool.available == free + BATCH


def test_the_pool_serves_waiters_in_order_and_fails_those_past_max_block_ms():
    """BufferPoolTest's blocking cases: waiters get memory in arrival order as it is freed; one still waiting after
    max.block.ms fails (BufferExhaustedException) and the next is served; one timer serves every wait (a granted
    wait leaves nothing behind in the event queue)."""
    from kafkasim.model.buffer_pool import BufferExhausted
    env = simpy.Environment()
    pool = BufferPool(env, total=2 * BATCH, max_block=1.0)
    assert pool.try_allocate(2 * BATCH)
    got = {}

    def waiter(name, size, at):
        yield env.timeout(at)
        try:
            yield from pool.allocate(size)
            got[name] = env.now
        except BufferExhausted:
            got[name] = -env.now
    for name, size, at in (("a", BATCH, 0.0), ("big", 3 * BATCH, 0.1), ("c", BATCH, 0.2)):
        env.process(waiter(name, size, at))

    def free(at, size):
        yield env.timeout(at)
        pool.deallocate(size)
    env.process(free(0.5, BATCH))      # a gets it; big waits at the head, c behind it
    env.process(free(0.6, BATCH))      # not enough for big: c still waits (FIFO)
    env.run(until=1.15)
    assert got == {"a": 0.5, "big": -1.1, "c": 1.1}
    assert not pool.waiters and not pool.watching and math.isclose(pool.wait_seconds, 0.5 + 1.0 + 0.9)
    assert not [event for *_, event in env._queue if isinstance(event, simpy.Timeout)]   # (c's 1.2 not pending)
