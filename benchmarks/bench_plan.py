"""Plan wall time for the Kontur talk's production shape: 3,000,000 records/s of 500–1000 B, RF 3, acks=all (the
talk ran it on 18 brokers). The issue asks for under 2 minutes on this machine. Prints figures; never fails.

    .venv/bin/python benchmarks/bench_plan.py [--profile generic-server] [--payload random-bytes] [--jobs 2] [--no-sensitivity]
"""
from __future__ import annotations

import argparse
import os
import time

from kafkasim.app import plan as pl
from kafkasim.app.plan_command import parse_record_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--profile", default="generic-server")
    ap.add_argument("--target-rps", type=float, default=3_000_000)
    ap.add_argument("--record-size", default="500-1000")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--payload", default="random-letters", help="random-letters (compressible) or random-bytes")
    ap.add_argument("--sim-seconds", type=float)
    ap.add_argument("--no-sensitivity", action="store_true")
    ap.add_argument("--quiet", action="store_true", help="print only the figures, not the whole plan")
    args = ap.parse_args()
    size, size_max = parse_record_size(args.record_size)
    req = pl.Request(target_rps=args.target_rps, record_size=size, record_size_max=size_max, acks="all", rf=3,
                     profile=args.profile, sim_seconds=args.sim_seconds, payload=args.payload)
    print(f"plan for {args.target_rps:,.0f} records/s of {args.record_size} B, RF 3, acks=all, profile "
          f"{args.profile}, payload {args.payload}, {args.jobs} processes; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    plan = pl.Planner(req, jobs=args.jobs, progress=True).run(sensitivity=not args.no_sensitivity)
    wall = time.perf_counter() - start
    if not args.quiet:
        print(plan.text())
        print()
    b = plan.best
    answer = f"{b.shape.text()}; {b.settings.text()}" if b else "no plan"
    print(f"plan: {answer}")
    print(f"wall time {wall:.1f} s ({plan.search_seconds:.1f} s search, {len(plan.evaluations)} search "
          f"evaluations + {len(plan.sensitivity)} sensitivity runs of {plan.sim_seconds:.2f} s simulated traffic "
          f"each); target < 120 s: {'met' if wall < 120 else 'NOT met'}")


if __name__ == "__main__":
    main()
