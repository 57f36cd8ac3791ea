"""Calibrate from a snapshot: a few metric values a user already has (a perf-test `--print-metrics` dump or a small
YAML), plus the scenario they were measured in. One observation; the fit adjusts as many parameters as there are
figures to match (broker cost per request from request-latency-avg, worker cost from the time in send(), ...).

A snapshot YAML names figures with the model's names:

    records_per_sec: 83550          # perf-test's total line, or the application's own throughput
    worker_latency_us: 11.6         # time inside send()
    request-latency-avg: 9.8        # producer metrics under their JMX names, Kafka's units
    request-rate: 1391
    batch-size-avg: 15066
"""
from __future__ import annotations

from pathlib import Path

import yaml

from kafkasim.calibration.runs import Observation
from kafkasim.model.scenario import load_scenario

# Which parameter each figure pins down best, in the order they are taken.
PARAMETER_FOR = {
    "request-latency-avg": "broker.request_us",
    "worker_latency_us": "worker.record_us",
    "records_per_sec": "broker.byte_ns",
}
KNOWN = set(PARAMETER_FOR) | {"request-rate", "batch-size-avg", "record-queue-time-avg", "records-per-request-avg", "p50_ms",
                              "p99_ms", "avg_latency_ms", "compression-rate-avg"}


def read_snapshot(path: str | Path) -> dict[str, float]:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"snapshot {str(path)!r} does not exist")
    data = yaml.safe_load(path.read_text()) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a snapshot is a mapping of figure names to values")
    out = {}
    for key, value in data.items():
        name = str(key).split(":", 1)[-1]           # "producer-metrics:request-latency-avg" works too
        if name not in KNOWN:
            raise ValueError(f"{path}: unknown figure {key!r}; known: {', '.join(sorted(KNOWN))}")
        if not isinstance(value, (int, float)) or value <= 0:
            raise ValueError(f"{path}: {key}={value!r} is not allowed: expected a positive number")
        out[name] = float(value)
    return out


def snapshot_observation(scenario_path: str | Path, figures: dict[str, float],
                         overrides: list[str] | tuple[str, ...] = ()) -> tuple[Observation, list[str]]:
    """The observation to fit, and the parameters the figures can determine."""
    scenario = load_scenario(scenario_path, overrides)
    flat = scenario.flat()
    obs = Observation(config_id=scenario.name, library=scenario.client.library, role="calibration",
                      scenario=flat, measured=dict(figures), spread={}, repeats=1,
                      weights={k: 1.0 for k in figures})
    parameters = [PARAMETER_FOR[f] for f in PARAMETER_FOR if f in figures]
    if not parameters:
        raise ValueError(f"the snapshot needs at least one of {', '.join(PARAMETER_FOR)} to fit anything")
    return obs, parameters
