"""Fit a hardware profile's cost parameters to measured runs.

scipy.optimize.least_squares works on the logarithms of the parameters (they are positive and span decades),
against log(predicted / measured) of throughput and the producer metrics. The model is deterministic for a given
seed, so every evaluation uses the same random numbers (common random numbers): the objective only changes when
the parameters do. Parameter uncertainty comes from the Jacobian at the solution.
"""
from __future__ import annotations

import math
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial

import numpy as np
from scipy.optimize import least_squares

from kafkasim.calibration.runs import RUN_HARDWARE, Observation
from kafkasim.model.batch import Batch
from kafkasim.model.hardware import HARDWARE_FIELDS, load_profile
from kafkasim.model.scenario import from_flat, resolve_hardware
from kafkasim.model.simulate import simulate

# What each run is fitted on, and how much it counts. Latency percentiles of unthrottled runs measure how far the
# backlog grew before the run ended, which is mostly noise here; throttled runs' latencies are informative.
WEIGHTS = {"records_per_sec": 1.0, "request-latency-avg": 0.7, "records-per-request-avg": 0.3}
THROTTLED_WEIGHTS = {"p50_ms": 0.3, "p99_ms": 0.3, "request-latency-avg": 0.7}

# A latency percentile whose repeats span more than a factor e^NOISY (≈ 1.65) counts less, in proportion: on a busy
# machine a throttled run's p50 can be 1 ms in one repeat and 4 s in the next, and no parameter should chase that.
# (Throughput is left alone: its repeats spread too, but their median is what the model is meant to hit.)
NOISY, NOISY_TARGETS = 0.5, ("p50_ms", "p99_ms")

MAX_SIGMA = 2.0
MAX_RECORDS = 1_000_000   # runs measured with more are simulated with this many (a cap on the fit's time;
                          # app/cli.py's --max-records help states it)
STEP = 0.05      # e-folds each parameter moves for its finite difference (×1.05)

# A weak prior keeps parameters the runs cannot pin down near the base profile's (physically set) values: one
# e-fold away costs as much as missing one figure by 10 %. It also keeps the fit well conditioned.
PRIOR_WEIGHT = 0.1

# A robust loss: residuals beyond F_SCALE (in log units, ≈ 25 %) count linearly, not squared, so a configuration
# the model cannot represent (or a noisy median) does not drag every parameter towards it.
LOSS, F_SCALE = "soft_l1", 0.25

# On a profile `kafkasim calibrate host` measured, the fit starts from the measured costs and holds each near its
# measurement by its standard error (one standard error costs what missing one figure by 10 % does): the costs that
# shape throughput most move only as far as their measurement allows, and the latencies nothing measures (the
# proxy's, the hand-offs' under load) are free.
MEASURED_PARAMETERS = ["worker.record_us", "worker.byte_ns", "sender.request_us", "broker.request_us",
                       "broker.byte_ns", "broker.fetch_us", "broker.handoff_us", "proxy_ms"]
MIN_SIGMA_LOG = 0.02       # a measured cost's prior is never tighter than ±2 %

DEFAULT_PARAMETERS = {
    # (the costs per byte, the codecs' too, are measured thread by thread, not fitted: see
    # validation/profiles/local-2core-start.yaml)
    "java": ["worker.record_us", "broker.request_us", "broker.handoff_us", "broker.fetch_us", "proxy_ms"],
    "kafka-python": ["worker.record_us", "sender.request_us", "sender.record_us", "worker.first_send_ms"],
}


def robust_cost(residuals: np.ndarray) -> float:
    """least_squares' objective under the soft_l1 loss: 0.5 · f² · Σ 2(√(1 + (r/f)²) − 1)."""
    z = np.square(residuals / F_SCALE)
    return 0.5 * F_SCALE ** 2 * float(np.sum(2.0 * (np.sqrt(1.0 + z) - 1.0)))


class _Budget(Exception):
    """The evaluation budget is spent."""


@dataclass
class Fit:
    library: str
    base_profile: str
    values: dict                  # parameter -> fitted value
    sigma_log: dict               # parameter -> standard deviation of its natural log
    residuals: dict               # config_id -> {target: log(pred/meas)}
    cost: float
    evaluations: int
    seconds: float
    fixed: dict = field(default_factory=dict)   # values set directly from the data (compression ratios)


QUIET_CORES = 0.05   # other processes' CPU below this is the machine's own bookkeeping (kernel threads, agents)


def scenario_for(obs: Observation, profile: str, params: dict, max_records: int | None = None):
    """The measured configuration on the profile being fitted, with the parameters under trial: as many records
    as were measured (a short run is mostly a cold start), or at most max_records; with the other processes' load
    measured during the runs, where it was recorded."""
    # (a broker's own hardware, hardware.brokers.*, is the measured cluster's, and a client's CPU limit the run's,
    # not the profile's: they stay)
    flat = {k: v for k, v in obs.scenario.items()
            if not k.startswith("hardware.") or k.startswith(("hardware.brokers.", *RUN_HARDWARE))}
    flat["hardware.profile"] = profile
    if (obs.background_cores or 0) >= QUIET_CORES:
        flat["hardware.background_cores"] = round(obs.background_cores, 2)
    flat.update({"hardware." + k: v for k, v in params.items()})
    flat["workload.records"] = simulated_records(obs, max_records)
    flat["workload.warmup_records"] = 0
    if obs.emulated:
        flat["network.proxy"] = True      # how `kafkasim measure` emulates network conditions (toxiproxy)
    return from_flat(flat)


def simulated_records(obs: Observation, max_records: int | None = None) -> int:
    """How many of a run's records the model simulates: as many as were measured, at most max_records
    (default MAX_RECORDS)."""
    cap = max_records or MAX_RECORDS
    return min(int(obs.scenario.get("workload.records", cap)), cap)


def _simulated(figures, scenario) -> dict:
    return figures(simulate(scenario))


def job_count(jobs: int | None) -> int:
    """Simulations to run side by side: as asked, else one per core."""
    return jobs or os.cpu_count() or 1


@contextmanager
def simulator(jobs: int | None = None, figures=None):
    """A map(scenarios) -> figures(result) for each (default: `predicted`), in order, that runs the simulations on
    `jobs` processes (default: one per core): the scenarios are independent, and each run is seeded, so the figures
    do not depend on it. It yields them as they are ready (the processes take the scenarios in turn)."""
    run = partial(_simulated, figures or predicted)
    with Batch(job_count(jobs)) as batch:
        yield lambda scenarios: batch.map(run, scenarios)


def predicted(result) -> dict:
    if not result.scenario.get("producers", 1):     # a consumer's read: kafka-consumer-perf-test's figures
        group = result.consumers[0]
        return {"records_per_sec": group["perf_test"]["fetch_records_per_sec"], **group["metrics"]}
    out = {k: result.perf_test[k] for k in ("records_per_sec", "avg_latency_ms", "p50_ms", "p99_ms")}
    out.update(result.metrics)
    out["worker_latency_us"] = result.worker_latency_us
    out["sender_cpu_s"] = result.utilisation["sender thread"] * result.simulated_seconds    # (one producer's)
    out["worker_cpu_s"] = (result.utilisation["worker threads"] * result.simulated_seconds
                           * int(result.scenario.get("threads", 1)))                          # (its threads')
    e2e = result.consumers[0]["end_to_end_ms"] if result.consumers else None
    if e2e:
        out["e2e_p50_ms"], out["e2e_p99_ms"] = e2e["p50"], e2e["p99"]
    return out


def residuals_of(obs: Observation, pred: dict) -> dict:
    weights = obs.weights or {**WEIGHTS, **(THROTTLED_WEIGHTS if obs.throttled else {})}
    out = {}
    for target, weight in weights.items():
        m, p = obs.measured.get(target), pred.get(target)
        if m and m > 0 and p is not None:
            noise = obs.log_range.get(target, 0.0) if target in NOISY_TARGETS else 0.0
            out[target] = weight * min(1.0, NOISY / noise if noise else 1.0) * math.log(max(p, 1e-6) / m)
    return out


def compression_ratios(observations: list[Observation]) -> dict:
    """compression-rate-avg is measured directly: take it per codec and payload instead of fitting it."""
    seen: dict[str, list[float]] = {}
    for obs in observations:
        codec = obs.scenario.get("producer.compression.type", "none")
        rate = obs.measured.get("compression-rate-avg")
        if codec != "none" and rate:
            key = f"compression.{codec}.ratio.{obs.scenario.get('workload.payload', 'random-letters')}"
            seen.setdefault(key, []).append(rate)
    return {k: float(np.median(v)) for k, v in seen.items()}


def measured_errors(profile: str, library: str) -> dict[str, float]:
    """The standard errors `kafkasim calibrate host` measured the profile's costs with, by key ({} for a profile it
    did not measure)."""
    try:
        provenance = load_profile(profile).get("provenance")
    except ValueError:
        return {}
    record = (provenance.get(library) or {}) if isinstance(provenance, dict) else {}
    return {k: float(v) for k, v in (record.get("standard_errors") or {}).items() if v is not None}


def fit(observations: list[Observation], base_profile: str, parameters: list[str] | None = None,
        max_records: int | None = None, max_evaluations: int = 60, progress=None,
        jobs: int | None = None) -> Fit:
    progress = progress or sys.stderr       # (looked up now: a stream bound at import may be closed since)
    if not observations:
        raise ValueError("no runs to fit: check the run store and --select")
    library = observations[0].library
    if any(o.library != library for o in observations):
        raise ValueError("fit one client library at a time (use --client)")
    errors = measured_errors(base_profile, library)
    parameters = parameters or (MEASURED_PARAMETERS if errors else DEFAULT_PARAMETERS[library])
    for p in parameters:
        if p not in HARDWARE_FIELDS:
            raise ValueError(f"unknown parameter {p!r}: expected hardware keys such as worker.record_us")
    fixed = compression_ratios(observations)
    _, start_values = resolve_hardware({"profile": base_profile}, library)
    # Search z = log(value / start): starting at 0 gives least_squares a first trust region of one e-fold
    # (with raw log-values it would start with steps of e^10).
    start = np.maximum([float(start_values[p]) for p in parameters], 1e-3)
    x0 = np.zeros(len(parameters))
    # the prior's width per parameter, in e-folds: a measured cost's relative standard error, else 1 (weak)
    width = np.array([max(MIN_SIGMA_LOG, errors[p] / s) if p in errors else 1.0 for p, s in zip(parameters, start)])
    started, count = time.time(), [0]
    last: dict = {}
    best = {"cost": math.inf, "x": x0}
    limit = [max_evaluations]

    def fun(x: np.ndarray) -> np.ndarray:
        if count[0] >= limit[0]:
            raise _Budget()
        params = {**fixed, **dict(zip(parameters, start * np.exp(x)))}
        out, by_config = [], {}
        preds = run([scenario_for(obs, base_profile, params, max_records) for obs in observations])
        for obs, pred in zip(observations, preds):
            res = residuals_of(obs, pred)
            by_config[obs.config_id] = res
            out.extend(res.values())
        out.extend(PRIOR_WEIGHT * x / width)      # the prior: each parameter's distance from the base profile
        f = np.asarray(out)
        count[0] += 1
        cost = robust_cost(f)
        last.update(by_config=by_config, x=np.array(x), f=f)
        if cost < best["cost"]:
            best.update(cost=cost, x=np.array(x), by_config=by_config)
        print(f"  evaluation {count[0]:3d}: cost {cost:.4f}  ({time.time() - started:.0f} s)", file=progress,
              flush=True)
        return f.copy()               # (least_squares scales its copy in place under a robust loss)

    def jacobian(x: np.ndarray) -> np.ndarray:
        """Forward differences of STEP e-folds. (scipy's own would step 1.5e-8 where x = 0, i.e. at the start,
        and the simulation does not move for that: the first Jacobian came out as noise.)"""
        f0 = last["f"] if "x" in last and np.array_equal(last["x"], x) else fun(x)
        columns = [(fun(x + STEP * unit) - f0) / STEP for unit in np.eye(len(x))]
        last.update(x=np.array(x), f=f0)
        return np.column_stack(columns)

    print(f"fitting {', '.join(parameters)} to {len(observations)} configurations ({library})", file=progress)
    with simulator(jobs) as run:
        try:
            solution = least_squares(fun, x0, jac=jacobian, bounds=(x0 - 7.0, x0 + 7.0), x_scale=1.0,
                                     loss=LOSS, f_scale=F_SCALE)
            x, jac, residuals, cost = solution.x, solution.jac, solution.fun, float(solution.cost)
        except _Budget:
            # Out of evaluations: keep the best point seen; its Jacobian by forward differences for the uncertainty.
            print(f"  evaluation budget ({max_evaluations}) spent: keeping the best point", file=progress)
            limit[0] = count[0] + len(parameters) + 1   # the evaluations the Jacobian needs
            x, cost = best["x"], best["cost"]
            residuals = fun(x)
            best["by_config"] = last["by_config"]
            jac = jacobian(x)
    dof = max(1, len(residuals) - len(parameters))
    s2 = 2.0 * cost / dof
    cov = np.linalg.pinv(jac.T @ jac) * s2
    # A parameter the runs cannot pin down gets a huge σ; cap it (×/÷ e² ≈ 7.4) so bands stay finite.
    sigma = np.minimum(np.sqrt(np.clip(np.diag(cov), 0.0, None)), MAX_SIGMA)
    return Fit(library, base_profile, dict(zip(parameters, (start * np.exp(x)).round(6).tolist())),
               dict(zip(parameters, sigma.round(4).tolist())), best["by_config"], cost,
               count[0], time.time() - started, fixed)
