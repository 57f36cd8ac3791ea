"""Direction tests from published measurements (/work/shared/reference/seed-data) and DESIGN.md's behaviours.

Each test takes a trend a real measurement showed and checks that the model shows it too, on the example scenarios
and hardware profiles as they are (nothing here is tuned to pass). Where the model does not show a published
trend the test is marked xfail with what the model gives instead, so the gap stays visible.

Runs are shorter than the published ones (tens of thousands of records, not a million); the trends are there
within the first fraction of a second of simulated time.
"""
import pytest

from conftest import cached, example, scenario

# --- VM 2-core study (vm-2core-batch-size.yaml) ------------------------------------------------------------------
# Its trends (8 KiB falls short, the latency against batch.size, gzip, acks=0) are checked by tests/test_reproduce.py
# on the runs at their published length: each started a fresh producer, and in a short run that cold start would
# outweigh the steady state the trends come from.

def test_vm_examples_are_the_published_shape():
    """The examples are what the study ran: Java 2.2, acks=1, linger 0, one partition, one broker, 2 shared cores."""
    s = example("vm-2core/03-50k-b8192.yaml")
    assert (s.client.version, s.producer.acks, s.producer.linger_ms) == ("2.2", "1", 0.0)
    assert (s.topic.partitions, s.cluster.brokers, s.hardware["colocated_cores"]) == (1, 1, 2)
    assert (s.workload.throughput, s.workload.record_size, s.producer.batch_size) == (50000, 1024, 8192)


def latency(result) -> float:
    return result.perf_test["avg_latency_ms"]


# --- Kontur 2020 (kontur-2020-producer-bottlenecks.yaml) ----------------------------------------------------------

def kontur(experiment: str, records: int, **overrides):
    return cached(example(f"kontur-2020/{experiment}.yaml", **{"workload.records": records,
                                                                 "workload.warmup_records": records // 10,
                                                                 **overrides}))


def rate(result) -> float:
    return result.perf_test["records_per_sec"]


def test_kontur_I_small_batches_make_the_sender_the_bottleneck():
    """I: 16 KiB batches at a 100k target reach 83.5k with 7.2 s of sender latency, sender-bound."""
    i = kontur("I", 100000)     # (at 40,000 records the window is 84.6 % busy: not yet saturated)
    assert i.verdict["bottleneck"] == "sender in-flight window"
    assert "in flight" in i.verdict["evidence"] and "3 brokers" in i.verdict["evidence"]
    assert rate(i) < 0.9 * 100000
    # the backlog, not the requests, makes the latency (published: 7.2 s against 9.8 ms per request)
    assert latency(i) > 3 * i.metrics["request-latency-avg"]


def test_kontur_I_a_thread_the_sender_holds_back_waits_in_send_for_buffer_memory():
    """I: 11.6 us in send() ≈ 1 / 83.5k records/s, the thread's whole time: once the backlog fills buffer.memory,
    BufferPool.allocate blocks send() (kafka-internals §4), so a sender-bound thread's time in send() is
    1/throughput, not its own cost. (A 2 MiB buffer fills within the short run, as 32 MiB did in the talk's.)"""
    i = kontur("I", 200000, **{"producer.buffer.memory": 2 * 1024 * 1024})
    assert i.verdict["bottleneck"] == "sender in-flight window"
    assert i.metrics["bufferpool-wait-ratio"] > 0.5
    assert i.worker_latency_us > 2 * kontur("II", 40000).worker_latency_us       # published 11.6 vs 3.5 us
    assert i.worker_latency_us == pytest.approx(1e6 / rate(i), rel=0.25)


def test_kontur_II_32k_batches_meet_the_target():
    """II: 32 KiB batches reach the 100k target with 5 ms of sender latency."""
    i, ii = kontur("I", 40000), kontur("II", 40000)
    assert rate(ii) > 0.95 * 100000 and ii.verdict["bottleneck"] == "none"
    assert latency(i) > 5 * latency(ii)
    assert i.metrics["record-queue-time-avg"] > 10 * ii.metrics["record-queue-time-avg"]


def test_kontur_I_more_partitions_raise_the_sender_ceiling():
    """More partitions per broker put more batches in each request, so the same in-flight window carries more
    records: unthrottled, experiment I's sender-bound throughput grows with partitions (3, 6, 9 on 3 brokers); at
    the 100k target 6 partitions already suffice."""
    ceilings = [kontur("I", 40000, **{"topic.partitions": p, "workload.throughput": -1}) for p in (3, 6, 9)]
    for r in ceilings:
        assert r.verdict["bottleneck"] == "sender in-flight window"
    per_request = [r.metrics["records-per-request-avg"] for r in ceilings]
    assert per_request[0] * 1.5 < per_request[1] and per_request[1] * 1.2 < per_request[2], per_request
    rates = [rate(r) for r in ceilings]
    assert rates[0] * 1.5 < rates[1] and rates[1] * 1.2 < rates[2], rates


def test_kontur_IV_one_worker_thread_caps_throughput():
    """IV: one thread at a 500k target reaches 282.6k, the worker thread's limit as the talk reads it
    (1e6 / 3.6 us ≈ 278k): the thread is busy almost all the time, in send() and in the application's own work."""
    iv = kontur("IV", 60000)
    assert iv.verdict["bottleneck"] == "worker threads"
    assert iv.utilisation["worker threads"] > 0.85
    per_record = iv.worker_latency_us + example("kontur-2020/IV.yaml").hardware["worker.app_us"]
    assert rate(iv) < 1e6 / per_record and rate(iv) < 0.7 * 500000


def test_kontur_VII_three_threads_on_six_partitions_contend_for_locks():
    vii = kontur("VII", 120000)
    assert vii.verdict["bottleneck"] == "lock contention"
    assert vii.utilisation["lock contention"] > 0.2
    assert vii.worker_latency_us > kontur("IV", 60000).worker_latency_us     # published 6.7 vs 3.6 us


def test_kontur_V_more_partitions_shorten_the_queues():
    """IV → V (3 → 6 partitions, one thread): each request carries a batch of both the broker's partitions, so the
    backlog IV built behind the sender's window drains (record-queue-time 963 → 34.5 ms) and V runs at the thread's
    own limit ("we hit the worker thread"), faster (282.6k → 343.5k)."""
    iv, v = kontur("IV", 120000), kontur("V", 120000)
    assert v.metrics["records-per-request-avg"] > iv.metrics["records-per-request-avg"]
    assert v.metrics["record-queue-time-avg"] < 0.5 * iv.metrics["record-queue-time-avg"]
    assert v.verdict["bottleneck"] == "worker threads" and v.utilisation["worker threads"] > 0.9
    assert rate(v) > 1.05 * rate(iv)


def test_kontur_VI_a_second_thread_helps():
    """V → VI (1 → 2 threads, 6 partitions): 343.5k → 414.6k."""
    assert rate(kontur("VI", 120000)) > 1.2 * rate(kontur("V", 120000))


def test_kontur_VII_a_third_thread_hurts():
    """VI → VII (2 → 3 threads on one sticky partition): 414.6k → 377.3k, contention on the deque lock."""
    assert rate(kontur("VII", 120000)) < rate(kontur("VI", 120000))


def test_kontur_XV_many_threads_hurt():
    """XIII → XV (3 → 9 threads, disjoint partitions): 610.7k → 551.8k, contention on the producer-wide lock."""
    # (long enough that the last records' wait, 17 ms in XIII against 7 in XV, does not weigh on its rate)
    xiii, xv = kontur("XIII", 240000), kontur("XV", 240000)
    assert rate(xv) < 0.95 * rate(xiii)
    assert xv.worker_latency_us > 2 * xiii.worker_latency_us          # published 15.2 vs 3.6 us


# --- threads sharing one producer on this project's 2 cores (validation/data/local-partition-choice.jsonl) -------

def shared_producer(threads: int, choice: str):
    """The measured configurations (examples/local-1broker.yaml with the matrix's settings) on a warm producer (no
    JIT, no first send: the measured runs were 3M records long, where those weigh little; a short run would be
    mostly them)."""
    return cached(scenario({"threads": threads, "workload.partition_choice": choice, "workload.records": 300000,
                            "workload.record_size": 256, "producer.acks": "1", "producer.batch.size": 65536,
                            "producer.linger.ms": 5, "producer.compression.type": "lz4", "topic.partitions": 18,
                            "hardware.profile": "local-2core-epyc", "hardware.jvm.jit_cpu_ms": 0,
                            "hardware.jvm.cold_factor": 1, "hardware.worker.first_send_ms": 0}))


def test_threads_on_partitions_of_their_own_beat_round_robin_beat_one_sticky_partition():
    """3 threads on 2 cores: own partitions 387k, round-robin over all 343k, the client's sticky partitioner 324k
    (2 threads: 382k, 321k, 284k). An append after another thread's costs CPU (the batch's cache lines move over),
    and the holder of a shared partition's lock keeps the others waiting. (The model: 2 threads 495k, 437k, 417k;
    3 threads 497k, 436k, 429k, the last gap narrower than measured.)"""
    for threads, gap in ((2, 1.02), (3, 1.01)):
        own, rr, sticky = (rate(shared_producer(threads, c)) for c in ("per-thread", "round-robin", "partitioner"))
        assert own > 1.02 * rr and rr > gap * sticky, (threads, own, rr, sticky)


# --- a producer on one core (live here: docs/fidelity.md, "One core for the producer") -------------------------

def one_core(version: str, cores: int, limit: float = 0.0):
    return cached(scenario({"client.version": version, "workload.records": 100000, "workload.record_size": 250,
                            "producer.acks": "1", "producer.batch.size": 8196, "producer.linger.ms": 0,
                            "topic.partitions": 10, "hardware.profile": "generic-server",
                            "hardware.client_cores": cores, "hardware.client_cpu_limit": limit}))


@pytest.mark.parametrize("version", ["2.2", "4.3"])
def test_a_producer_on_one_core_still_fills_its_batches(version):
    """Measured here with the 2.2 client pinned to one core (250 B, batch.size 8196, linger.ms 0, 10 partitions,
    the broker on the other core): 165k-202k records/s, batches of 6.3-7.8 KB, 145-283 records a request. Java
    starts a batch in every partition the round-robin reaches while its thread runs; the model once ended a chunk
    of appends at each partition without a batch, the Sender took the core after every record and sent it alone
    (10k records/s, 322-B batches with this host's profile)."""
    one, two = one_core(version, 1), one_core(version, 2)
    assert one.metrics["batch-size-avg"] > 0.5 * 8196, one.metrics["batch-size-avg"]
    assert rate(one) > 0.4 * rate(two), (rate(one), rate(two))


@pytest.mark.parametrize("version", ["2.2", "4.3"])
def test_half_a_core_as_a_cpu_limit_halves_a_cpu_bound_producer(version):
    """Measured here with the producer pinned to one core and held to half of it by a CFS quota (50 of every 100
    ms): 84k-91k records/s against 162k-245k on the whole core (0.44x with 2.2, 0.53x with 4.3)."""
    whole, half = one_core(version, 1), one_core(version, 1, limit=0.5)
    assert 0.35 < rate(half) / rate(whole) < 0.65, (rate(half), rate(whole))
    assert half.utilisation["host cpu"] > 0.9
    assert half.verdict["bottleneck"] == "host cpu"       # (send() waits out the quota: the CPU, not the thread)


# --- the perf tool's latency is the accumulator backlog (DESIGN behaviour 7) ----------------------------------

BACKLOG = {"client.version": "2.4", "producer.acks": "1", "workload.records": 20000, "network.bandwidth_mbit": 200}


@pytest.mark.parametrize("buffer_mib", [2, 4])
def test_unthrottled_latency_is_buffer_memory_over_throughput(buffer_mib):
    """Unthrottled into a 200 Mbit/s link: buffer.memory fills and a record waits about buffer.memory / throughput."""
    r = cached(scenario(BACKLOG, **{"producer.buffer.memory": buffer_mib << 20}))
    throughput = r.perf_test["records_per_sec"] * 1024            # value bytes per second
    expected_ms = (buffer_mib << 20) / throughput * 1000
    assert expected_ms / 1.5 < latency(r) < expected_ms * 1.5
    assert r.metrics["bufferpool-wait-ratio"] > 0.5


def test_doubling_buffer_memory_doubles_the_backlog_not_the_throughput():
    two = cached(scenario(BACKLOG, **{"producer.buffer.memory": 2 << 20}))
    four = cached(scenario(BACKLOG, **{"producer.buffer.memory": 4 << 20}))
    assert rate(four) == pytest.approx(rate(two), rel=0.05)
    assert latency(four) / latency(two) == pytest.approx(2.0, rel=0.25)


# --- compression trades worker CPU for bytes (DESIGN behaviour 6) ----------------------------------------------

# The generic profile: hand-set and not fitted, so these structural tests do not move with calibration.
LOCAL = {"client.version": "4.3", "producer.acks": "1", "producer.enable.idempotence": False,
         "producer.batch.size": 65536, "producer.linger.ms": 5, "workload.records": 15000}


def test_compression_helps_when_the_network_is_the_limit():
    capped = {**LOCAL, "network.bandwidth_mbit": 100}
    none = cached(scenario(capped))
    assert none.verdict["bottleneck"] == "network"
    for codec in ("gzip", "lz4"):
        assert rate(cached(scenario(capped, **{"producer.compression.type": codec}))) > 1.15 * rate(none), codec


def test_compression_hurts_when_the_cpu_is_the_limit():
    none = cached(scenario(LOCAL))
    assert none.verdict["bottleneck"] == "worker threads"
    for codec in ("gzip", "lz4"):
        assert rate(cached(scenario(LOCAL, **{"producer.compression.type": codec}))) < 0.95 * rate(none), codec


def test_a_codecs_own_compile_work_slows_a_fresh_jvm_on_a_small_host():
    """A fresh JVM's compilers also compile the codec's stream and library (compression.<codec>.jit_cpu_ms, measured
    by `calibrate host`): on two cores shared with the broker their CPU is taken from the run."""
    base = {**LOCAL, "hardware.profile": "local-2core", "producer.compression.type": "lz4",
            "hardware.jvm.jit_cpu_ms": 200, "workload.records": 60000}
    plain = rate(cached(scenario(base)))
    assert rate(cached(scenario(base, **{"hardware.compression.lz4.jit_cpu_ms": 1500}))) < 0.9 * plain
    # (a run without a codec compiles none)
    none = {**base, "producer.compression.type": "none"}
    assert rate(cached(scenario(none, **{"hardware.compression.lz4.jit_cpu_ms": 1500}))) == rate(cached(scenario(none)))


# --- round-trip time (DESIGN behaviour 9, measured on this machine) ------------------------------------------------

RTT_SMALL = {**LOCAL, "producer.batch.size": 16384, "producer.linger.ms": 0, "workload.records": 8000}
RTT_BIG = {**LOCAL, "producer.batch.size": 131072, "producer.linger.ms": 10, "workload.records": 8000}


def test_throughput_falls_with_rtt_for_small_batches():
    """16 KiB, linger 0: 63–75k records/s at loopback, 43k at +5 ms, 16k at +20 ms (measured here)."""
    rates = [rate(cached(scenario(RTT_SMALL, **{"network.rtt_ms": rtt}))) for rtt in (0, 5, 20)]
    assert rates[0] > 1.3 * rates[1] > 1.3 * 1.3 * rates[2], rates


@pytest.mark.xfail(strict=True, reason="model does not show it: with the window limit 2 × send.buffer.bytes / RTT "
                   "both shapes keep ≤ 5 % of their loopback throughput at +20 ms (generic profile, 128 KiB/linger "
                   "10: 235k → 12k records/s; 16 KiB/linger 0: 211k → 3.5k); measured here 120k → 78k (65 %) and "
                   "≈ 70k → 16k (23 %). The measurement added the delay with toxiproxy, whose local socket the "
                   "producer's window never sees")
def test_big_batches_and_linger_soften_the_rtt_penalty():
    kept_small = (rate(cached(scenario(RTT_SMALL, **{"network.rtt_ms": 20})))
                  / rate(cached(scenario(RTT_SMALL, **{"network.rtt_ms": 0}))))
    kept_big = (rate(cached(scenario(RTT_BIG, **{"network.rtt_ms": 20})))
                / rate(cached(scenario(RTT_BIG, **{"network.rtt_ms": 0}))))
    assert kept_big > 2 * kept_small
    assert kept_big > 0.4


def test_ignoring_keys_batches_keyed_records_like_unkeyed_ones():
    """partitioner.ignore.keys (KIP-794, ≥ 3.3): keyed records spread over 12 partitions make small batches; with the
    keys ignored the uniform sticky partitioner fills whole batches, as for null keys. Older clients lack the
    setting and keep hashing keys."""
    base = {"client.version": "3.9", "workload.keys": 1000, "topic.partitions": 12, "workload.records": 30000}
    keyed = cached(scenario(base))
    ignored = cached(scenario({**base, "producer.partitioner.ignore.keys": True}))
    old = cached(scenario({**base, "client.version": "3.2", "producer.partitioner.ignore.keys": True}))
    assert ignored.metrics["batch-size-avg"] > 2 * keyed.metrics["batch-size-avg"]     # 14.8 against 6.7 KB
    assert ignored.perf_test["records_per_sec"] > keyed.perf_test["records_per_sec"]
    assert old.metrics["batch-size-avg"] == pytest.approx(keyed.metrics["batch-size-avg"], rel=0.05)


def _share(result, broker: int) -> float:
    return result.brokers[broker]["bytes_in"] / sum(b["bytes_in"] for b in result.brokers)


def test_one_slow_broker_draws_the_sticky_partitioners_records_not_the_uniform_ones():
    """KIP-794's motivation (one of three brokers slower): with the sticky partitioner of 2.4–3.2 a partition's
    batches fill while they wait for the slow broker, and records that find their batch drained move on to another
    partition (KIP-480's abortOnNewBatch), so the slow broker's partitions keep records longest and get more of
    them, which makes it slower still; KIP-794's partitioner (≥ 3.3) switches by bytes produced, and its adaptive
    mode away from long queues. examples/slow-broker.yaml: broker 1 adds 20 ms to what it sends."""
    short = {"workload.records": 150_000, "workload.warmup_records": 15_000}
    sticky = cached(example("slow-broker.yaml", **short))
    uniform = cached(example("slow-broker.yaml", **short, **{"client.version": "3.9"}))
    even = cached(example("slow-broker.yaml", **short, **{"hardware.brokers.1.extra_latency_ms": 0}))
    assert _share(even, 1) == pytest.approx(1 / 3, abs=0.03)
    assert _share(sticky, 1) > 0.5 and _share(uniform, 1) < 0.36
    assert sticky.perf_test["p99_ms"] > 10 * uniform.perf_test["p99_ms"]
    assert sticky.perf_test["records_per_sec"] < 0.85 * uniform.perf_test["records_per_sec"]
    assert sticky.verdict["bottleneck"] == "sender in-flight window" and "broker 1's connection" in \
        sticky.verdict["evidence"]


def test_a_response_held_in_the_broker_serialises_its_connection_a_slow_network_does_not():
    """KIP-794's test slept 20 ms in each produce response of one broker, and the old partitioner then fell to
    0.84 MB/s of the 1 MB/s asked: a broker reads a connection's next request only once the previous response has
    left, so that broker served one request each 20 ms. The same 20 ms on the way back (extra_latency_ms) leaves
    5 requests in flight and the target met (examples/kip-794/)."""
    base = {"workload.records": 30_000}
    held = cached(example("kip-794/1-old-default.yaml", **base))
    wire = cached(example("kip-794/1-old-default.yaml", **base, **{"hardware.brokers.0.response_delay_ms": 0,
                                                                    "hardware.brokers.0.extra_latency_ms": 20}))
    assert held.perf_test["records_per_sec"] < 0.9 * 2048 <= 1.01 * wire.perf_test["records_per_sec"]
    assert _share(held, 0) > 0.8 > _share(wire, 0)     # (a latency alone draws records too: 61 %, not 91 %)
    assert held.perf_test["p99_ms"] > 20 * wire.perf_test["p99_ms"]


def test_a_broker_of_its_own_hardware_is_the_one_that_saturates():
    """hardware.brokers.<id>.<key> gives one broker its own hardware: a broker with a slow NIC is the busy one."""
    base = {"cluster.brokers": 3, "topic.partitions": 6, "workload.records": 20000, "workload.record_size": 1000,
            "producer.acks": "1"}
    r = cached(scenario({**base, "hardware.brokers.2.nic_mbit": 50}))
    nic = [b["utilisation"]["nic-in"] for b in r.brokers]
    assert nic[2] > 5 * max(nic[0], nic[1])
    assert r.brokers[2]["own_hardware"] == {"nic_mbit": 50.0} and r.brokers[0]["own_hardware"] == {}


def test_the_availability_timeout_steers_records_from_a_broker_that_cannot_take_them():
    """partitioner.availability.timeout.ms (KIP-794, ≥ 3.3, adaptive only): a leader whose connection has had data
    ready but no room for longer than the timeout gets no new partition switches, so the records wait less
    (the KIP's test: 40.06 → 36.29 ms mean with 5 ms). examples/kip-794/ at 20k records/s."""
    load = {"workload.records": 40_000, "workload.throughput": 20_000}
    off = cached(example("kip-794/4-availability-5ms.yaml", **load,
                         **{"producer.partitioner.availability.timeout.ms": 0}))
    on = cached(example("kip-794/4-availability-5ms.yaml", **load))
    plain = cached(example("kip-794/4-availability-5ms.yaml", **load,
                           **{"producer.partitioner.adaptive.partitioning.enable": False}))
    assert on.perf_test["avg_latency_ms"] < 0.8 * off.perf_test["avg_latency_ms"]
    assert _share(on, 0) <= _share(off, 0) < _share(plain, 0)
