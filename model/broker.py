"""The broker's side of a produce request (docs/kafka-internals.md §7).

A network processor (num.network.threads, each connection pinned to one) reads the request and puts it on the
request queue; an I/O thread (num.io.threads) appends each partition's batch to the leader's log under that
partition's lock; acks=all waits in purgatory until the followers have the data; the processor sends the
response. The connection is muted from reading a request until its response is sent, so each connection is served
one request at a time: client pipelining only hides the network round trip.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.host import Host, Slots, done, maybe_slots, wait_for
from kafkasim.model.network import Connection, ProduceRequest, RequestTimes, RESPONSE_BYTES_PER_PARTITION
from kafkasim.model.page_cache import PageCache

# Serve requests arithmetically where nothing can make them wait (Broker.serves_at_once); tests turn it off to
# check that both ways give the same results.
SERVE_AT_ONCE = True


@dataclass(frozen=True)
class BrokerCosts:
    network_request: float   # seconds of network-thread CPU per request (read + response)
    network_byte: float      # per request byte read
    request: float           # I/O-thread CPU per request
    batch: float             # per partition batch appended
    record: float            # per record appended (LogValidator checks each record of the batch)
    byte: float              # per byte appended
    recompress_byte: float   # per byte when broker compression.type differs from the producer's, else 0
    validate_byte: float = 0.0   # per uncompressed byte of a compressed batch: decompressing its records to check
    service_cv: float = 0.0  # I/O-thread service time variability (gamma; 0 = deterministic, 1 = exponential)
    handoff: float = 0.0     # latency of each network ↔ I/O thread hand-off (request queue, response queue) on a
                             # host with a core per thread; a crowded host wakes threads later (Host.crowding)
    fetch: float = 0.0       # per follower fetch served as leader
    follower_fetch: float = 0.0   # a follower's own CPU per fetch it makes (request, response, log append)
    follower_byte: float = 0.0    # and per byte it fetches, beyond the append's byte cost
    fetch_partition: float = 0.0      # leader's CPU per partition of a follower's fetch session, every fetch
    follower_partition: float = 0.0   # the follower's, per partition of its session, every fetch
    # TLS (0 on PLAINTEXT): network-thread CPU per byte of a produce request decrypted, of a consumer's and of a
    # follower's fetch response copied out of the page cache and encrypted (no sendfile)
    tls_produce: float = 0.0
    tls_fetch: float = 0.0
    tls_replica: float = 0.0


class Broker:
    STEADY_COUNTERS = ("network_busy", "io_busy", "background_busy", "disk_wait_seconds", "bytes_in", "bytes_out")

    def __init__(self, env: simpy.Environment, broker_id: int, host: Host, costs: BrokerCosts,
                 network_threads: int, io_threads: int, connections: int, page_cache: PageCache, replication,
                 rng: np.random.Generator | None = None, background: tuple[float, float] | None = None,
                 horizon: float = np.inf, extra_latency: float = 0.0, response_delay: float = 0.0):
        self.env = env
        self.extra_latency = extra_latency    # added to everything it sends (hardware extra_latency_ms)
        self.response_delay = response_delay  # each produce response held, its connection muted (response_delay_ms)
        self.id = broker_id
        self.host = host
        self.costs = costs
        host.add_threads(min(network_threads, connections) + min(io_threads, connections))
        # Resources only where connections can outnumber threads: otherwise nothing ever waits for them.
        # Background load (below) counts as io_threads extra users.
        per_processor = -(-connections // network_threads)
        self.processors = [maybe_slots(env, 1, per_processor) for _ in range(network_threads)]
        self.io_threads = maybe_slots(env, io_threads, connections + (io_threads if background and background[0]
                                                                          else 0))
        # Appends to one partition are serial (the log lock); only several producers can append at once.
        self.log_locks: dict[int, Slots] | None = {} if connections > 1 else None
        self.page_cache = page_cache
        self.disk = page_cache.disk
        self.replication = replication        # the log offsets, and the high watermark acks=all waits for
        self.network_busy = 0.0               # thread-seconds of network-thread work
        self.io_busy = 0.0                    # thread-seconds of I/O-thread work
        self.network_threads = network_threads
        self.io_thread_count = io_threads
        self.bytes_in = 0
        self.bytes_out = 0                    # to consumers
        self.rng = rng or np.random.default_rng(0)
        self.background_busy = 0.0
        self.disk_wait_seconds = 0.0          # appends held back because the page cache was full
        self.horizon = horizon                # when the run stops (model.max_sim_seconds)
        if background:
            self._start_background(*background)

    def serve(self, conn: Connection, acks: str) -> None:
        self.env.process(self._connection(conn, acks))

    def _connection(self, conn: Connection, acks: str) -> Generator:
        env, costs = self.env, self.costs
        handoff = costs.handoff * self.host.crowding      # every thread is wired by the time this runs
        processor = self.processors[conn.index % len(self.processors)]
        unmuted = 0.0
        while True:
            request = yield from conn.next_request(unmuted)
            t = {"start": env.now, "end": env.now}
            read, append, mean_append = self._demand(request)
            respond = acks != "0"
            if processor is None and self.io_threads is None and self.log_locks is None and self.host.uncontended():
                # Nothing to wait for: read, append and (unless followers must confirm first) the response
                # are one piece of work. On a host short of cores each of the three threads (network, I/O, network)
                # waits for a core of its own, as below: measured, a 64 KiB request turned around every ≈ 1.1 ms
                # on 2 crowded cores for ≈ 0.2 ms of the broker's CPU.
                merged = (costs.network_request / 2 if respond and acks != "all" and not self.response_delay
                          else 0.0)
                yield from self.host.run(read + append + merged)
                hand = (2 if merged else 1) * handoff
                if hand:             # the queues' hand-offs (latency, not CPU), taken together after the work
                    yield env.timeout(hand)
                t["queued"] = env.now - hand - append - merged
                t["dequeued"] = t["queued"] + handoff
                if merged:
                    self.network_busy += merged
                    t["local_done"] = t["remote_done"] = t["dequeued"] + append
                    respond = False
                    self._respond_now(conn, request, t)
            else:
                yield from wait_for(processor, env.now)
                yield from self.host.run(read)
                done(processor)
                t["queued"] = env.now
                if handoff:
                    yield env.timeout(handoff)
                yield from wait_for(self.io_threads, env.now)
                t["dequeued"] = env.now
                yield from self._append(request, append / mean_append if mean_append else 1.0)
                done(self.io_threads)
            self.network_busy += read
            self.io_busy += append
            backlog, nbytes = self._log_append(request, env.now)
            if backlog > 0:      # the page cache is full of dirty pages: the append waits for the disk
                self.disk_wait_seconds += backlog
                yield env.timeout(backlog)
            self.bytes_in += nbytes
            t.setdefault("local_done", env.now)
            if acks == "all":
                yield from self.replication.wait(self, request)
            t.setdefault("remote_done", env.now)
            if respond:
                if handoff or self.response_delay:
                    yield env.timeout(handoff + self.response_delay)
                yield from wait_for(processor, env.now)
                yield from self.host.run(costs.network_request / 2)
                done(processor)
                self.network_busy += costs.network_request / 2
                self._respond_now(conn, request, t)
            t["end"] = max(t["end"], env.now)
            unmuted = t["end"]       # the connection stays muted until the response has left the broker
            request.times = RequestTimes(t["start"], t["queued"], t["dequeued"], t["local_done"], t["remote_done"],
                                         t.get("response_queued_done", t["remote_done"]), t["end"])

    def _demand(self, request: ProduceRequest) -> tuple[float, float, float]:
        """Seconds of network-thread work to read the request, and of I/O-thread work to append it: this
        request's draw and its mean."""
        costs = self.costs
        read = costs.network_request / 2 + (costs.network_byte + costs.tls_produce) * request.size
        append = costs.request + sum(self._batch_work(b) for b in request.batches)
        if costs.service_cv > 0:     # gamma with mean `append` and the given coefficient of variation
            shape = 1.0 / costs.service_cv ** 2
            return read, float(self.rng.gamma(shape, append / shape)), append
        return read, append, append

    def _log_append(self, request: ProduceRequest, now: float) -> tuple[float, int]:
        """The batches reach the leader's log and the page cache at `now`; returns how long the append must
        wait for the disk (> 0 once the dirty pages reach their limit), and the bytes appended."""
        nbytes, wait = 0, 0.0
        for batch in request.batches:
            wait = self.page_cache.write(now, batch.size_on_wire)
            batch.offset = self.replication.append(batch.partition, batch.size_on_wire, batch.records, batch)
            nbytes += batch.size_on_wire
        return wait, nbytes

    # --- a consumer's fetch
    def fetch(self, connection: int, partitions: list[int], position: dict[int, int], settings,
              session: int) -> Generator:
        """KafkaApis.handleFetchRequest for a consumer, as the leader serves a follower's (broker.fetch_us, and the
        network thread's request and per-byte work): a network thread reads it, an I/O thread reads every
        partition of the consumer's fetch session (`session` of them: all it reads from this broker, those it
        asks for now or not, broker.fetch_partition_us each) up to the high watermark; with fewer than
        fetch.min.bytes there the fetch is parked until more arrive or fetch.max.wait.ms passes; a network thread
        sends the batches (zero-copy with PLAINTEXT; through TLS copied out and encrypted, tls_fetch). Returns the
        batches."""
        env, costs = self.env, self.costs
        processor = self.processors[connection % len(self.processors)]
        handoff = costs.handoff * self.host.crowding
        yield from wait_for(processor, env.now)
        yield from self.host.run(costs.network_request / 2)
        done(processor)
        if handoff:
            yield env.timeout(handoff)
        read = costs.fetch + costs.fetch_partition * session
        yield from wait_for(self.io_threads, env.now)
        yield from self.host.run(read)
        done(self.io_threads)
        self.network_busy += costs.network_request / 2
        self.io_busy += read
        deadline = env.now + settings.fetch_max_wait_ms / 1000.0
        while True:
            got = self.replication.read(partitions, position, settings.max_partition_fetch_bytes,
                                        settings.fetch_max_bytes)
            nbytes = sum(b.size for b in got)
            if nbytes >= settings.fetch_min_bytes or env.now >= deadline:
                break
            yield self.replication.wait_for_data(partitions) | env.timeout(deadline - env.now)
        logs = self.replication.parts
        uncached = sum(self.page_cache.uncached(logs[p].written, position[p], position[p] + n)
                       for p, n in Counter(b.partition for b in got).items())
        if handoff:
            yield env.timeout(handoff)
        send = costs.network_request / 2 + (costs.network_byte + costs.tls_fetch) * nbytes
        yield from wait_for(processor, env.now)
        yield from self.host.run(send)
        if uncached:        # sendfile faults the pages in from the disk, holding the network thread
            yield env.timeout(self.page_cache.read(env.now, uncached) - env.now)
        done(processor)
        self.network_busy += send
        self.bytes_out += nbytes
        return got

    # --- the same loop, computed at once
    def serves_at_once(self, conn: Connection, acks: str) -> bool:
        """Whether nothing but the connection itself can make its requests wait: no thread pool or log lock to
        queue for (one connection), no core shortage, fixed service times, no replication, a response path of its
        own, and acks=1 (the response leaves with the append's work). serve_at_once then stands in for the
        _connection loop. Decided at the first send, once everything is wired."""
        return (SERVE_AT_ONCE and acks == "1" and self.costs.service_cv == 0 and self.costs.handoff == 0
                and not self.response_delay
                and all(p is None for p in self.processors) and self.io_threads is None and self.log_locks is None
                and self.host.uncontended() and not any(state.followers for state in self.replication.parts)
                and all((pipe.share_of or pipe).users == 1 for pipe in conn.back_pipes))

    def serve_at_once(self, conn: Connection, request: ProduceRequest) -> None:
        """The _connection loop for a request when serves_at_once holds, computed as it is sent: the same start
        (the loop takes a request once it has arrived and the connection is unmuted), counters, RequestMetrics and
        response, without the loop's events. The float arithmetic copies the loop's (SimPy adds delays to now)."""
        sent = self.env.now
        if conn.broker_idle_from <= sent:      # the loop is waiting for it: woken when it arrives
            now = sent + max(0.0, request.arrived - sent)
        else:                                  # the loop takes it when done with the previous one
            now = conn.broker_idle_from
        ready = max(request.arrived, conn.unmuted_at)
        if ready > now:
            now = now + (ready - now)
        read, append, _ = self._demand(request)
        merged = self.costs.network_request / 2
        work = read + append + merged
        if (now + work if work > 0 else now) >= self.horizon:
            # The run stops before this request is appended: the loop takes it (and every later one) from here.
            conn.hand_to_broker(request, now)
            return
        start, response = now, RESPONSE_BYTES_PER_PARTITION * len(request.batches)
        if work > 0:
            self.host.busy_seconds += work
            now = now + work
        queued = now - append - merged
        if merged:                   # the response goes with the append's work
            self.network_busy += merged
            local_done, responded = queued + append, now     # (as the loop: dequeued + append)
            left = conn.respond_at(request, response, now)
        self.network_busy += read
        self.io_busy += append
        backlog, nbytes = self._log_append(request, now)
        if backlog > 0:
            self.disk_wait_seconds += backlog
            now = now + backlog
        conn.broker_idle_from = now
        if now >= self.horizon:      # the run stops while the append waits for the disk
            return
        self.bytes_in += nbytes
        if not merged:               # no network-thread cost: the loop responds after the append
            local_done, responded = now, now
            left = conn.respond_at(request, response, now)
        conn.unmuted_at = left if left > now else now
        request.times = RequestTimes(start, queued, queued, local_done, local_done, responded, conn.unmuted_at)

    def _respond_now(self, conn: Connection, request: ProduceRequest, t: dict) -> None:
        t["response_queued_done"] = self.env.now
        t["end"] = conn.respond(request, RESPONSE_BYTES_PER_PARTITION * len(request.batches))

    def _append(self, request: ProduceRequest, scale: float) -> Generator:
        """KafkaApis.handleProduceRequest on an I/O thread, each batch under its partition's log lock; `scale` is
        this request's draw of service-time variability (1 = the mean)."""
        costs = self.costs
        if self.log_locks is None:
            yield from self.host.run(scale * (costs.request + sum(self._batch_work(b) for b in request.batches)))
            return
        yield from self.host.run(scale * costs.request)
        for batch in request.batches:
            lock = self.log_locks.get(batch.partition)
            if lock is None:
                lock = self.log_locks[batch.partition] = Slots(self.env, 1)
            yield from wait_for(lock, self.env.now)
            yield from self.host.run(scale * self._batch_work(batch))
            lock.give()

    def _batch_work(self, batch) -> float:
        """I/O-thread CPU to validate and append one batch."""
        costs = self.costs
        return (costs.batch + costs.record * batch.records
                + (costs.byte + costs.recompress_byte) * batch.size_on_wire + costs.validate_byte * batch.bytes)

    def _start_background(self, io_seconds: float, cpu_seconds: float) -> None:
        """Load that is not ours: `io_seconds` of I/O-thread work per second (other producers' requests to the
        background partitions) and `cpu_seconds` of housekeeping per second (per-partition work: fetch sessions,
        log checks, metrics). Spread evenly in 10 ms ticks over as many I/O threads as it needs."""
        tick = 0.01
        threads = max(1, math.ceil(io_seconds))

        def io_load() -> Generator:
            while True:
                yield from wait_for(self.io_threads, self.env.now)
                yield from self.host.run(io_seconds / threads * tick)
                done(self.io_threads)
                self.background_busy += io_seconds / threads * tick
                yield self.env.timeout(tick * (1 - io_seconds / threads))

        def housekeeping() -> Generator:
            while True:
                yield from self.host.run(cpu_seconds * tick)
                yield self.env.timeout(tick * max(0.0, 1 - cpu_seconds))
        for _ in range(threads if io_seconds > 0 else 0):
            self.env.process(io_load())
        if cpu_seconds > 0 and 0 < self.host.cores <= self.host.threads:   # only cores that are short matter
            self.host.add_threads(1)
            self.env.process(housekeeping())

    def utilisation(self, elapsed: float) -> dict[str, float]:
        # The disk's booked time beyond the run is writeback the page cache absorbed: not part of the run.
        disk = self.disk.busy_seconds - max(0.0, self.disk.free_at - self.env.now)
        return {
            "network-threads": self.network_busy / (elapsed * self.network_threads),
            "io-threads": (self.io_busy + self.background_busy) / (elapsed * self.io_thread_count),
            "disk": max(0.0, disk) / elapsed,
        }

