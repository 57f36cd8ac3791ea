"""Simulated records per wall-second for the reference scenario: 1,000,000 records of 256 B, 64 KiB batches,
3 partitions (Kontur-like, unthrottled, one broker). Prints figures; never fails on time.

    .venv/bin/python benchmarks/bench_simulate.py [--repeat 3] [--records 1000000] [--set key=value ...]
"""
from __future__ import annotations

import argparse
import time

from kafkasim.model.scenario import from_flat

from kafkasim.model.scenario_fields import parse_overrides
from kafkasim.model.simulate import simulate

BASE = {
    "name": "bench-1M-256B-64KiB-3p",
    "client.library": "java", "client.version": "3.9",
    "producer.batch.size": 65536, "producer.linger.ms": 5, "producer.acks": "1",
    "producer.enable.idempotence": False,
    "workload.records": 1_000_000, "workload.record_size": 256, "workload.throughput": -1,
    "topic.partitions": 3,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    scenario = from_flat({**BASE, "workload.records": args.records, **parse_overrides(args.set)})
    rates = []
    for i in range(args.repeat):
        start = time.process_time()
        result = simulate(scenario)
        cpu = time.process_time() - start
        rates.append(args.records / cpu)
        print(f"run {i + 1}: {cpu:.2f} s CPU for {args.records} records -> {rates[-1]:,.0f} simulated records per "
              f"CPU-second (predicted {result.perf_test['records_per_sec']:,.0f} records/s, "
              f"{len(result.latencies_ms)} acked)")
    rates.sort()
    print(f"median {rates[len(rates) // 2]:,.0f} simulated records/s on one core (goal ≥ 10,000,000: issue #25)")


if __name__ == "__main__":
    main()
