"""KafkaConsumer: consumer groups reading the topic beside the producers, or catching up on what it already holds.

Each instance is the classic Java consumer: one application thread runs the poll loop, which sends the fetches,
parses what comes back and hands records to the application (docs/kafka-internals.md §10). Its fetcher keeps at
most one fetch in flight to each broker, and asks only for partitions it holds no records of: so the next fetch
for a partition leaves when poll() has collected the last records of the previous one, before the application
processes them. A broker serves a fetch as it serves a follower's (broker.Broker.fetch): a network thread reads
it, an I/O thread reads the log up to the high watermark, at least one batch per partition up to
max.partition.fetch.bytes and fetch.max.bytes in all, and the response is parked until fetch.min.bytes are there
or fetch.max.wait.ms passes.

A fresh consumer JVM's poll loop runs cold code at first: COLD_SLOWDOWN times its warm cost until it has spent
consumer.cold_cpu_ms more (measured by `calibrate host` from two fresh kafka-consumer-perf-test reads).

Simplified: the group joins once, at the start (or before the producers send: consumers.start; consumer.join_ms on the client, plus the coordinator's
group.initial.rebalance.delay.ms); no rebalances, commits or heartbeats. A fetch costs the leader's I/O thread its
session's partitions (KIP-227: all the instance reads there, as for a follower); the client's own cost per partition
is left out (not measured).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.accumulator import BATCH_HEADER_BYTES, record_bytes
from kafkasim.model.host import ClientHosts, ClientMachine
from kafkasim.model.pipes import transfer
from kafkasim.model.jvm import Jvm
from kafkasim.model.producer import compression_ratio, one_way_seconds
from kafkasim.model.scenario_fields import tls_seconds
from kafkasim.model.replication import FETCH_PARTITION_BYTES, FETCH_REQUEST_BYTES, FetchedBatch

# A cold poll thread's speed against its warm speed (Simplified: one factor until consumer.cold_cpu_ms is spent;
# HotSpot's C1 code runs at roughly half of C2's on such loops).
COLD_SLOWDOWN = 2.0


@dataclass(frozen=True)
class ConsumerCosts:
    fetch: float     # CPU per fetch: build the request, read the response's partitions
    record: float    # per record poll() returns (the record's objects, its batch's share of the CRC check)
    byte: float      # per byte fetched (CRC32C, copying the values out; decrypting it through TLS)
    app: float       # the application's own CPU per record, between polls
    decompress: float = 0.0   # per uncompressed byte of a compressed batch: the codec's decompression, which the
                              # leader's validation measures (compression.<codec>.validate_ns)
    record_bytes: int = 0     # a record's uncompressed bytes in its batch
    cold: float = 0.0         # the poll thread's extra CPU while its code is cold (consumer.cold_cpu_ms)


def assign(partitions: int, instances: int, strategy: str) -> list[list[int]]:
    """The partitions of one topic each instance of a group gets: RangeAssignor (consecutive runs, the first
    instances one more) or RoundRobinAssignor / CooperativeStickyAssignor on a fresh group (one at a time)."""
    if strategy == "range":
        each, extra = divmod(partitions, instances)
        out, start = [], 0
        for i in range(instances):
            n = each + (i < extra)
            out.append(list(range(start, start + n)))
            start += n
        return out
    return [list(range(i, partitions, instances)) for i in range(instances)]


class KafkaConsumer:
    """One consumer instance of group `group` reading `partitions`: from the start of what the log holds
    (auto.offset.reset=earliest) or from its end once the group has joined (latest), until the producers are done
    (`producing` has fired) and it has read every batch."""

    STEADY_COUNTERS = ("busy_seconds",)

    def __init__(self, env: simpy.Environment, name: str, group: int, partitions: list[int], cluster,
                 machine: ClientMachine, costs: ConsumerCosts, settings, one_way: float, join: float,
                 producing: simpy.Event, connection: int = 0, limit: int = 0):
        self.env = env
        self.name = name
        self.group = group
        self.partitions = partitions
        self.log = cluster.replication.parts        # each partition's log: batch sizes, records, high watermark
        self.position = {p: 0 for p in partitions}  # the next batch index to fetch, per partition
        self.cluster = cluster
        self.machine = machine
        self.host = machine.host
        self.costs = costs
        self.settings = settings
        self.one_way = one_way
        self.join = join
        self.producing = producing
        self.limit = limit                        # records to read before stopping (0: until caught up)
        self.connection = connection              # its index among a broker's connections: its network thread
        self.leaders: dict[int, list[int]] = {}
        for p in partitions:
            self.leaders.setdefault(cluster.leaders[p], []).append(p)
        # its connection to each leader: a flow through each NIC, each way
        self.paths = {b: ([machine.nic_out.flow(f"{name}→broker-{b}"), cluster.nic_in[b].flow(name)],
                          [cluster.nic_out[b].flow(name), machine.nic_in.flow(f"broker-{b}→{name}")])
                      for b in self.leaders}
        # SubscriptionState's assignment order, in which fetch requests list the partitions: a partition whose
        # fetched records were all returned moves to the end (CompletedFetch.drain), so none is left behind
        self.order = list(partitions)
        self.buffered: list[FetchedBatch] = []  # completed fetches' batches, not yet returned by poll()
        self.in_flight: set[int] = set()        # brokers with a fetch outstanding
        self.arrived = env.event()              # a fetch response came back
        # figures
        self.assigned_at = np.nan
        self.consumed = 0
        self.last_at = np.nan
        self.fetches: list[tuple[float, float, int, int]] = []   # (sent, received, records, bytes)
        self.polled: list[tuple[float, object]] = []             # (poll time, ProducerBatch) for end-to-end
        self.busy_seconds = 0.0
        self.cold_left = costs.cold             # extra CPU its cold code has still to spend
        self.lag_max = 0                        # records-lag-max: records behind the high watermark after a fetch
        self.jvm: Jvm | None = None              # its JVM, whose compilers take its host's cores
        self.process = env.process(self.run())

    def caught_up(self) -> bool:
        if self.limit and self.consumed >= self.limit:
            return True
        return (self.producing.triggered and not self.buffered
                and all(self.position[p] >= len(self.log[p].sizes) for p in self.partitions))

    # --- the application thread
    def run(self) -> Generator:
        env, s = self.env, self.settings
        if not self.partitions:
            return
        yield env.timeout(self.join)
        self.assigned_at = env.now
        if s.auto_offset_reset == "latest":
            self.position = {p: len(self.log[p].sizes) for p in self.partitions}
        while not self.caught_up():
            if not self.buffered:
                work = self._send_fetches()
                if work:
                    yield from self._work(work)
                if not self.buffered:
                    self.arrived = env.event()
                    yield self.arrived | self.producing if not self.producing.triggered else self.arrived
                    continue
            # poll(): up to max.poll.records from the completed fetches, parsed as they are collected
            records, nbytes, taken = self._collect(s.max_poll_records)
            c = self.costs
            yield from self._work(records * (c.record + c.record_bytes * c.decompress) + nbytes * c.byte)
            self.last_at = env.now
            self.consumed += records
            self.polled.extend((env.now, b.batch) for b in taken if b.batch is not None)
            # pipelining: the next fetches leave before the application processes these records
            work = self._send_fetches()
            yield from self._work(work + records * self.costs.app)

    def _work(self, seconds: float) -> Generator:
        if self.cold_left > 0:          # cold code: COLD_SLOWDOWN times the warm cost until cold_left is spent
            extra = min(self.cold_left, seconds * (COLD_SLOWDOWN - 1))
            self.cold_left -= extra
            seconds += extra
        self.busy_seconds += seconds
        return self.host.run(seconds)

    def _collect(self, limit: int) -> tuple[int, int, list[FetchedBatch]]:
        """At most `limit` records from the completed fetches, in order (the rest of a batch waits for the next
        poll), their bytes, and the batches whose last records they were."""
        records = nbytes = 0
        taken = []
        while self.buffered and records < limit:
            b = self.buffered[0]
            n = min(b.records, limit - records)
            size = b.size * n // b.records
            records += n
            nbytes += size
            if n == b.records:
                taken.append(self.buffered.pop(0))
                if all(other.partition != b.partition for other in self.buffered):
                    self.order.remove(b.partition)
                    self.order.append(b.partition)
            else:       # (a batch's records count as polled, end to end, when its last one is)
                self.buffered[0] = FetchedBatch(b.partition, b.records - n, b.size - size, b.batch)
        return records, nbytes, taken

    def _send_fetches(self) -> float:
        """Fetches to every broker with none in flight for partitions with nothing buffered; their CPU."""
        buffered = {b.partition for b in self.buffered}
        work = 0.0
        for node, parts in self.leaders.items():
            wanted = [p for p in self.order if p in parts and p not in buffered]
            if node in self.in_flight or not wanted:
                continue
            self.in_flight.add(node)
            work += self.costs.fetch
            self.env.process(self._fetch(node, wanted))
        return work

    def _fetch(self, node: int, partitions: list[int]) -> Generator:
        env = self.env
        sent = env.now
        broker = self.cluster.brokers[node]
        size = FETCH_REQUEST_BYTES + FETCH_PARTITION_BYTES * (len(partitions) - 1)
        out, back = self.paths[node]
        yield env.timeout(self.one_way + max(0.0, transfer(out, env.now, size) - env.now))
        got = yield from broker.fetch(self.connection, partitions, self.position, self.settings,
                                      len(self.leaders[node]))
        # the response leaves through the broker's NIC (zero-copy) and crosses to the client
        nbytes = sum(b.size for b in got)
        end = transfer(back, env.now, nbytes + size)
        yield env.timeout(end - env.now + self.one_way + broker.extra_latency)
        for b in got:
            self.position[b.partition] += 1
        lag = max((self.log[p].ends[self.log[p].hw] - self.log[p].ends[self.position[p]] for p in partitions),
                  default=0)
        self.lag_max = max(self.lag_max, lag)
        self.buffered.extend(got)
        self.fetches.append((sent, env.now, sum(b.records for b in got), nbytes))
        self.in_flight.discard(node)
        if not self.arrived.triggered:
            self.arrived.succeed()


def prefill(s, replication) -> None:
    """The records the topic holds before the run (consumers.prefilled_records), spread evenly over the partitions
    in full batches of producer.batch.size, compressed as the producer compresses."""
    n = s.consumers.prefilled_records
    if n <= 0:
        return
    size = int(record_bytes(np.array([s.workload.record_size]), s.workload.key_size)[0])
    per_batch = max(1, (max(s.producer.batch_size, size) - BATCH_HEADER_BYTES) // size)
    ratio = compression_ratio(s, s.producer.compression_type)[0] if s.producer.compression_type != "none" else 1.0
    partitions = s.topic.partitions
    for p in range(partitions):
        records = n // partitions + (p < n % partitions)
        full, rest = divmod(records, per_batch)
        replication.prefill(p, full, BATCH_HEADER_BYTES + int(per_batch * size * ratio), per_batch)
        if rest:
            replication.prefill(p, 1, BATCH_HEADER_BYTES + int(rest * size * ratio), rest)


def compile_seconds(s) -> float:
    """What a consumer JVM's compilers spend during the run: all of consumer.jit_cpu_ms for one started with the
    run, less what its start and join took for one started before the producers (measured, or else the producer
    JVM's jvm.jit_cpu_ms)."""
    hw = s.hardware
    tls = tls_seconds(hw, s.consumer.security_protocol, "jvm.tls_jit_cpu_ms")     # (its TLS code)
    if hw["consumer.jit_cpu_ms"] <= 0:
        return hw.seconds("jvm.jit_cpu_ms") + tls
    before = hw.seconds("consumer.start_jit_cpu_ms") if s.consumers.start == "before-producers" else 0.0
    return max(0.0, hw.seconds("consumer.jit_cpu_ms") - before) + tls


def consumer_groups(env: simpy.Environment, s, cluster, clients: ClientHosts,
                    producing: simpy.Event) -> list[KafkaConsumer]:
    """Every group's instances, each with its share of the partitions, on the client host `clients` gives it, in a
    JVM of its own whose compilers take that host's cores as a producer's do (compile_seconds)."""
    c, hw = s.consumers, s.hardware
    codec = s.producer.compression_type
    tls = tls_seconds(hw, s.consumer.security_protocol, "consumer.tls_byte_ns")
    costs = ConsumerCosts(hw.seconds("consumer.fetch_us"), hw.seconds("consumer.record_us"),
                          hw.seconds("consumer.byte_ns") + tls, c.app_record_us * 1e-6,
                          hw.seconds(f"compression.{codec}.validate_ns") if codec != "none" else 0.0,
                          int(record_bytes(np.array([s.workload.record_size]), s.workload.key_size)[0]),
                          hw.seconds("consumer.cold_cpu_ms") if s.client.library == "java" else 0.0)
    one_way = one_way_seconds(s)
    # find the coordinator, join and sync the group, fetch its offsets: a round trip each, after the client's start
    join = (hw.seconds("consumer.join_ms") + s.cluster.broker.group_initial_rebalance_delay_ms / 1000.0
            + 8 * one_way) if c.start == "with-producers" else 0.0
    jit = compile_seconds(s) if s.client.library == "java" else 0.0
    out = []
    for g in range(c.groups):
        for i, partitions in enumerate(assign(s.topic.partitions, c.instances, s.consumer.partition_assignment_strategy)):
            name = f"consumer-{g}-{i}"
            machine = clients.next(name)
            jvm = Jvm(env, machine.host, jit, 1.0, hw["jvm.warm_invocations"]) if jit > 0 else None
            for b in {cluster.leaders[p] for p in partitions}:
                cluster.nic_out[b].users += 1      # its responses share the broker's NIC out
            out.append(KafkaConsumer(env, name, g, partitions, cluster, machine, costs, s.consumer, one_way, join,
                                     producing, s.producers + len(out), c.messages))
            out[-1].jvm = jvm
    return out
