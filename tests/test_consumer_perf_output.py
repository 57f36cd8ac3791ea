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
