"""`kafka-consumer-perf-test` (org.apache.kafka.tools.ConsumerPerformance): its command line and what it prints.

Output (Kafka 4.3, without --show-detailed-stats): a header
  `start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms,
   fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec`
and one line of values; with --print-metrics the consumer's metrics follow, in the producer tool's table format.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafkasim.validation.kafka_dist import java_command
from kafkasim.validation.perftest import read_metric
from kafkasim.validation.runners import CLIENT_HEAP, Target

HEADER = "start.time, end.time, data.consumed.in.MB"
# ConsumerPerformance stops when no record has come for this long (its --timeout): generous for a slow host.
IDLE_TIMEOUT_MS = 30_000


@dataclass
class ConsumerOutput:
    total: dict | None = None          # the values line, by the header's names
    metrics: dict[str, float | str | None] = field(default_factory=dict)

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


def parse(text: str) -> ConsumerOutput:
    out = ConsumerOutput()
    lines = [line.strip() for line in text.splitlines()]
    names: list[str] | None = None
    for line in lines:
        if line.startswith(HEADER):
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
        if key.startswith("consumer."):
            out[key[len("consumer."):]] = str(value).lower() if isinstance(value, bool) else (
                str(int(value)) if isinstance(value, float) and value.is_integer() else str(value))
    strategy = {"range": "org.apache.kafka.clients.consumer.RangeAssignor",
                "roundrobin": "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                "cooperative-sticky": "org.apache.kafka.clients.consumer.CooperativeStickyAssignor"}
    out["partition.assignment.strategy"] = strategy[out["partition.assignment.strategy"]]
    return out


def argv(lib: Path, sc, target: Target, topic: str, records: int, group: str) -> list[str]:
    # (the tool sets max.partition.fetch.bytes from its own --fetch-size, over any --command-property)
    args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--num-records", str(records),
            "--group", group, "--timeout", str(IDLE_TIMEOUT_MS), "--print-metrics",
            "--fetch-size", str(sc.consumer.max_partition_fetch_bytes)]
    if target.command_config is not None:
        args += ["--command-config", str(target.command_config)]
    args += ["--command-property", *(f"{k}={v}" for k, v in sorted(consumer_properties(sc).items()))]
    return [*target.client_prefix,
            *java_command(lib, "org.apache.kafka.tools.ConsumerPerformance", args, heap=CLIENT_HEAP)]
