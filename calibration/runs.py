"""Measured runs as the calibration sees them: one Observation per configuration, the median of its repeats."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

def _in_window(kind: str):
    """A Java run's `kind` thread's CPU-seconds from its producer's start on (runs measured since 2026-11-27 store
    the threads' CPU at that start: before it, the JVM's start-up), or None."""
    def value(run: dict) -> float | None:
        cpu = (run.get("environment") or {}).get("cpu_during_run") or {}
        total, start = cpu.get("client_threads") or {}, cpu.get("client_threads_at_start")
        return total[kind] - start.get(kind, 0.0) if start and kind in total else None
    return value


# Hardware a measured run's settings carry, the run's own rather than the profile's: `kafkasim measure` applies it
RUN_HARDWARE = ("hardware.client_cpu_limit", "hardware.cpu_period_ms")


def perf_figures(run: dict) -> dict:
    """A run's perf-test figures: its steady-state line when it had warm-up records (the model leaves them out of
    every figure, as that line does), else its total line."""
    return run.get("steady_state") or run.get("result") or {}


def _perf(key: str):
    return lambda run: perf_figures(run).get(key)


# What a run measured, under the model's names: perf-test's figures and the producer metrics (Kafka's units, ms);
# a path into the run's record, or a function of it.
TARGETS = {
    "records_per_sec": _perf("records_per_sec"),
    "avg_latency_ms": _perf("latency_avg_ms"),
    "p50_ms": _perf("latency_p50_ms"),
    "p99_ms": _perf("latency_p99_ms"),
    "request-latency-avg": ("metrics", "producer-metrics:request-latency-avg"),
    "batch-size-avg": ("metrics", "producer-metrics:batch-size-avg"),
    "record-queue-time-avg": ("metrics", "producer-metrics:record-queue-time-avg"),
    "records-per-request-avg": ("metrics", "producer-metrics:records-per-request-avg"),
    "compression-rate-avg": ("metrics", "producer-metrics:compression-rate-avg"),
    # the Sender thread's CPU-seconds (Java runs measured since 2026-11-22: kafkasim measure reads /proc)
    "sender_cpu_s": ("environment", "cpu_during_run", "client_threads", "sender"),
    # ... and the worker's (perf-test's main thread) inside perf-test's window
    "worker_cpu_s": _in_window("worker"),
    # the worker threads' mean time inside send() (runs of validation/ProducerThreads.java, which measures it)
    "worker_latency_us": ("worker_latency_us",),
    # a consumer tailing the producer (validation/TailConsumer.java): poll() less each record's CreateTime
    "e2e_p50_ms": ("end_to_end", "e2e_p50_ms"),
    "e2e_p99_ms": ("end_to_end", "e2e_p99_ms"),
}


@dataclass
class Observation:
    config_id: str
    library: str
    role: str                      # "calibration" or "held-out"
    scenario: dict                 # the resolved flat scenario that was measured
    measured: dict                 # target -> median over repeats
    spread: dict                   # target -> (max − min) / median over repeats
    repeats: int
    runs: list = field(repr=False, default_factory=list)
    weights: dict | None = None    # target -> weight, when the figures to match are not the usual ones
    log_range: dict = field(default_factory=dict)   # target -> ln(max / min) over repeats: how repeatable it is
    background_cores: float | None = None           # median CPU other processes took during the runs, if recorded

    @property
    def throttled(self) -> bool:
        return float(self.scenario.get("workload.throughput", -1)) > 0

    def run_values(self, target: str) -> list[float]:
        """`target` in each single run that has it."""
        return _values(self.runs, TARGETS[target])

    @property
    def emulated(self) -> bool:
        """Measured through `kafkasim measure`'s network emulation (added RTT, a bandwidth cap or a slow broker,
        via toxiproxy)."""
        sc = self.scenario
        return bool(float(sc.get("network.rtt_ms", 0)) or float(sc.get("network.bandwidth_mbit", 0))
                    or any(k.endswith(".extra_latency_ms") and float(v) for k, v in sc.items()))


def _values(runs: list[dict], where) -> list[float]:
    """The number at path `where` (or `where(run)`) in each run that has one."""
    out = []
    for run in runs:
        if callable(where):
            value = where(run)
        else:
            value = run
            for key in where:
                value = value.get(key) if isinstance(value, dict) else None
        if isinstance(value, (int, float)) and value == value:
            out.append(float(value))
    return out


def load_observations(path: str | Path, library: str | None = None, role: str | None = None,
                      select: str | None = None) -> list[Observation]:
    """Group a run store (one JSONL record per run) by configuration and client; medians over the repeats."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"run store {str(path)!r} does not exist")
    groups: dict[tuple[str, str], list[dict]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            run = json.loads(line)
        except json.JSONDecodeError:
            raise ValueError(f"{path}:{n}: not a JSON line") from None
        if not run.get("ok", True) or not run.get("result"):
            continue
        lib = run["client"]["library"]
        if library and lib != library:
            continue
        if role and run.get("role") != role:
            continue
        if select and select not in run.get("config_id", ""):
            continue
        groups.setdefault((run.get("config_id", "?"), lib), []).append(run)
    out = []
    for (config_id, lib), runs in sorted(groups.items()):
        measured, spread, log_range = {}, {}, {}
        for target, where in TARGETS.items():
            values = _values(runs, where)
            if values:
                median = float(np.median(values))
                measured[target] = median
                spread[target] = (max(values) - min(values)) / median if median else 0.0
                if min(values) > 0:
                    log_range[target] = math.log(max(values) / min(values))
        # other processes' CPU, and the brokers' JIT compilers' (a freshly started broker compiles for minutes, a
        # cost of its start the model leaves out): load on the host that is not the work modelled
        others = [r["environment"]["cpu_during_run"]["other_cores"]
                  + r["environment"]["cpu_during_run"].get("cluster_jit_cores", 0.0) for r in runs
                  if (r.get("environment") or {}).get("cpu_during_run")]
        out.append(Observation(config_id, lib, runs[0].get("role", "held-out"), runs[0]["scenario"], measured,
                               spread, len(runs), runs, log_range=log_range,
                               background_cores=float(np.median(others)) if others else None))
    return out
