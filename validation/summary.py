"""Per-configuration medians and run-to-run spread of a run store:  python -m kafkasim.validation.summary FILE"""
from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

from kafkasim.calibration.runs import perf_figures
from kafkasim.validation.store import RunStore


def brokers_us(cpu: dict | None, seconds: float, records: int | None) -> float | None:
    """The CPU the brokers took per record sent, in µs, from a CpuWatch reading, where they ran on this host (None
    elsewhere): a cold broker, or one of its slow phases, shows here (0.5–0.7 µs warm on this project's machine,
    1.0–2.0 otherwise)."""
    if not cpu or not cpu.get("cluster_cores") or not records:
        return None
    return 1e6 * cpu["cluster_cores"] * seconds / records


def brokers_us_per_record(record: dict) -> float | None:
    """brokers_us() of a stored run."""
    return brokers_us((record.get("environment") or {}).get("cpu_during_run"), record.get("seconds", 0.0),
                      (record.get("result") or {}).get("records"))


def spread(values: list[float]) -> dict:
    """Median and run-to-run spread: (max − min) / median, and the coefficient of variation."""
    med = statistics.median(values)
    return {"n": len(values), "median": med, "min": min(values), "max": max(values),
            "range_pct": 100 * (max(values) - min(values)) / med if med else None,
            "cv_pct": 100 * statistics.pstdev(values) / statistics.mean(values) if len(values) > 1 and med else 0.0}



def configuration(runs: list[dict]) -> dict:
    """One configuration's successful runs: medians and run-to-run spreads of its figures."""
    tput, avg, p99 = (spread([perf_figures(r).get(k, 0.0) for r in runs])
                      for k in ("records_per_sec", "latency_avg_ms", "latency_p99_ms"))
    brokers = [b for b in map(brokers_us_per_record, runs) if b is not None]
    return {"config_id": runs[0]["config_id"], "client": runs[0]["client"]["library"], "role": runs[0].get("role"),
            "n": tput["n"], "rec_per_sec": tput["median"], "tput_range_pct": tput["range_pct"],
            "tput_cv_pct": tput["cv_pct"], "avg_ms": avg["median"], "avg_range_pct": avg["range_pct"],
            "p99_ms": p99["median"], "brokers_us": (min(brokers), max(brokers)) if brokers else None,
            "errors": sum(r.get("delivery_errors") or 0 for r in runs)}


def table(path: Path) -> list[dict]:
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in RunStore(path).records():
        if r.get("ok"):
            groups[(r["config_id"], r["client"]["library"], r["key"])].append(r)
    return [configuration(runs) for runs in groups.values()]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m kafkasim.validation.summary RUNS.jsonl", file=sys.stderr)
        return 2
    rows = table(Path(argv[0]))
    print(f"{'config':<32} {'client':<12} {'role':<11} {'n':>2} {'rec/s':>8} {'range%':>6} {'cv%':>5} "
          f"{'avg ms':>8} {'range%':>6} {'p99 ms':>7} {'errors':>6} {'brokers us/rec':>14}")
    for r in rows:
        # the brokers' CPU a record, lowest–highest run: a wide span marks runs in a cold or slow broker
        brokers = "{:.2f}–{:.2f}".format(*r["brokers_us"]) if r["brokers_us"] else "–"
        print(f"{r['config_id']:<32} {r['client']:<12} {r['role'] or '':<11} {r['n']:>2} {r['rec_per_sec']:>8.0f} "
              f"{r['tput_range_pct']:>6.0f} {r['tput_cv_pct']:>5.1f} {r['avg_ms']:>8.1f} "
              f"{r['avg_range_pct'] or 0:>6.0f} {r['p99_ms']:>7.0f} {r['errors']:>6} {brokers:>14}")
    if rows:
        ranges = sorted(r["tput_range_pct"] for r in rows)
        print(f"throughput range (max−min)/median over {len(rows)} configs: median {ranges[len(ranges) // 2]:.0f} %, "
              f"max {ranges[-1]:.0f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
