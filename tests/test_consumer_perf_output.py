"""kafka-consumer-perf-test's output as the live runs read it (validation/consumerperf.py)."""
from __future__ import annotations

from kafkasim.model.scenario import from_flat
from kafkasim.validation import consumerperf

FULL = """start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-25 11:32:39:590, 2026-11-25 11:32:41:723, 476.8372, 223.5523, 500000, 234411.6268, 648, 1485, 321.1025, \
336700.3367

Metric Name                                                                                        Value
consumer-fetch-manager-metrics:fetch-latency-avg:{client-id=perf-consumer-client}                : 2.200
consumer-fetch-manager-metrics:records-lag-max:{client-id=perf-consumer-client, topic=t, partition=0} : 499500.000
"""

SHORT = """start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
WARNING: Exiting before consuming the expected number of records: timeout (30000 ms) exceeded. You can use the \
--timeout option to increase the timeout.
2026-11-25 11:44:16:646, 2026-11-25 11:44:48:436, 596.3477, 18.7590, 610660, 19209.1853, 314, 31476, 18.9461, \
19400.8133
"""


def test_the_values_line_and_metrics():
    out = consumerperf.parse(FULL)
    r = out.result()
    assert r["records"] == 500000 and r["records_per_sec"] == 336700.3367 and r["rebalance_ms"] == 648
    assert r["overall_records_per_sec"] == 234411.6268 and r["fetch_ms"] == 1485
    assert out.metrics["consumer-fetch-manager-metrics:fetch-latency-avg"] == 2.2
    assert out.metrics["consumer-fetch-manager-metrics:records-lag-max{topic=t,partition=0}"] == 499500.0


def test_a_run_that_stopped_short_still_gives_its_figures():
    r = consumerperf.parse(SHORT).result()
    assert r["records"] == 610660 and r["fetch_ms"] == 31476


def test_the_command_carries_the_consumers_kafka_properties():
    sc = from_flat({"producers": 0, "consumers.groups": 1, "consumers.prefilled_records": 1000,
                    "consumer.max.poll.records": 100, "consumer.partition.assignment.strategy": "roundrobin"})
    props = consumerperf.consumer_properties(sc)
    assert props["max.poll.records"] == "100" and props["fetch.max.wait.ms"] == "500"
    assert props["partition.assignment.strategy"] == "org.apache.kafka.clients.consumer.RoundRobinAssignor"
    assert props["auto.offset.reset"] == "earliest"


def _instance(start: str, end: str, records: int, rebalance_ms: int, stopped_idle: bool = False) -> str:
    warning = ("WARNING: Exiting before consuming the expected number of records: timeout (30000 ms) exceeded.\n"
               if stopped_idle else "")
    return (f"start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, "
            f"fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n{warning}2026-11-26 20:25:{start}, 2026-11-26 20:25:{end}, "
            f"{records / 1024:.4f}, 1.0, {records}, 1.0, {rebalance_ms}, 1000, 1.0, 1.0\n")


def test_a_groups_instances_read_from_the_first_join_to_the_last_record():
    """Several kafka-consumer-perf-test processes in one group: records summed, the fetch window from the first
    instance's join to the last one's end; an instance that stopped on the idle timeout (another read past its
    share after a rebalance) read its last record the timeout before its end.time."""
    a = consumerperf.parse(_instance("14:772", "50:429", 599_881, 3326, stopped_idle=True))
    b = consumerperf.parse(_instance("14:695", "17:947", 600_119, 965))
    assert a.stopped_idle_ms == 30_000 and not b.stopped_idle_ms
    r = consumerperf.group_result([a, b])
    joined, last = 14.695 + 0.965, 50.429 - 30.05
    assert r["records"] == 1_200_000 and r["fetch_ms"] == round((last - joined) * 1000)
    assert abs(r["records_per_sec"] - 1_200_000 / (last - joined)) < 1e-6 * r["records_per_sec"]
    assert r["rebalance_ms"] == 965 and len(r["instances"]) == 2
    assert consumerperf.group_result([b]) == b.result()        # one instance: its own figures
    assert consumerperf.group_result([b, consumerperf.parse("")]) is None


def test_a_live_group_reads_equal_shares_or_the_error_says_what_fits():
    """Several instances measure a catch-up read only where each reads an equal share (instances dividing the
    partitions, records dividing among them); a tailing consumer is one instance."""
    import pytest

    from kafkasim.model.errors import UserError
    from kafkasim.validation.runners import check_supported
    read = {"producers": 0, "consumers.groups": 1, "consumers.prefilled_records": 1_200_000, "topic.partitions": 6}
    check_supported(from_flat({**read, "consumers.instances": 3}))
    with pytest.raises(UserError, match="instances that divide the partitions"):
        check_supported(from_flat({**read, "consumers.instances": 4}))
    with pytest.raises(UserError, match="instances that divide the partitions"):
        check_supported(from_flat({**read, "consumers.instances": 2, "consumers.prefilled_records": 1_000_001}))
    with pytest.raises(UserError, match="one tailing consumer"):
        check_supported(from_flat({"consumers.groups": 1, "consumers.instances": 2, "topic.partitions": 2,
                                   "consumers.start": "before-producers"}))
