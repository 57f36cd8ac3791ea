"""simulate(scenario) -> Result: wire the components for one scenario, run them, and measure.

The wiring follows a real deployment: each producer instance (producer.KafkaProducer) has its worker threads, a
RecordAccumulator with its BufferPool, a Sender and one connection per broker; brokers lead the topic's partitions.
Hosts own the cores that every thread's work runs on: one host per producer and per broker, or a single shared
host when hardware.colocated_cores is set.
"""
from __future__ import annotations

import gc
import os
import time

import numpy as np
import numpy.random    # (numpy loads it lazily: imported here, not inside the first simulate())
import simpy

from kafkasim.model.accumulator import record_bytes
from kafkasim.model.broker import Broker, BrokerCosts
from kafkasim.model.consumer import consumer_groups, prefill
from kafkasim.model.host import ClientHosts, Host, add_background
from kafkasim.model.pipes import Pipe
from kafkasim.model.page_cache import PageCache
from kafkasim.model.producer import MBIT, KafkaProducer
from kafkasim.model.records import Records
from kafkasim.model.replication import Replication, assign_replicas
from kafkasim.model.results import Result, build_result
from kafkasim.model.scenario import Scenario, ScenarioError
from kafkasim.model.scenario_fields import tls_seconds
from kafkasim.model.steady import SteadyState


def record_sizes(s: Scenario, rng: np.random.Generator, n: int) -> np.ndarray:
    w = s.workload
    if w.record_size_max:
        low = 2 * w.record_size - w.record_size_max
        return rng.integers(low, w.record_size_max + 1, size=n)
    return np.broadcast_to(np.int64(w.record_size), n)      # one size: a read-only view, no array to fill


def broker_costs(s: Scenario, hw) -> BrokerCosts:
    """One broker's CPU costs from its hardware values (hw: the cluster's, or a broker's own, Hardware.broker)."""
    codec = s.producer.compression_type
    broker_codec = s.cluster.broker.compression_type
    recompress = broker_codec not in ("producer", codec) and not (broker_codec == "uncompressed" and codec == "none")
    # TLS: what a broker decrypts as it reads and encrypts as it sends, on each flow that is encrypted
    replicas = s.cluster.broker.security_inter_broker_protocol
    return BrokerCosts(
        network_request=hw.seconds("broker.network_request_us"),
        network_byte=hw.seconds("broker.network_byte_ns"),
        request=hw.seconds("broker.request_us"),
        batch=hw.seconds("broker.batch_us"),
        record=hw.seconds("broker.record_us"),
        byte=hw.seconds("broker.byte_ns"),
        recompress_byte=(hw.seconds(f"compression.{broker_codec}.byte_ns")
                         if recompress and broker_codec in ("gzip", "snappy", "lz4", "zstd") else 0.0),
        validate_byte=hw.seconds(f"compression.{codec}.validate_ns") if codec != "none" else 0.0,
        service_cv=hw["broker.service_cv"],
        handoff=hw.seconds("broker.handoff_us"),
        fetch=hw.seconds("broker.fetch_us"),
        follower_fetch=hw.seconds("broker.follower_fetch_us"),
        follower_byte=hw.seconds("broker.follower_byte_ns") + tls_seconds(hw, replicas, "broker.tls_read_byte_ns"),
        fetch_partition=hw.seconds("broker.fetch_partition_us"),
        follower_partition=hw.seconds("broker.follower_partition_us"),
        tls_produce=tls_seconds(hw, s.producer.security_protocol, "broker.tls_read_byte_ns"),
        tls_fetch=tls_seconds(hw, s.consumer.security_protocol, "broker.tls_write_byte_ns"),
        tls_replica=tls_seconds(hw, replicas, "broker.tls_write_byte_ns"),
    )


class Cluster:
    """Brokers, their hosts and NICs, the partition leaders, and replication. Each broker runs with its own
    hardware where the scenario gives it (hardware.brokers.<id>.<key>)."""

    def __init__(self, env: simpy.Environment, s: Scenario, shared_host: Host | None, rng: np.random.Generator):
        self.env = env
        n = s.cluster.brokers
        hw = [s.hardware.broker(b) for b in range(n)]
        self.hosts = [shared_host or Host(env, f"broker-{b}", hw[b]["broker_cores"]) for b in range(n)]
        self.nic_in = [Pipe(f"broker-{b} NIC in", hw[b]["nic_mbit"] * MBIT) for b in range(n)]
        self.nic_out = [Pipe(f"broker-{b} NIC out", hw[b]["nic_mbit"] * MBIT) for b in range(n)]
        # The topic was created with every broker up; a broker that is down then left each of its partitions'
        # ISR, and the controller moved its leaderships to the next replica in the assignment that is in sync.
        self.offline = set(range(n - s.cluster.offline_brokers, n))
        self.assignment = [[b for b in replicas if b not in self.offline]
                           for replicas in assign_replicas(s.topic.partitions, n, s.topic.replication_factor, rng)]
        self.leaders = [replicas[0] for replicas in self.assignment]
        self.replication = Replication(env, s, self)
        # Partitions per broker beyond ours: each takes housekeeping CPU, and the background ones their own load.
        hosted = [sum(b in replicas for replicas in self.assignment) for b in range(n)]
        bg = s.cluster.background_partitions
        # a consumer instance connects to the leaders of its partitions: taken as every broker
        consumer_connections = s.consumers.groups * min(s.consumers.instances, s.topic.partitions)
        self.brokers = []
        for b in range(n):
            costs = broker_costs(s, hw[b])
            bg_io = bg * (costs.request + costs.batch + costs.byte * s.cluster.background_bytes)
            # (a broker that is down has no connections, no threads and no background load)
            self.brokers.append(Broker(
                env, b, self.hosts[b], costs, s.cluster.broker.num_network_threads,
                s.cluster.broker.num_io_threads, 0 if b in self.offline else s.producers + consumer_connections,
                PageCache(Pipe(f"broker-{b} disk", hw[b]["disk_mb_s"] * 1e6), hw[b]["page_cache_gib"] * 2**30,
                          hw[b]["dirty_ratio"], hosted[b], hw[b]["dirty_background_ratio"], hw[b]["dirty_expire_s"]),
                self.replication, np.random.default_rng(rng.integers(2**63)),
                (bg_io, (hosted[b] + bg) * hw[b].seconds("broker.partition_us"))
                if (bg or hw[b]["broker.partition_us"]) and b not in self.offline else None,
                horizon=s.max_sim_seconds, extra_latency=hw[b].seconds("extra_latency_ms"),
                response_delay=hw[b].seconds("response_delay_ms")))
        prefill(s, self.replication)   # what the topic holds before the run
        self.replication.start()   # adds the fetcher threads to the broker hosts


# A run's memory a record: per-record arrays and the batches, requests and segments that carry them. Measured at
# full length (benchmarks/bench_examples.py, peak RSS less the interpreter's ≈ 60 MB): ≈ 250 bytes a record at
# most (kontur-2020/XI, vm-2core/03), with a margin.
BYTES_PER_RECORD = 300


def check_memory(records: int) -> None:
    """A run whose per-record arrays would not fit in this machine's memory is refused before it starts."""
    try:
        available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return
    need = records * BYTES_PER_RECORD
    if need > 0.8 * available:
        fits = int(0.8 * available / BYTES_PER_RECORD)
        raise ScenarioError(f"workload.records × producers = {records:,} needs ≈ {need / 2**30:,.1f} GiB for its "
                            f"per-record results; this machine has {available / 2**30:.1f} GiB free, enough for "
                            f"≈ {fits:,} records")


def _streams(seed: int):
    """The seed's child streams, as many as the components need (the first 64 as they always were)."""
    sequence = np.random.SeedSequence(seed)
    while True:
        yield from sequence.spawn(64)


PROGRESS_AFTER, PROGRESS_EVERY = 3.0, 1.0      # wall seconds: a run longer than this reports, this often


def _progress(env: simpy.Environment, records, total: int, horizon: float, report, wall: float):
    """A watcher that wakes every simulated 10 ms and, once the run has taken PROGRESS_AFTER wall seconds, reports
    records completed, simulated seconds and an ETA every PROGRESS_EVERY. (Its own timeouts change no other event's
    order: SimPy orders the rest as before.)"""
    last = wall + PROGRESS_AFTER - PROGRESS_EVERY
    while True:
        yield env.timeout(0.01)
        now = time.perf_counter()
        if now - last < PROGRESS_EVERY:
            continue
        last = now
        done = total - records.outstanding
        share = max(done / total if total else 0.0, env.now / horizon)
        report({"records": done, "of": total, "simulated_seconds": env.now,
                "eta_seconds": (now - wall) * (1 - share) / share if share > 0 else None})


class Simulation:
    """One scenario wired as a deployment — records, hosts, the cluster, the producers and the consumers — ready to
    run() once. Tests and benchmarks read its components after the run."""

    def __init__(self, s: Scenario, progress=None):
        """progress(dict), if given, hears how far a long run is (records, simulated seconds, ETA)."""
        self.wall = time.perf_counter()
        self.scenario = s
        self.env = env = simpy.Environment()
        streams = _streams(s.seed)
        rng = lambda: np.random.default_rng(next(streams))    # one stream per component, in a fixed order
        hw, w = s.hardware, s.workload
        total = w.records * s.producers
        check_memory(total)
        values = record_sizes(s, rng(), total)
        self.records = records = Records(env, values, record_bytes(values, w.key_size) if total else values)
        self.shared = (add_background(Host(env, "shared", hw["colocated_cores"]), hw["background_cores"])
                       if hw["colocated_cores"] > 0 else None)
        self.cluster = Cluster(env, s, self.shared, rng())
        link_cap = [Pipe("network cap out", s.network.bandwidth_mbit * MBIT),
                    Pipe("network cap back", s.network.bandwidth_mbit * MBIT)] if s.network.bandwidth_mbit else None
        clients = ClientHosts(env, s.cluster.client_hosts, hw["client_cores"], hw["background_cores"],
                              hw["nic_mbit"] * MBIT, self.shared, hw["client_cpu_limit"], hw["cpu_period_ms"] / 1000)
        self.producers = [KafkaProducer(env, s, k, records, self.cluster, clients.next(f"client-{k}"), rng, link_cap)
                          for k in range(s.producers)]
        stop_workers = env.all_of([wk.process for producer in self.producers for wk in producer.workers])
        self.producers_done = env.all_of([stop_workers, records.done]) if total else stop_workers
        # (a plain event for the consumers to wait on: a condition nested in another is disarmed when that fires)
        producing = env.event()
        self.producers_done.callbacks.append(lambda _: producing.succeed())
        self.consumers = consumer_groups(env, s, self.cluster, clients, producing)
        if progress is not None:
            env.process(_progress(env, records, total, s.max_sim_seconds, progress, self.wall))
        # (a run of records: runs of a set length, and consumers that stop at a count of their own, are simulated
        # to their end)
        self.steady = (SteadyState(self) if s.fast_forward and total and not s.consumers.messages and w.seconds <= 0
                       else None)

    def run(self) -> Result:
        """Run until every producer and consumer is done or model.max_sim_seconds, and measure."""
        # The run keeps nearly everything it makes (batches, requests, record runs) until it ends, and what it drops
        # is freed by reference counting: the cyclic garbage collector would only walk the growing heap again and
        # again (2-8 % of a run). It pauses for the run; the run's objects are collected as usual afterwards.
        env, s = self.env, self.scenario
        collecting = gc.isenabled()
        gc.disable()
        try:
            steady = [self.steady.found] if self.steady else []
            env.run(until=env.any_of([env.all_of([self.producers_done] + [c.process for c in self.consumers]),
                                      env.timeout(s.max_sim_seconds)] + steady))
            extension = self.steady.fast_forward() if steady and steady[0].triggered else None
            return build_result(s, env, self.records, self.producers, self.cluster, self.shared,
                                time.perf_counter() - self.wall, self.consumers, extension)
        finally:
            if collecting:
                gc.enable()


def simulate(s: Scenario, progress=None) -> Result:
    """Run the scenario; progress(dict), if given, hears how far a long run is (records, simulated seconds, ETA)."""
    return Simulation(s, progress).run()
