"""KafkaProducer: one producer instance as KafkaProducer's constructor wires it — the application's worker threads
calling send(), a RecordAccumulator with its BufferPool, the Sender thread, and a connection to each broker that is
up — on its client host (or the shared one)."""
from __future__ import annotations

import numpy as np
import simpy

from kafkasim.model import clients, codec_levels
from kafkasim.model.accumulator import RecordAccumulator
from kafkasim.model.buffer_pool import BufferPool
from kafkasim.model.host import ClientMachine, ContendedLock, Slots
from kafkasim.model.pipes import Pipe
from kafkasim.model.jvm import Jvm
from kafkasim.model.network import Connection
from kafkasim.model.partitioner import PerRecordPartitioner, make_partitioner
from kafkasim.model.records import Records
from kafkasim.model.scenario import Scenario
from kafkasim.model.scenario_fields import tls_seconds
from kafkasim.model.sender import Sender, SenderCosts
from kafkasim.model.worker import WorkerCosts, WorkerThread, throttle_release_times

MBIT = 1e6 / 8


def compression_ratio(s: Scenario, codec: str) -> tuple[float, float | None]:
    """The codec's ratio on a batch's first record, and on the others when they repeat it (payload: repeated), at
    the producer's level."""
    if codec == "none":
        return 1.0, None
    level = codec_levels.of(s, codec)[1]
    if s.workload.payload == "repeated":
        return (level * s.hardware[f"compression.{codec}.ratio.random-letters"],
                s.hardware[f"compression.{codec}.ratio.repeated"])
    return level * s.hardware[f"compression.{codec}.ratio.{s.workload.payload}"], None


def compress_seconds(s: Scenario, codec: str) -> float:
    """The producer's CPU per uncompressed byte with its codec, at its level (0 without one)."""
    if codec == "none":
        return 0.0
    return codec_levels.of(s, codec)[0] * s.hardware.seconds(f"compression.{codec}.byte_ns")


def payload_seconds(s: Scenario, records: Records) -> float:
    """perf-test's CPU a record drawing fresh random letters for its value, at the records' mean value size (none
    for a value repeated, a file's records or an application's own)."""
    if s.workload.payload != "random-letters" or not len(records.value_size):
        return 0.0
    return s.hardware.seconds("worker.payload_byte_ns") * float(np.mean(records.value_size))


def one_way_seconds(s: Scenario) -> float:
    """Half the round trip between a client and a broker: the hosts', the scenario's added delay, and a proxy's."""
    proxy = s.hardware["proxy_ms"] if s.network.proxy else 0.0
    return (s.hardware["rtt_ms"] + s.network.rtt_ms + proxy) / 2000.0


class KafkaProducer:
    """Producer instance `index` of the scenario: it sends records index × workload.records … onwards."""

    def __init__(self, env: simpy.Environment, s: Scenario, index: int, records: Records, cluster,
                 machine: ClientMachine, rng, link_cap: list[Pipe] | None):
        hw, p = s.hardware, s.producer
        library = s.client.library
        self.index = index
        self.machine = machine
        self.host = machine.host
        self.gil = Slots(env, 1) if library == "kafka-python" else None   # one GIL per process
        pool = BufferPool(env, p.buffer_memory, p.max_block_ms / 1000.0)
        codec = p.compression_type
        ratio, repeat_ratio = compression_ratio(s, codec)
        self.on_sender = clients.compresses_on_sender(library)
        self.accumulator = RecordAccumulator(s.topic.partitions, p.batch_size, p.linger_ms / 1000.0, pool, codec,
                                             ratio, records.size, repeat_ratio, streams=not self.on_sender,
                                             delivery_timeout=p.delivery_timeout_ms / 1000.0)
        # the compilers also compile the codec's stream and library (measured per codec by `calibrate host`)
        # ... and its TLS code where its connections are encrypted
        jit = (hw.seconds("jvm.jit_cpu_ms")
               + (0.0 if codec == "none" else hw.seconds(f"compression.{codec}.jit_cpu_ms"))
               + tls_seconds(hw, p.security_protocol, "jvm.tls_jit_cpu_ms"))
        jvm = (jit, hw["jvm.cold_factor"], hw["jvm.warm_invocations"],
               hw.seconds("jvm.gc_record_ns"), hw.seconds("jvm.gc_held_us"), hw.seconds("jvm.sender_cold_cpu_ms"),
               hw["jvm.sender_cold_s"])
        self.jvm = (Jvm(env, self.host, *jvm)
                    if library == "java" and (jvm[0] > 0 or jvm[1] > 1 or jvm[3] > 0 or jvm[4] > 0 or jvm[5] > 0)
                    else None)
        self.sender = Sender(env, self.accumulator, records, cluster.leaders, self.host, self.gil,
                             SenderCosts(hw.seconds("sender.request_us"), hw.seconds("sender.batch_us"),
                                         hw.seconds("sender.record_us"), compress_seconds(s, codec),
                                         hw.seconds("sender.byte_ns")
                                         + tls_seconds(hw, p.security_protocol, "sender.tls_byte_ns")),
                             p.acks, p.max_request_size,
                             clients.mutes_partitions(library, p.enable_idempotence, p.max_in_flight), self.jvm)
        pool.on_exhausted = self.sender.wakeup
        self._connect(env, s, cluster, link_cap)
        self.workers = self._workers(env, s, records, rng)

    def _connect(self, env: simpy.Environment, s: Scenario, cluster, link_cap: list[Pipe] | None) -> None:
        """A connection to each broker that is up, through the client's NIC, any capped link and the broker's."""
        hw, p, k = s.hardware, s.producer, self.index
        one_way = one_way_seconds(s)
        # A proxy terminates the client's TCP connection next to it: its window sees only the hosts' own RTT.
        window_rtt = hw["rtt_ms"] / 1000.0 if s.network.proxy else 2 * one_way
        # Linux doubles SO_SNDBUF for its bookkeeping; -1 leaves it to autotuning (up to ≈ 4 MiB).
        send_buffer = 2 * p.send_buffer_bytes if p.send_buffer_bytes > 0 else 4 << 20
        connect = hw.seconds("sender.connect_ms") + 4 * one_way if hw["sender.connect_ms"] > 0 else 0.0
        nic_out, nic_in = self.machine.nic_out, self.machine.nic_in
        for b, broker in enumerate(cluster.brokers):
            if b in cluster.offline:
                continue
            # A TCP connection carries at most one window per round trip.
            window = [Pipe(f"client-{k}→broker-{b} window", send_buffer / window_rtt)] if window_rtt > 0 else []
            flow = f"client-{k}→broker-{b}"
            out = window + [nic_out.flow(flow)] + (link_cap[:1] if link_cap else []) + [cluster.nic_in[b].flow(flow)]
            back = [cluster.nic_out[b].flow(flow)] + (link_cap[1:] if link_cap else []) + [nic_in.flow(flow)]
            conn = Connection(env, k * len(cluster.brokers) + b, broker, out, back, one_way, p.max_in_flight,
                              send_buffer, self.sender, connect)
            self.sender.connections[b] = conn
            broker.serve(conn, p.acks)

    def _workers(self, env: simpy.Environment, s: Scenario, records: Records, rng) -> list[WorkerThread]:
        """The application's threads, each with its share of the producer's records, its throttle and the
        producer's partitioner (or, with per-thread partitions, one of its own)."""
        hw, p, w = s.hardware, s.producer, s.workload
        acc, k = self.accumulator, self.index
        kind = (clients.partitioner_name(s.client.library, s.client.version) if w.partition_choice == "partitioner"
                else w.partition_choice)     # the application's own choice: explicit partitions
        costs = WorkerCosts(
            record=hw.seconds("worker.record_us"), byte=hw.seconds("worker.byte_ns"),
            compress_byte=0.0 if self.on_sender else compress_seconds(s, p.compression_type),
            lock=hw.seconds("worker.lock_us"), metadata_lock=hw.seconds("worker.metadata_lock_us"),
            contention=hw.seconds("worker.contention_us"),
            metadata_contention=hw.seconds("worker.metadata_contention_us"),
            transfer=hw.seconds("worker.transfer_us"), app=hw.seconds("worker.app_us") + payload_seconds(s, records),
            batch=hw.seconds("worker.batch_us"),
            # waitOnMetadata: connect (TCP handshake), ApiVersions and Metadata are a round trip each
            first_send=((hw.seconds("worker.first_send_ms") + 6 * one_way_seconds(s))
                        if hw["worker.first_send_ms"] > 0 else 0.0))
        self.host.add_threads(s.threads + 1)     # worker threads and the Sender
        many = s.threads > 1
        metadata_lock = ContendedLock(env, costs.metadata_lock, costs.metadata_contention) if many else None
        # The producer's records split as np.array_split would: the first `extra` threads take one more.
        each, extra = divmod(w.records, s.threads)
        counts = [each + (t < extra) for t in range(s.threads)]
        firsts = k * w.records + np.cumsum([0] + counts[:-1])
        rate = w.throughput / s.threads if w.throughput > 0 else -1
        # The partitioner's state (sticky partition, round-robin counter) is the producer's, shared by its threads.
        # partitioner.ignore.keys: the ≥ 3.3 partitioner (uniform-sticky) then places keyed records as unkeyed ones
        keys = 0 if p.ignore_keys and kind == "uniform-sticky" else w.keys
        timeout, leaders = p.availability_timeout_ms / 1000.0, self.sender.leaders
        available = None
        if timeout > 0 and kind == "uniform-sticky" and p.adaptive_partitioning:
            acc.watch_nodes()
            available = lambda partition: acc.node_waiting(leaders[partition]) <= timeout       # noqa: E731
        shared = make_partitioner(kind, list(range(s.topic.partitions)), rng(), p.batch_size, keys,
                                  p.adaptive_partitioning, acc.deques, available)
        partition_locks = None
        if many:
            # Threads that follow one sticky partition together meet on its deque lock whichever partition it is:
            # one lock stands for the current one's (else a thread on the next partition would append in parallel
            # with the chunks still filling the last). Per-record partitioners spread over the partitions' own.
            follow = kind != "per-thread" and not isinstance(shared, PerRecordPartitioner)
            locks = 1 if follow else s.topic.partitions
            partition_locks = [ContendedLock(env, costs.lock, costs.contention, costs.transfer) for _ in range(locks)]
            if follow:
                partition_locks *= s.topic.partitions
        if shared.abort_on_new_batch:     # records a drain splits off go where KIP-480 sends them
            acc.redirect = shared.after_drain
        workers = []
        for t, (first, count) in enumerate(zip(firsts, counts)):
            partitioner = (make_partitioner(kind, list(range(t, s.topic.partitions, s.threads)), rng(), p.batch_size,
                                            keys, p.adaptive_partitioning, None)
                           if kind == "per-thread" else shared)
            workers.append(WorkerThread(env, f"producer-{k}-thread-{t}", int(first) if count else 0, count,
                                        throttle_release_times(count, rate), records, acc, partitioner,
                                        self.sender, self.host, self.gil, costs, partition_locks, metadata_lock,
                                        w.seconds if w.seconds > 0 else np.inf, s.max_chunk, self.jvm,
                                        sharing=1 if kind == "per-thread" else s.threads))
        if costs.batch:     # a batch a drain-time split starts is paid for by the thread whose records it holds
            busy = [wk for wk in workers if wk.count]
            acc.on_split = lambda record, busy=busy, firsts=np.array([wk.first_id for wk in busy]): \
                busy[int(np.searchsorted(firsts, record, "right")) - 1].owe_batch()
        return workers
