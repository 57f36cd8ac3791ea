"""Parse what `kafka-producer-perf-test` (org.apache.kafka.tools.ProducerPerformance) prints.

Formats (ProducerPerformance.Stats, Kafka 4.3):
  window:  `%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.`
  total:   `%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max latency,
            %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.`
  steady state (with --warmup-records): the total line with `steady state records sent`.
  --print-metrics: a table `group:name:{tag=value, ...}   : %.3f` after a `Metric Name  Value` header.
  time in send() (validation/ProducerThreads.java only): `%d records sent by %d threads, %.3f us avg time in send().`
kafkasim's own runners for other clients print the same lines, so one parser reads every client.
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field

_NUM = r"(-?[\d.]+|NaN|-?Infinity)"
_RATE = rf"(\d+) records sent, {_NUM} records/sec \({_NUM} MB/sec\), {_NUM} ms avg latency, {_NUM} ms max latency"
WINDOW_RE = re.compile(rf"^{_RATE}\.$")
TOTAL_RE = re.compile(rf"^{_RATE}, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$")
STEADY_RE = re.compile(rf"^{_RATE.replace('records sent', 'steady state records sent', 1)}, (\d+) ms 50th, "
                       r"(\d+) ms 95th, (\d+) ms 99th, (\d+) ms 99\.9th\.$")
SEND_TIME_RE = re.compile(rf"^\d+ records sent by \d+ threads, {_NUM} us avg time in send\(\)\.$")
METRIC_RE = re.compile(r"^([\w.-]+):([\w.-]+):\{(.*)\}\s*: (\S+)\s*$")


@dataclass
class Window:
    records: int
    records_per_sec: float
    mb_per_sec: float
    latency_avg_ms: float
    latency_max_ms: float


@dataclass
class Total(Window):
    latency_p50_ms: int
    latency_p95_ms: int
    latency_p99_ms: int
    latency_p999_ms: int


@dataclass
class PerfOutput:
    windows: list[Window] = field(default_factory=list)
    total: Total | None = None
    steady_state: Total | None = None  # only with --warmup-records
    worker_latency_us: float | None = None   # mean time inside send(): the threaded tool prints it
    # "group:name" for the client-wide metric, "group:name{tag=value,...}" for per-node/per-topic ones
    metrics: dict[str, float | str | None] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def _number(text: str) -> float | None:
    value = float(text)  # float() reads Java's NaN and Infinity too
    return None if math.isnan(value) or math.isinf(value) else value  # JSON has neither


def _window(groups: tuple[str, ...]) -> dict:
    return {"records": int(groups[0]), "records_per_sec": _number(groups[1]), "mb_per_sec": _number(groups[2]),
            "latency_avg_ms": _number(groups[3]), "latency_max_ms": _number(groups[4])}


def _total(groups: tuple[str, ...]) -> Total:
    return Total(**_window(groups[:5]), latency_p50_ms=int(groups[5]), latency_p95_ms=int(groups[6]),
                 latency_p99_ms=int(groups[7]), latency_p999_ms=int(groups[8]))


def metric_key(group: str, name: str, tags: str) -> str:
    # client-id is the same on every line of one run: leave it out so keys compare across runs
    rest = [t.strip() for t in tags.split(",") if t.strip() and not t.strip().startswith("client-id=")]
    return f"{group}:{name}" + (f"{{{','.join(rest)}}}" if rest else "")


def parse(text: str) -> PerfOutput:
    out = PerfOutput()
    for line in text.splitlines():
        line = line.strip()
        if m := TOTAL_RE.match(line):
            out.total = _total(m.groups())
        elif m := STEADY_RE.match(line):
            out.steady_state = _total(m.groups())
        elif m := SEND_TIME_RE.match(line):
            out.worker_latency_us = _number(m.group(1))
        elif m := WINDOW_RE.match(line):
            out.windows.append(Window(**_window(m.groups())))
        else:
            read_metric(line, out.metrics)
    return out


def read_metric(line: str, metrics: dict) -> None:
    """A --print-metrics table line, if it is one, into `metrics` (Kafka's tools print them alike)."""
    m = METRIC_RE.match(line)
    if not m:
        return
    group, name, tags, value = m.groups()
    try:
        metrics[metric_key(group, name, tags)] = _number(value)
    except ValueError:
        metrics[metric_key(group, name, tags)] = value  # text, e.g. app-info:commit-id
