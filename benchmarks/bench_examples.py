"""Every shipped example simulated at full length, one at a time, each in a fresh process: wall seconds,
simulated seconds, where its steady state was repeated from (model.fast_forward; '-' where it was not), records
(produced and consumed), batches simulated, simulated records a wall-second, wall ÷ simulated, peak memory (the child's max RSS). Prints
figures, the median and the worst; never fails on time. `--set model.fast_forward=false` times every event.

    .venv/bin/python benchmarks/bench_examples.py [EXAMPLE.yaml ...] [--set key=value ...] [--json OUT.jsonl]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
GOALS = "goals: wall ÷ simulated ≤ 0.1 on every example; median ≥ 2 M records a wall-second; peak ≤ 300 MB"

# Run in the child: one example, its figures as one JSON line.
CHILD = r"""
import json, resource, sys, time
from kafkasim.model.scenario import load_scenario
from kafkasim.model.simulate import Simulation
scenario = load_scenario(sys.argv[1], sys.argv[2:])
wall = time.perf_counter()
run = Simulation(scenario)
result = run.run()
wall = time.perf_counter() - wall
batches = [sum(len(producer.sender.batches) for producer in run.producers)]
print(json.dumps({"wall_s": wall, "simulated_s": result.simulated_seconds, "steady_from": result.steady_from,
                  "records": scenario.workload.records * scenario.producers
                             + sum(group["perf_test"]["records"] for group in result.consumers),
                  "batches": batches[0],
                  "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "records_per_sec": result.perf_test["records_per_sec"]}))
"""


def examples() -> list[pathlib.Path]:
    return sorted(p for p in (ROOT / "examples").rglob("*.yaml") if "snapshots" not in p.parts)


def run(path: pathlib.Path, overrides: list[str]) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), *overrides], capture_output=True, text=True)
    if out.returncode:
        return {"error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    figures["rate"] = figures["records"] / figures["wall_s"]
    figures["ratio"] = figures["wall_s"] / max(figures["simulated_s"], 1e-9)
    return figures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", type=pathlib.Path, help="examples (default: every shipped one)")
    ap.add_argument("--set", action="append", default=[], help="an override for every example")
    ap.add_argument("--json", type=pathlib.Path, help="also write each example's figures as a JSON line here")
    args = ap.parse_args()
    paths = args.paths or examples()
    print(f"{'example':<44} {'wall s':>7} {'sim s':>7} {'steady':>7} {'records':>9} {'batches':>8} {'rec/wall-s':>11} "
          f"{'wall/sim':>8} {'peak MB':>8}", flush=True)
    rows = []
    for path in paths:
        name = str(path.relative_to(ROOT) if path.is_absolute() and ROOT in path.parents else path)
        f = run(path.resolve(), args.set)
        f["example"] = name
        rows.append(f)
        if "error" in f:
            print(f"{name:<44} failed: {f['error']}", flush=True)
            continue
        steady = "-" if f["steady_from"] is None else f"{f['steady_from']:.2f}"
        print(f"{name:<44} {f['wall_s']:7.2f} {f['simulated_s']:7.2f} {steady:>7} {f['records']:9,} {f['batches']:8,} "
              f"{f['rate']:11,.0f} {f['ratio']:8.3f} {f['peak_mb']:8.0f}", flush=True)
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows))
    good = [r for r in rows if "error" not in r]
    if not good:
        return
    worst = max(good, key=lambda r: r["ratio"])
    heaviest = max(good, key=lambda r: r["peak_mb"])
    print(f"\nmedian {statistics.median(r['rate'] for r in good):,.0f} records a wall-second; "
          f"median wall/sim {statistics.median(r['ratio'] for r in good):.3f}; "
          f"worst wall/sim {worst['ratio']:.3f} ({worst['example']}); "
          f"peak {heaviest['peak_mb']:.0f} MB ({heaviest['example']}); "
          f"{sum(r['ratio'] > 0.1 for r in good)} of {len(good)} above 0.1")
    print(GOALS)


if __name__ == "__main__":
    main()
