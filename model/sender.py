"""The Sender thread: ready, drain, send, and complete (docs/kafka-internals.md §5).

One loop, as Sender.runOnce: handle the responses that arrived (completing batches and running the user callbacks
on this thread), find ready partitions and nodes, drain at most one batch per partition into one request per node
up to max.request.size, and send. With nothing to send it sleeps until a response arrives, a worker wakes it, a
linger.ms deadline passes, or a request finishes writing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.accumulator import ProducerBatch, RecordAccumulator
from kafkasim.model.host import Host, Slots
from kafkasim.model.network import (Connection, PARTITION_HEADER_BYTES, ProduceRequest, REQUEST_HEADER_BYTES)
from kafkasim.model.records import Records

# Complete a response in its callback where the pass it would wake the Sender for could do nothing else
# (Sender._complete_asleep); tests turn it off to check that both ways give the same results.
COMPLETE_ASLEEP = True


@dataclass(frozen=True)
class SenderCosts:
    request: float           # seconds of Sender CPU per request (build and write, read the response)
    batch: float             # per batch drained and completed
    record: float            # per record completed (the callback)
    compress_byte: float     # per byte compressed closing a batch at drain (all of it in kafka-python, the rest
                             # of the codec's buffer in Java), else 0
    wire_byte: float = 0.0   # per byte of the request written to the socket


class Sender:
    STEADY_COUNTERS = ("busy_seconds",)

    def __init__(self, env: simpy.Environment, accumulator: RecordAccumulator, records: Records,
                 leaders: list[int], host: Host, gil: Slots | None, costs: SenderCosts, acks: str,
                 max_request_size: int, mute: bool, jvm=None):
        self.env = env
        self.acc = accumulator
        self.records = records
        self.leaders = leaders                      # partition -> broker id (the metadata)
        self.connections: dict[int, Connection] = {}
        self.host = host
        self.gil = gil
        self.costs = costs
        self.jvm = jvm                                 # the producer's Jvm: its code costs more until compiled
        self.acks = acks
        self.max_request_size = max_request_size
        self.mute = mute                               # guaranteeMessageOrder: one batch in flight a partition
        accumulator.on_expired = lambda batch, now: records.fail(batch.record_ids(), now)
        self.responses: list[ProduceRequest] = []
        self.requests: list[ProduceRequest] = []       # every request sent, for the metrics
        self.batches: list[ProducerBatch] = []         # every batch drained, for the metrics
        self.busy_seconds = 0.0
        self.wake = env.event()
        self.waiting_until = -np.inf                   # > now while the Sender sleeps
        self.alarm_at = np.inf                         # the earliest pending alarm
        self.free_at = 0.0                             # the Sender thread is busy until then
        self.idle = False                              # its last pass found no node ready
        self.oldest_head = 0.0                         # ... nor a head batch older than this
        self.process = env.process(self.run())

    # --- waking up
    def wakeup(self) -> None:
        if not self.wake.triggered:
            self.wake.succeed()

    def wakeup_at(self, when: float) -> None:
        """A batch becomes visible or full at `when`: make sure a sleeping Sender looks at it then."""
        if when <= self.env.now:
            self.wakeup()
        elif when < self.waiting_until:
            self._alarm(when)

    def _alarm(self, when: float) -> None:
        """Wake the Sender at `when`. One alarm serves every deadline at or after it (the Sender looks again
        anyway), so most sleeps cost two events: the alarm and the wake."""
        if when >= self.alarm_at and self.alarm_at >= self.env.now:
            return
        self.alarm_at = when

        def ring(_):
            if self.alarm_at == when:
                self.alarm_at = np.inf
            self.wakeup()
        self.env.timeout(when - self.env.now).callbacks.append(ring)

    def on_response(self, request: ProduceRequest) -> None:
        if not self._complete_asleep(request):
            self.responses.append(request)
            self.wakeup()

    def _complete_asleep(self, request: ProduceRequest) -> bool:
        """The pass a response wakes the Sender for, done here when all it could do is complete the response:
        the Sender sleeps with no node ready and nothing else due now (no other event at this instant, no batch
        to expire), owes no earlier work, has its core to itself, and the response unmutes no partition and no
        worker waits for memory. The same completion, counters and later events as waking the thread, whose pass
        would find nothing to send and sleep on (saves its wake-up and that pass)."""
        env = self.env
        now = env.now
        if not (COMPLETE_ASLEEP and self.idle and self.waiting_until > now >= self.free_at and not self.wake.triggered
                and env.peek() > now and self.host.uncontended(self.gil)
                and not self.acc.pool.waiters and now - self.oldest_head <= self.acc.delivery_timeout):
            return False
        muted = self.acc.muted
        if muted and any(batch.partition in muted for batch in request.batches):
            return False
        self._owe(self._complete([request]), now)
        return True

    def _owe(self, busy: float, now: float) -> None:
        """Nothing else wants this core: owe the work instead of waiting it out; the next pass starts when it
        is done (saves an event per response)."""
        self.busy_seconds += busy
        self.host.busy_seconds += busy
        self.free_at = now + busy

    # --- the loop
    def run(self) -> Generator:
        env, costs, connections = self.env, self.costs, self.connections
        while True:
            busy = 0.0                    # CPU this pass owes: completing responses, building requests
            if self.responses:
                responses, self.responses = self.responses, []
                busy = self._complete(responses)
            now = env.now
            ready, deadline, self.oldest_head = self.acc.ready(self.leaders, now)
            drained, compressing = [], 0        # (compressing: bytes the drained batches compress closing)
            for node in ready:
                conn = connections[node]
                can_drain = conn.can_send_more(now)
                if self.acc.node_ready is not None:
                    self.acc.update_node_latency(node, now, can_drain)
                if can_drain:
                    batches, compressed = self.acc.drain(self.leaders, node, self.max_request_size, now)
                    compressing += compressed
                    if self.mute:
                        self.acc.muted.update(batch.partition for batch in batches)
                    if batches:
                        drained.append((conn, batches))
            if drained:
                nbatches = wire = 0
                for _, batches in drained:
                    nbatches += len(batches)
                    for batch in batches:
                        wire += batch.size_on_wire
                work, batch_work = costs.request * len(drained), costs.batch * nbatches
                if self.jvm is not None:
                    # HotSpot compiles each method by its own invocations: a request's code warms per request,
                    # a batch's (drain, append to the request) per batch, however many a request carries
                    work *= self.jvm.factor("sender", len(drained))
                    batch_work *= self.jvm.factor("drain", nbatches)
                work += batch_work
                # (the codecs and the kernel's socket writes: native code, never cold)
                busy += work + costs.compress_byte * compressing + costs.wire_byte * wire
                # handle responses and build the requests, then write them
                if busy > 0 and self.host.uncontended(self.gil):   # (_work without its generator)
                    self.busy_seconds += busy
                    self.host.busy_seconds += busy
                    yield env.timeout(busy)
                else:
                    yield from self._work(busy)
                for conn, batches in drained:
                    self._send(conn, batches, now)
                continue
            if ready:      # a ready node whose connection is still writing: look again when it is done
                for conn in connections.values():
                    if conn.writable_at() > now:
                        deadline = min(deadline, conn.writable_at())
            if busy:
                if self.host.uncontended(self.gil):
                    self._owe(busy, now)
                else:
                    yield from self._work(busy)
                    continue              # time passed: what was ready and when to look again may have changed
            if self.responses:
                continue
            self.waiting_until = deadline
            self.idle = not ready
            self.wake = env.event()
            if deadline < np.inf:
                self._alarm(deadline if deadline > now else now)
            yield self.wake
            self.waiting_until = -np.inf
            now = env.now
            if self.free_at > now:
                yield env.timeout(self.free_at - now)

    def _work(self, seconds: float) -> Generator:
        """The Sender thread's CPU work: host.run's generator, to yield from."""
        self.busy_seconds += seconds
        return self.host.run(seconds, self.gil)

    def _send(self, conn: Connection, batches: list[ProducerBatch], now: float) -> None:
        size, records = REQUEST_HEADER_BYTES, 0
        for b in batches:
            size += b.size_on_wire + PARTITION_HEADER_BYTES
            records += b.records
        request = ProduceRequest(conn, batches, now, size, records)
        self.batches.extend(batches)
        self.requests.append(request)
        conn.send(request, self.acks)

    def _complete(self, responses: list[ProduceRequest]) -> float:
        """Handle responses: the Sender's CPU for each batch and callback (returned, for the caller to spend);
        the callbacks complete the records one after another from now."""
        nbatches = nrecords = 0
        for request in responses:
            request.connection.remove(request)
            nbatches += len(request.batches)
            nrecords += request.records
        start = self.env.now
        per_batch, per_record, cold = self.costs.batch, self.costs.record, 0.0
        if self.jvm is not None:      # (each path warms with its own runs: a batch's completion, a record's callback)
            per_batch *= self.jvm.factor("completion", nbatches)
            per_record *= self.jvm.factor("callback", nrecords)
            cold = self.jvm.sender_owed(start)     # (or its cold code's extra CPU by time, where measured)
        # Callbacks run one after another on this thread: record k of the lot completes k callbacks later.
        first = start + cold + per_batch * nbatches + per_record
        for request in responses:
            request.completed = start
            for batch in request.batches:
                self.records.complete_segments(batch.segments, first, per_record)
                first += per_record * batch.records
                # Memory and muted partitions are released as the responses are handled (a few us early).
                self.acc.pool.deallocate(batch.allocated)
                self.acc.muted.discard(batch.partition)
        return cold + per_batch * nbatches + per_record * nrecords
