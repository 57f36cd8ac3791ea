"""Sweep throughput: configurations per minute, serially and with local worker processes (and on Dask if a
scheduler is given). Prints figures; never fails on time. On a shared machine the absolute figures are noisy:
compare the ratio within one run.

    .venv/bin/python benchmarks/bench_sweep.py [--records 100000] [--jobs 2] [--scheduler tcp://HOST:8786] [--dask-local 2]
"""
from __future__ import annotations

import argparse
import os
import time

from kafkasim.app import sweep as sw
from kafkasim.model.scenario import from_flat

# Kontur-like (experiment I's shape on profile kontur-2020), throttled at 100k records/s, 8 configurations.
BASE = {"name": "bench-sweep", "client.version": "2.4", "producer.acks": "all", "producer.enable.idempotence": False,
        "producer.compression.type": "lz4", "workload.throughput": 100_000, "workload.record_size": 256,
        "workload.payload": "random-bytes", "topic.partitions": 3, "topic.replication.factor": 3,
        "cluster.brokers": 3, "hardware.profile": "kontur-2020", "seed": 1}
VARY = ["batch.size=16384,32768,65536,131072", "linger.ms=0,5"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000, help="records per configuration (default 100,000)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--scheduler")
    ap.add_argument("--dask-local", type=int, metavar="N",
                    help="also run on a Dask LocalCluster of N single-threaded worker processes")
    args = ap.parse_args()
    cluster = None
    if args.dask_local:
        from dask.distributed import LocalCluster
        cluster = LocalCluster(n_workers=args.dask_local, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    base = from_flat({**BASE, "workload.records": args.records, "workload.warmup_records": args.records // 5})
    axes = sw.parse_axes(VARY)
    n = len(sw.grid_points(axes))
    print(f"{n} configurations of {args.records:,} records each ({' '.join(VARY)}); {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}")
    runs = [("serial", dict(jobs=1)), (f"{args.jobs} processes", dict(jobs=args.jobs))]
    if args.scheduler:
        runs.append((f"dask {args.scheduler}", dict(scheduler=args.scheduler)))
    if cluster is not None:
        runs.append((f"dask LocalCluster x{args.dask_local}", dict(scheduler=cluster.scheduler_address)))
    rates, rows = {}, {}
    for label, kw in runs:
        start = time.perf_counter()
        result = sw.sweep(base, axes, records=None, **kw)
        wall = time.perf_counter() - start
        rates[label] = n / wall * 60
        rows[label] = [{k: v for k, v in r.items() if k != sw.RUNTIME_COLUMN} for r in result.rows]
        print(f"{label:>24}: {wall:6.1f} s -> {rates[label]:6.1f} configurations/minute "
              f"({n * args.records / wall:,.0f} simulated records/s)")
    first = next(iter(rates))
    for label in list(rates)[1:]:
        same = rows[label] == rows[first]
        print(f"{label} vs {first}: {rates[label] / rates[first]:.2f}x, results identical: {same}")
    print(f"load average after: {os.getloadavg()[0]:.1f} (other work on the machine takes CPU from the processes)")
    if cluster is not None:
        cluster.close()


if __name__ == "__main__":
    main()
