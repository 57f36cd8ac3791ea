"""The broker's side of a produce request (kafka-internals.md §7).

A network processor (num.network.threads, each connection pinned to one) reads the request and puts it on the
request queue; an I/O thread (num.io.threads) appends each partition's batch to the leader's log under that
partition's lock; acks=all waits in purgatory until the followers have the data; the processor sends the
response. The connection is muted from reading a request until its response is sent, so each connection is served
one request at a time: client pipelining only hides the network round trip.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import simpy

from kafkasim.model.host import Host, Pipe
from kafkasim.model.network import Connection, ProduceRequest, RESPONSE_BYTES_PER_PARTITION

# Dirty page-cache bytes the broker may write ahead of the disk before appends stall (vm.dirty_ratio-ish).
DIRTY_BYTES = 1 << 30


@dataclass(frozen=True)
class BrokerCosts:
    network_request: float   # seconds of network-thread CPU per request (read + response)
    network_byte: float      # per request byte read
    request: float           # I/O-thread CPU per request
    batch: float             # per partition batch appended
    byte: float              # per byte appended
    recompress_byte: float   # per byte when broker compression.type differs from the producer's, else 0


class Broker:
    def __init__(self, env: simpy.Environment, broker_id: int, host: Host, costs: BrokerCosts,
                 network_threads: int, io_threads: int, disk: Pipe, replication):
        self.env = env
        self.id = broker_id
        self.host = host
        self.costs = costs
        self.processors = [simpy.Resource(env, capacity=1) for _ in range(network_threads)]
        self.io_threads = simpy.Resource(env, capacity=io_threads)
        self.log_locks: dict[int, simpy.Resource] = {}
        self.disk = disk
        self.replication = replication        # the log offsets, and the high watermark acks=all waits for
        self.network_busy = 0.0               # thread-seconds of network-thread work
        self.io_busy = 0.0                    # thread-seconds of I/O-thread work
        self.network_threads = network_threads
        self.io_thread_count = io_threads
        self.bytes_in = 0

    def serve(self, conn: Connection, acks: str) -> None:
        self.env.process(self._connection(conn, acks))

    def _connection(self, conn: Connection, acks: str) -> Generator:
        processor = self.processors[conn.index % len(self.processors)]
        while True:
            request: ProduceRequest = yield conn.inbox.get()
            t = {"start": self.env.now}
            read = self.costs.network_request / 2 + self.costs.network_byte * request.size
            yield from self._network_work(processor, read)
            t["queued"] = self.env.now
            yield from self._handle(request, t)
            t["local_done"] = self.env.now
            if acks == "all":
                yield from self.replication.wait(self, request)
            t["remote_done"] = self.env.now
            if acks != "0":
                yield from self._network_work(processor, self.costs.network_request / 2)
                t["response_queued_done"] = self.env.now
                sent = conn.respond(request, RESPONSE_BYTES_PER_PARTITION * len(request.batches))
                # The connection stays muted until the response has left the broker.
                yield self.env.timeout(max(0.0, sent - self.env.now))
            t["end"] = self.env.now
            request.timing = _timing_breakdown(t)

    def _handle(self, request: ProduceRequest, t: dict) -> Generator:
        """KafkaApis.handleProduceRequest on an I/O thread: append every batch to its partition's log."""
        with self.io_threads.request() as slot:
            yield slot
            t["dequeued"] = self.env.now
            start = self.env.now
            nbytes = sum(b.size_on_wire for b in request.batches)
            yield from self.host.run(self.costs.request)
            for batch in request.batches:
                lock = self.log_locks.setdefault(batch.partition, simpy.Resource(self.env, capacity=1))
                with lock.request() as held:
                    yield held
                    cost = (self.costs.batch + (self.costs.byte + self.costs.recompress_byte) * batch.size_on_wire)
                    yield from self.host.run(cost)
                    self.disk.reserve(self.env.now, batch.size_on_wire)
                    batch.offset = self.replication.append(batch.partition, batch.size_on_wire)
            backlog = self.disk.free_at - self.env.now - DIRTY_BYTES / self.disk.rate
            if backlog > 0:      # the page cache is full of dirty pages: the append waits for the disk
                yield self.env.timeout(backlog)
            self.io_busy += self.env.now - start
            self.bytes_in += nbytes

    def _network_work(self, thread: simpy.Resource, seconds: float) -> Generator:
        with thread.request() as slot:
            yield slot
            yield from self.host.run(seconds)
            self.network_busy += seconds

    def utilisation(self, elapsed: float) -> dict[str, float]:
        return {
            "network-threads": self.network_busy / (elapsed * self.network_threads),
            "io-threads": self.io_busy / (elapsed * self.io_thread_count),
            "disk": self.disk.busy_seconds / elapsed,
        }


def _timing_breakdown(t: dict) -> dict[str, float]:
    """The broker's RequestMetrics for one request, in ms, under Kafka's names."""
    ms = 1000.0
    response_queue = t.get("response_queued_done", t["remote_done"]) - t["remote_done"]
    return {
        "RequestQueueTimeMs": (t["dequeued"] - t["queued"]) * ms,
        "LocalTimeMs": (t["local_done"] - t["dequeued"] + t["queued"] - t["start"]) * ms,
        "RemoteTimeMs": (t["remote_done"] - t["local_done"]) * ms,
        "ResponseQueueTimeMs": response_queue * ms,
        "ResponseSendTimeMs": (t["end"] - t.get("response_queued_done", t["remote_done"])) * ms,
        "TotalTimeMs": (t["end"] - t["start"]) * ms,
    }
