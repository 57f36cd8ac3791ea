"""Hypothesis invariants over random small scenarios: what must hold whatever the settings.

* an uncompressed batch never exceeds batch.size unless it holds a single record;
* a connection never has more than max.in.flight.requests.per.connection requests outstanding;
* with max.in.flight = 1 a partition has at most one batch in flight and its records complete in send order;
* no record is lost: acknowledged + failed = sent, and nothing is acknowledged twice or before it was sent.

Examples are few and small (hundreds of records) and derandomised, so the suite stays fast and repeatable.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from conftest import batch_records, capture, max_in_flight_per_connection, scenario

# No shrinking: the examples are small already, and shrinking a simulation-backed failure can take minutes.
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None,
                    phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.too_slow])


@st.composite
def scenarios(draw, compression=False, max_in_flight=None, threads=None):
    """Flat keys of a small random scenario the schema accepts."""
    library = draw(st.sampled_from(["java", "java", "java", "kafka-python"]))
    version = draw(st.sampled_from(["2.2", "2.4", "3.9", "4.3"])) if library == "java" else "3.0"
    acks = draw(st.sampled_from(["0", "1", "all"]))
    brokers = draw(st.integers(1, 3))
    n_threads = threads if threads is not None else draw(st.integers(1, 3))
    partitions = draw(st.integers(1, 4))
    flat = {
        "client.library": library,
        "client.version": version,
        "seed": draw(st.integers(0, 1000)),
        "threads": n_threads,
        "producer.acks": acks,
        "producer.enable.idempotence": acks == "all" and draw(st.booleans()),
        "producer.batch.size": draw(st.integers(512, 65536)),
        "producer.linger.ms": draw(st.sampled_from([0, 0, 1, 5, 20])),
        "producer.max.in.flight.requests.per.connection": (max_in_flight if max_in_flight is not None
                                                           else draw(st.integers(1, 5))),
        "producer.compression.type": (draw(st.sampled_from(["none", "gzip", "lz4", "zstd"])) if compression
                                      else "none"),
        "workload.records": draw(st.integers(50, 600)),
        "workload.record_size": draw(st.integers(10, 4000)),
        "workload.throughput": draw(st.sampled_from([-1, -1, 5000, 20000, 100000])),
        "topic.partitions": max(partitions, n_threads if draw(st.booleans()) else 1),
        "cluster.brokers": brokers,
        "topic.replication.factor": draw(st.integers(1, brokers)),
        "network.rtt_ms": draw(st.sampled_from([0, 0, 1, 5])),
        "hardware.broker.service_cv": draw(st.sampled_from([0, 0, 1])),
    }
    if draw(st.booleans()):
        flat["workload.record_size_max"] = int(flat["workload.record_size"] * 1.5)
    if flat["topic.partitions"] >= n_threads and draw(st.booleans()):
        flat["workload.partition_choice"] = "per-thread"
    if draw(st.integers(0, 3)) == 0:      # a tight buffer: send() blocks, and may give up after max.block.ms
        flat["producer.buffer.memory"] = max(flat["workload.record_size"] * 2, 4 * flat["producer.batch.size"])
        flat["producer.max.block.ms"] = draw(st.sampled_from([1, 60000]))
    if draw(st.booleans()):
        flat["producers"] = 2
    return flat


def describe(flat):
    return ", ".join(f"{k}={v}" for k, v in flat.items())


@SETTINGS
@given(scenarios())
def test_uncompressed_batches_fit_batch_size_unless_single_record(flat):
    c = capture(scenario(flat))
    limit = flat["producer.batch.size"]
    for b in c.batches:
        assert b.records >= 1
        if b.records > 1:
            assert b.size_on_wire <= limit, (b.records, b.size_on_wire, describe(flat))
    assert sum(b.records for b in c.batches) == c.result.records_sent - c.result.records_failed


@SETTINGS
@given(scenarios())
def test_in_flight_requests_never_exceed_the_limit(flat):
    c = capture(scenario(flat))
    limit = flat["producer.max.in.flight.requests.per.connection"]
    peaks = max_in_flight_per_connection(c.requests)
    assert peaks and max(peaks.values()) <= limit, (peaks, describe(flat))


def partition_log(c):
    """Per partition: its batches in drain order."""
    out = {}
    for snd in c.senders:
        for b in snd.batches:
            out.setdefault((id(snd), b.partition), []).append(b)
    return out


@SETTINGS
@given(scenarios(max_in_flight=1))
def test_max_in_flight_1_keeps_partition_order(flat):
    c = capture(scenario(flat))
    rec = c.records
    request_of = {id(b): r for r in c.requests for b in r.batches}
    for (_, p), batches in partition_log(c).items():
        # one batch of a partition in flight at a time: the next is drained only once the Sender has handled the
        # previous one's response (the partition is muted until then)
        for a, b in zip(batches, batches[1:]):
            assert b.drained >= request_of[id(a)].completed, (p, describe(flat))
        # the records of a partition complete in the order they were appended (with one thread: sent)
        ids, appends = (np.concatenate(x) for x in zip(*(batch_records(b) for b in batches)))
        assert (np.diff(appends) >= -1e-12).all(), (p, describe(flat))
        assert (np.diff(rec.completed[ids]) >= -1e-12).all(), (p, describe(flat))
        if flat["threads"] == 1:
            assert (np.diff(rec.send_start[ids]) >= 0).all(), (p, describe(flat))


@SETTINGS
@given(scenarios(compression=True))
def test_no_record_is_lost(flat):
    c = capture(scenario(flat))
    r, rec = c.result, c.records
    total = flat["workload.records"] * flat.get("producers", 1)
    assert r.records_sent == total, describe(flat)
    assert r.records_acked + r.records_failed == total, describe(flat)
    assert rec.outstanding == 0
    # every record drained at most once, and only completed after it was sent
    ids = np.concatenate([b.record_ids() for b in c.batches]) if c.batches else np.array([], dtype=int)
    assert len(ids) == len(np.unique(ids))
    ok = ~rec.failed
    assert (rec.completed[ok] >= rec.send_start[ok]).all()
    assert set(ids.tolist()) == set(np.flatnonzero(ok).tolist())
    assert not math.isnan(r.perf_test["avg_latency_ms"])


# --- examples the exploration above found (kept as explicit regression cases) -------------------------------------

THROTTLE_ROUNDING = {
    "client.library": "kafka-python", "client.version": "3.0", "seed": 43, "threads": 3, "producer.acks": "0",
    "producer.enable.idempotence": False, "producer.batch.size": 29884, "producer.linger.ms": 0,
    "producer.max.in.flight.requests.per.connection": 3, "workload.records": 211, "workload.record_size": 867,
    "workload.throughput": 5000, "topic.partitions": 3, "network.rtt_ms": 1,
}

THROTTLE_ROUNDING_STICKY = {
    "client.version": "2.4", "seed": 115, "threads": 3, "producer.acks": "all", "producer.enable.idempotence": True,
    "producer.batch.size": 1591, "producer.linger.ms": 0, "producer.max.in.flight.requests.per.connection": 3,
    "producer.compression.type": "lz4", "workload.records": 82, "workload.record_size": 1877,
    "workload.record_size_max": 2815, "workload.throughput": 20000, "topic.partitions": 4, "cluster.brokers": 3,
    "topic.replication.factor": 3, "workload.partition_choice": "per-thread",
}

LOST_WAKEUP = {
    "client.library": "kafka-python", "client.version": "3.0", "seed": 255, "threads": 2, "producer.acks": "1",
    "producer.enable.idempotence": False, "producer.batch.size": 26677, "producer.linger.ms": 5,
    "producer.max.in.flight.requests.per.connection": 1, "producer.compression.type": "gzip",
    "workload.records": 235, "workload.record_size": 163, "workload.throughput": 5000, "topic.partitions": 4,
    "hardware.broker.service_cv": 1, "workload.partition_choice": "per-thread", "producers": 2,
}


@pytest.mark.parametrize("flat", [THROTTLE_ROUNDING, THROTTLE_ROUNDING_STICKY], ids=["random", "per-thread"])
def test_throttle_wakes_exactly_at_the_release_time(flat):
    c = capture(scenario(flat))
    assert c.result.records_acked == flat["workload.records"]


def test_sender_never_sleeps_through_a_linger_deadline():
    c = capture(scenario(LOST_WAKEUP))
    r = c.result
    assert r.records_acked + r.records_failed == r.records_sent == 470
    assert c.env.now < 1.0            # 470 records at 5000/s per producer take ≈ 0.05 s, not 600
