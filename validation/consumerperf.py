"""`kafka-consumer-perf-test` (org.apache.kafka.tools.ConsumerPerformance): its command line and what it prints.

Output (Kafka 4.3, without --show-detailed-stats): a header
  `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms,
   fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec`
and one line of values; with --print-metrics the consumer's metrics follow, in the producer tool's table format.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from kafkasim.model.scenario_fields import given_to_client, kafka_text
from kafkasim.validation.kafka_dist import java_command
from kafkasim.validation.perftest import read_metric
from kafkasim.validation.runners import CLIENT_HEAP, Target

HEADER = "start.time, end.time, data.consumed.in.MB"
# ConsumerPerformance stops when no record has come for this long (its --timeout): generous for a slow host.
IDLE_TIMEOUT_MS = 30_000
# A group's instances: one left short by another that read past its share after a rebalance waits this long (the
# joins took at most 3.9 s here)
GROUP_IDLE_TIMEOUT_MS = 10_000
IDLE_WARNING = "WARNING: Exiting before consuming"
POLL_SECONDS = 0.1                 # its poll(100 ms): the idle timeout is noticed within one


@dataclass
class ConsumerOutput:
    total: dict | None = None          # the values line, by the header's names
    metrics: dict[str, float | str | None] = field(default_factory=dict)
    stopped_idle_ms: int = 0           # it stopped short: no record came for this long (its WARNING line)

    def result(self) -> dict | None:
        """The figures a run store keeps: records_per_sec is fetch.nMsg.sec, the rate once the group has joined
        (the model's consumer_report gives the same figure)."""
        t = self.total
        if t is None:
            return None
        return {"records": int(t["data.consumed.in.nMsg"]), "records_per_sec": t["fetch.nMsg.sec"],
                "mb_per_sec": t["fetch.MB.sec"], "mb": t["data.consumed.in.MB"],
                "overall_records_per_sec": t["nMsg.sec"], "rebalance_ms": t["rebalance.time.ms"],
                "fetch_ms": t["fetch.time.ms"]}


def group_result(outputs: list[ConsumerOutput]) -> dict | None:
    """One group's figures from its instances' outputs (one instance: its own result()): records and MB summed over
    the instances, the fetch window from the first one's join (its start.time plus its rebalance.time.ms) to the
    last one's end.time, as the model's consumer_report reckons a group; each instance's figures beside them.
    (Only a group that read every record is measured: the caller checks the records.)"""
    results = [out.result() for out in outputs]
    if not results or None in results:
        return None
    if len(results) == 1:
        return results[0]
    starts = [_clock(out.total["start.time"]) for out in outputs]
    # An instance that read past its share after a rebalance leaves another one short, which stops on the idle
    # timeout: its reading ended when its last record came, the timeout (and half a poll) before its end.time.
    last = max(_clock(out.total["end.time"])
               - (out.stopped_idle_ms / 1000 + POLL_SECONDS / 2 if out.stopped_idle_ms else 0) for out in outputs)
    joined = min(start + r["rebalance_ms"] / 1000 for start, r in zip(starts, results))
    fetch = max(last - joined, 1e-3)
    records, mb = sum(r["records"] for r in results), sum(r["mb"] for r in results)
    return {"records": records, "records_per_sec": records / fetch, "mb_per_sec": mb / fetch, "mb": mb,
            "overall_records_per_sec": records / max(last - min(starts), 1e-3),
            "rebalance_ms": round((joined - min(starts)) * 1000), "fetch_ms": round(fetch * 1000),
            "instances": results}


def _clock(text: str) -> float:
    """ConsumerPerformance's time stamps (yyyy-MM-dd HH:mm:ss:SSS, the client's local time) in seconds."""
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S:%f").timestamp()


def parse(text: str) -> ConsumerOutput:
    out = ConsumerOutput()
    lines = [line.strip() for line in text.splitlines()]
    names: list[str] | None = None
    for line in lines:
        if line.startswith(IDLE_WARNING):
            idle = re.search(r"timeout \((\d+) ms\)", line)
            out.stopped_idle_ms = int(idle.group(1)) if idle else IDLE_TIMEOUT_MS
        elif line.startswith(HEADER):
            names = [n.strip() for n in line.split(",")]
        elif names and out.total is None and len(values := [v.strip() for v in line.split(",")]) == len(names):
            # (the values line; a WARNING line may come between, when the tool stopped short)
            out.total = {n: (v if n.endswith(".time") else float(v)) for n, v in zip(names, values)}
        else:
            read_metric(line, out.metrics)
    return out


def consumer_properties(sc) -> dict[str, str]:
    """The consumer's Kafka properties as the scenario resolves them."""
    out = {}
    for key, value in sc.values:
        if key.startswith("consumer.") and given_to_client(key, value):
            out[key[len("consumer."):]] = kafka_text(value)
    strategy = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
    out["partition.assignment.strategy"] = strategy[out["partition.assignment.strategy"]]
    return out


def argv(lib: Path, sc, target: Target, topic: str, records: int, group: str) -> list[str]:
    # (the tool sets max.partition.fetch.bytes from its own --fetch-size, over any --command-property)
    idle = GROUP_IDLE_TIMEOUT_MS if sc.consumers.instances > 1 else IDLE_TIMEOUT_MS
    args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--num-records", str(records),
            "--group", group, "--timeout", str(idle), "--print-metrics",
            "--fetch-size", str(sc.consumer.max_partition_fetch_bytes)]
    if target.command_config is not None:
        args += ["--command-config", str(target.command_config)]
    args += ["--command-property", *(f"{k}={v}" for k, v in sorted(consumer_properties(sc).items()))]
    return [*target.client_prefix,
            *java_command(lib, "org.apache.kafka.tools.ConsumerPerformance", args, heap=CLIENT_HEAP)]
