"""The sweep engine: many predictions of one scenario with some settings varied.

`--vary KEY=V1,V2,...` gives a list of values (the sweep is the cartesian product of all lists); `--vary KEY=LOW:HIGH`
(or `LOW:HIGH:log`) gives a range, which only a Latin hypercube (`--samples N`, scipy.stats.qmc) can sample. A
list can be sampled too: the hypercube picks among its values with equal strata. Keys are the scenario's flat keys;
a bare Kafka property (`batch.size`, `partitions`) is accepted: the producer's property of that name, else the one
key ending in it.

Every point is one `simulate()` call. simulate is a pure function of the scenario (seed included), so a point's
result does not depend on where it ran: serially in this process, in local worker processes (`--jobs N`), or on a
Dask distributed cluster (`--scheduler tcp://HOST:8786`). Rows come back in the order of the points.
"""
from __future__ import annotations

import csv
import itertools
import json
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import yaml

from kafkasim.model.batch import Batch
from kafkasim.model.scenario import Scenario, ScenarioError
# Imported here, not in evaluate(): forked worker processes then run the model this process loaded.

from kafkasim.model.scenario_fields import FIELDS, check_value, resolve_key
from kafkasim.model.simulate import simulate

# Columns every row carries (after the varied keys), all from the model's result.
RESULT_COLUMNS = ("records_per_sec", "mb_per_sec", "avg_latency_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms",
                  "max_latency_ms", "request_latency_avg_ms", "batch_size_avg", "records_per_request_avg",
                  "bottleneck", "bottleneck_utilisation", "records_acked", "records_failed", "simulated_seconds")
# Wall time differs between runs and machines; everything else is a pure function of the scenario.
RUNTIME_COLUMN = "runtime_seconds"

SWEEP_RECORDS = None         # default simulated records per configuration: the scenario's own, as predict


# ---------------------------------------------------------------------------------------------------------------
# --vary parsing


@dataclass(frozen=True)
class Axis:
    """One varied key: a list of values, or a numeric range [low, high] (linear or log) for sampling."""
    key: str
    values: tuple = ()
    low: float | None = None
    high: float | None = None
    log: bool = False

    @property
    def is_range(self) -> bool:
        return self.low is not None

    def at(self, u: float) -> Any:
        """The axis value at quantile u in [0, 1) (Latin hypercube coordinate)."""
        if not self.is_range:
            return self.values[min(int(u * len(self.values)), len(self.values) - 1)]
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        return check_value(self.key, round(x) if FIELDS[self.key].kind is int else x)


def parse_values(text: str, key: str, label: str) -> tuple:
    """'16384,65536' -> the checked, distinct values of `key`; ScenarioError naming `label` for an empty one."""
    values = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise ScenarioError(f"{label}: empty value in the list")
        values.append(check_value(key, yaml.safe_load(part)))
    return tuple(dict.fromkeys(values))


def parse_vary(item: str) -> Axis:
    if "=" not in item:
        raise ScenarioError(f"--vary {item!r}: expected key=v1,v2,... or key=low:high[:log], "
                            f"e.g. --vary batch.size=16384,65536")
    name, text = item.split("=", 1)
    key = resolve_key(name)
    f = FIELDS[key]
    text = text.strip()
    if not text:
        raise ScenarioError(f"--vary {item!r}: no values given")
    if ":" in text and "," not in text and f.kind in (int, float):
        parts = text.split(":")
        log = len(parts) == 3 and parts[2].strip().lower() == "log"
        if len(parts) not in (2, 3) or (len(parts) == 3 and not log):
            raise ScenarioError(f"--vary {item!r}: a range is low:high or low:high:log")
        low, high = (check_value(key, yaml.safe_load(p)) for p in parts[:2])
        if not low < high:
            raise ScenarioError(f"--vary {item!r}: the range's low end must be below its high end")
        if log and low <= 0:
            raise ScenarioError(f"--vary {item!r}: a log range needs a positive low end")
        return Axis(key, low=low, high=high, log=log)
    return Axis(key, values=parse_values(text, key, f"--vary {item!r}"))


def parse_axes(items: Sequence[str]) -> list[Axis]:
    axes = [parse_vary(item) for item in items]
    seen: set[str] = set()
    for a in axes:
        if a.key in seen:
            raise ScenarioError(f"--vary {a.key} is given twice")
        seen.add(a.key)
    if not axes:
        raise ScenarioError("nothing to sweep: give at least one --vary key=v1,v2,...")
    return axes


def grid_points(axes: Sequence[Axis]) -> list[dict[str, Any]]:
    """The cartesian product of the axes' value lists."""
    ranged = [a.key for a in axes if a.is_range]
    if ranged:
        raise ScenarioError(f"--vary {ranged[0]} is a range: sample ranges with --samples N (Latin hypercube), "
                            f"or give a list of values")
    return [dict(zip([a.key for a in axes], combo)) for combo in itertools.product(*(a.values for a in axes))]


def lhs_points(axes: Sequence[Axis], samples: int, seed: int = 0) -> list[dict[str, Any]]:
    """`samples` points of a Latin hypercube over the axes (scipy.stats.qmc), reproducible from `seed`."""
    from scipy.stats import qmc

    if samples < 1:
        raise ScenarioError(f"--samples={samples} is not allowed: expected an integer ≥ 1")
    u = qmc.LatinHypercube(d=len(axes), seed=np.random.default_rng(seed)).random(samples)
    return [{a.key: a.at(float(u[i, j])) for j, a in enumerate(axes)} for i in range(samples)]


# ---------------------------------------------------------------------------------------------------------------
# Scenarios for the points

def with_records(base: Scenario, total_records: int | None) -> tuple[Scenario, str]:
    """`base` with about `total_records` records over all producers (warm-up scaled alike), and a note saying so.
    None keeps the scenario's own count."""
    w = base.workload
    if total_records is None or w.records == 0:
        return base, f"each configuration simulates the scenario's own {w.records or w.seconds} " \
                     f"{'records' if w.records else 's'} per producer"
    per = max(1, int(total_records) // base.producers)
    if per >= w.records:
        return base, f"each configuration simulates {w.records} records per producer (the scenario's own count)"
    s = base.shortened(per)
    return s, (f"each configuration simulates {per} records per producer ({s.workload.warmup_records} warm-up), "
               f"scaled down from the scenario's {w.records}: quicker, but a shorter run's figures are more its "
               f"start's than predict's")


def point_scenarios(base: Scenario, points: Sequence[dict[str, Any]]) -> list[Scenario]:
    """One validated scenario per point; a combination the model rejects stops the sweep with its message."""
    out = []
    for point in points:
        try:
            out.append(base.replace(**point))
        except ScenarioError as exc:
            combo = ", ".join(f"{k}={v}" for k, v in point.items())
            raise ScenarioError(f"{exc} (in the sweep point {combo})") from None
    return out


# ---------------------------------------------------------------------------------------------------------------
# Evaluation

def evaluate(scenario: Scenario) -> dict[str, Any]:
    """simulate() one scenario and reduce its result to a row of plain Python values (picklable, CSV-ready)."""
    r = simulate(scenario)
    p, m, v = r.perf_test, r.metrics, r.verdict
    row = {
        "records_per_sec": float(p["records_per_sec"]), "mb_per_sec": float(p["mb_per_sec"]),
        "steady_records_per_sec": float(r.steady_records_per_sec),
        "avg_latency_ms": float(p["avg_latency_ms"]), "p50_ms": int(p["p50_ms"]), "p95_ms": int(p["p95_ms"]),
        "p99_ms": int(p["p99_ms"]), "p999_ms": int(p["p999_ms"]), "max_latency_ms": float(p["max_latency_ms"]),
        "request_latency_avg_ms": float(m["request-latency-avg"]), "batch_size_avg": float(m["batch-size-avg"]),
        "records_per_request_avg": float(m["records-per-request-avg"]),
        "bottleneck": str(v["bottleneck"]), "bottleneck_utilisation": float(v["utilisation"]),
        "records_acked": int(r.records_acked), "records_failed": int(r.records_failed),
        "simulated_seconds": float(r.simulated_seconds),
        "utilisation": {k: float(x) for k, x in r.utilisation.items()},
        "broker_utilisation": _mean_broker_utilisation(r.brokers),
        "broker_utilisation_max": _mean_broker_utilisation(r.brokers, max),
        RUNTIME_COLUMN: float(r.runtime_seconds),
    }
    return row


def _mean_broker_utilisation(brokers: list[dict], reduce=np.mean) -> dict[str, float]:
    """Mean (or max) over brokers of each per-broker utilisation. These divide the whole run's busy time by the
    steady part's elapsed time, so they can exceed 1: use them for the spread between brokers, not as levels."""
    keys = {k for b in brokers for k in b["utilisation"]}
    return {k: float(reduce([b["utilisation"].get(k, 0.0) for b in brokers])) for k in sorted(keys)}


class Progress:
    """A one-line progress bar on stderr: done/total, percent, elapsed and an estimate of the time left."""

    def __init__(self, total: int, label: str = "sweep", stream=None, enabled: bool = True):
        self.total, self.label, self.done = total, label, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self.tty = getattr(self.stream, "isatty", lambda: False)()
        self.start = time.perf_counter()
        self._last_pct = -1
        self._draw()

    def update(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def _draw(self) -> None:
        if not self.enabled:
            return
        pct = int(100 * self.done / self.total)
        if not self.tty and self.done not in (0, self.total) and pct < self._last_pct + 10:
            return           # a log file gets a line per 10 %, a terminal a redrawn bar
        self._last_pct = pct
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        width = 24
        fill = int(width * self.done / self.total)
        bar = "#" * fill + "-" * (width - fill)
        text = (f"{self.label} [{bar}] {self.done}/{self.total} {pct:3d}% {_clock(elapsed)} elapsed"
                + (f", ~{_clock(eta)} left" if self.done and self.done < self.total else ""))
        end = "\n" if not self.tty or self.done == self.total else ""
        self.stream.write(("\r" if self.tty else "") + text + end)
        self.stream.flush()


def _clock(seconds: float) -> str:
    if math.isnan(seconds):
        return "?"
    seconds = int(round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def run_scenarios(scenarios: Sequence[Scenario], jobs: int = 1, scheduler: str | None = None,
                  progress: bool | Progress = False, label: str = "sweep",
                  rows: list | None = None, on_row: Callable[[int, dict], None] | None = None
                  ) -> list[dict[str, Any]]:
    """evaluate() every scenario — serially, in `jobs` local processes, or on the Dask scheduler at `scheduler` —
    and return the rows in the scenarios' order (filled into `rows` as they finish, if given, and each handed to
    on_row(index, row) as it finishes)."""
    bar = progress if isinstance(progress, Progress) else Progress(len(scenarios), label, enabled=bool(progress))
    rows = [None] * len(scenarios) if rows is None else rows
    if not scenarios:
        return []

    with Batch(jobs, scheduler) as batch:
        for i, row in batch.completed(evaluate, scenarios):
            rows[i] = row
            bar.update()
            if on_row is not None:
                on_row(i, row)
    return rows  # type: ignore[return-value]


# ---------------------------------------------------------------------------------------------------------------
# A whole sweep

@dataclass
class SweepResult:
    axes: list[Axis]
    points: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    note: str
    wall_seconds: float
    interrupted: bool = False       # Ctrl-C came before every point was done: these are the finished ones

    @property
    def keys(self) -> list[str]:
        return [a.key for a in self.axes]

    def table(self) -> list[dict[str, Any]]:
        """One flat dict per point: the varied values, then the result columns, then the wall time."""
        return [{**p, **{c: r[c] for c in RESULT_COLUMNS}, RUNTIME_COLUMN: r[RUNTIME_COLUMN]}
                for p, r in zip(self.points, self.rows)]

    def to_json(self) -> dict[str, Any]:
        return {"varied": self.keys, "note": self.note, "wall_seconds": self.wall_seconds,
                "points": [{"settings": p, "result": r} for p, r in zip(self.points, self.rows)]}


def sweep(base: Scenario, axes: Sequence[Axis], samples: int | None = None, sample_seed: int = 0,
          records: int | None = SWEEP_RECORDS, jobs: int = 1, scheduler: str | None = None,
          progress: bool = False, on_point: Callable[[dict, dict], None] | None = None) -> SweepResult:
    """Simulate every point; on_point(settings, row) hears each as it finishes (in any order)."""
    points = lhs_points(axes, samples, sample_seed) if samples else grid_points(axes)
    if records is not None and any(a.key in ("workload.records", "workload.seconds") for a in axes):
        records = None     # the sweep itself varies the run length
    scaled, note = with_records(base, records)
    scenarios = point_scenarios(scaled, points)
    start = time.perf_counter()
    rows: list = [None] * len(scenarios)
    try:
        run_scenarios(scenarios, jobs=jobs, scheduler=scheduler, progress=progress, rows=rows,
                      on_row=None if on_point is None else lambda i, row: on_point(points[i], row))
    except KeyboardInterrupt:          # the finished points are kept
        done = [i for i, row in enumerate(rows) if row is not None]
        return SweepResult(list(axes), [points[i] for i in done], [rows[i] for i in done],
                           f"{note}; interrupted after {len(done)} of {len(points)} configurations",
                           time.perf_counter() - start, interrupted=True)
    return SweepResult(list(axes), points, rows, note, time.perf_counter() - start)


# ---------------------------------------------------------------------------------------------------------------
# Output

def write_csv(result: SweepResult, path: str | Path) -> None:
    table = result.table()
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(table[0]) if table else result.keys)
        writer.writeheader()
        writer.writerows(table)


def write_json(result: SweepResult, path: str | Path) -> None:
    with open(path, "w") as fh:
        json.dump(result.to_json(), fh, indent=1)
        fh.write("\n")


def write_output(result: SweepResult, path: str | Path) -> None:
    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        write_json(result, path)
    elif suffix in (".csv", ""):
        write_csv(result, path)
    else:
        raise ScenarioError(f"--out {str(path)!r}: expected a .csv or .json file name")


def plot(result: SweepResult, path: str | Path) -> None:
    """Throughput and p99 latency against the varied settings. One key: both as lines; a grid of two keys: one line
    per value of the second; otherwise one scatter panel per key, coloured by p99."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = result.table()
    keys = result.keys
    numeric = [k for k in keys if all(isinstance(t[k], (int, float)) and not isinstance(t[k], bool) for t in table)]
    is_grid = not any(a.is_range for a in result.axes) and len(table) == math.prod(len(a.values) for a in result.axes)
    if len(keys) <= 2 and is_grid:
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
        x_key = keys[0]
        groups = sorted({t[keys[1]] for t in table}, key=str) if len(keys) == 2 else [None]
        for g in groups:
            sub = [t for t in table if g is None or t[keys[1]] == g]
            xs = [t[x_key] for t in sub]
            lab = None if g is None else f"{keys[1]}={g}"
            ax1.plot(xs, [t["records_per_sec"] for t in sub], "o-", label=lab)
            ax2.plot(xs, [max(t["p99_ms"], 0.5) for t in sub], "o-", label=lab)
        for ax, ylab in ((ax1, "records/s"), (ax2, "p99 latency, ms")):
            ax.set_xlabel(x_key)
            ax.set_ylabel(ylab)
            if x_key in numeric and _spread(table, x_key) > 8:
                ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
            if len(groups) > 1:
                ax.legend(fontsize=8)
        ax2.set_yscale("log")
    else:
        fig, axs = plt.subplots(1, len(keys), figsize=(4.2 * len(keys), 4), squeeze=False)
        p99 = np.array([max(t["p99_ms"], 0.5) for t in table], dtype=float)
        for ax, k in zip(axs[0], keys):
            xs = [t[k] if k in numeric else str(t[k]) for t in table]
            sc = ax.scatter(xs, [t["records_per_sec"] for t in table], c=np.log10(p99), cmap="viridis", s=18)
            ax.set_xlabel(k)
            ax.set_ylabel("records/s")
            if k in numeric and _spread(table, k) > 8:
                ax.set_xscale("log", base=2)
            ax.grid(alpha=0.3)
        fig.colorbar(sc, ax=axs[0].tolist(), label="log10 p99 latency, ms")
    fig.suptitle(f"kafkasim sweep ({len(table)} configurations) — {result.note[:90]}", fontsize=8)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def _spread(table, key) -> float:
    xs = [float(t[key]) for t in table]
    lo, hi = min(xs), max(xs)
    return hi / lo if lo > 0 else 0.0


def format_table(result: SweepResult) -> str:
    cols = result.keys + ["records_per_sec", "avg_latency_ms", "p99_ms", "bottleneck"]
    table = result.table()

    def cell(v: Any) -> str:
        if isinstance(v, float):
            return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.2f}"
        return str(v)

    rows = [[cell(t[c]) for c in cols] for t in table]
    heads = [c.replace("producer.", "").replace("_", " ") for c in cols]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(heads, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)
