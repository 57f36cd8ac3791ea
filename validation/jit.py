"""Where a fresh Java producer's CPU goes, second by second: `python -m kafkasim.validation.jit SCENARIO`.

One perf-test run of the scenario's producer (as `kafkasim measure` runs it), with the CPU time of each of its JVM's
threads read from /proc every second and summed by kind: the worker (perf-test's main thread), the Sender
(kafka-producer-network-thread), the C1 and C2 JIT compiler threads, GC, and the rest. The profile's
jvm.jit_cpu_ms (the compilers' CPU) and jvm.cold_factor (the worker's early CPU per record over its later) come
from this. Extra JVM options (e.g. -XX:TieredStopAtLevel=1, C1 only) show what the JIT costs. Linux only.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

from kafkasim.validation import admin, kafka_dist, runners, targets
from kafkasim.validation.environment import cpu_seconds
from kafkasim.validation.errors import LiveError, UserError
from kafkasim.validation.measure import Config
from kafkasim.validation.perftest import parse

KINDS = (("C1 Compiler", "C1"), ("C2 Compiler", "C2"), ("kafka-producer-", "sender"), ("java", "worker"),
         ("G1 ", "gc"), ("GC ", "gc"))


def kind_of(thread_name: str) -> str:
    """A thread's kind from its /proc comm (Linux keeps its first 15 characters)."""
    for prefix, kind in KINDS:
        if thread_name == prefix or (prefix != "java" and thread_name.startswith(prefix)):
            return kind
    return "other"


def cpu_by_kind(pid: int) -> dict[str, float] | None:
    """CPU seconds (user + system) so far of each kind of thread of process `pid`; None once it has exited."""
    out: dict[str, float] = {}
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            kind = kind_of((task / "comm").read_text().strip())
            out[kind] = out.get(kind, 0.0) + cpu_seconds(task / "stat")
    except (FileNotFoundError, ProcessLookupError):
        return None
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkasim.validation.jit", description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    parser.add_argument("--bootstrap-server", help="default: the cluster `kafkasim cluster up` started")
    parser.add_argument("--jvm-option", action="append", default=[], help="extra JVM option, e.g. "
                                                                          "-XX:TieredStopAtLevel=1")
    args = parser.parse_args(argv)
    pool = targets.ClusterPool()      # (a private cluster only if none is up)
    try:
        sc = Config(args.scenario, "java", args.overrides).load()
        target = targets.resolve(sc, args.bootstrap_server, None, pool)
        lib = kafka_dist.ensure_kafka()
        topic = f"{sc.topic.name}-jit"
        admin.create_topic(lib, target.admin_bootstrap, topic, sc.topic.partitions, sc.topic.replication_factor)
        cmd = runners.argv("java", lib, sc, target, topic, sc.workload.records)
    except (UserError, LiveError, ValueError) as exc:
        pool.close()
        print(f"kafkasim: error: {exc}", file=sys.stderr)
        return 2
    java = cmd.index("java")
    cmd[java + 1:java + 1] = args.jvm_option
    started = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    print("   s  " + "  ".join(f"{k:>6}" for k in ("worker", "sender", "C1", "C2", "gc", "other")) + "  (CPU-s so far)")
    try:
        while proc.poll() is None:
            cpu = cpu_by_kind(proc.pid)
            if cpu:
                print(f"{time.time() - started:5.1f} " + "  ".join(f"{cpu.get(k, 0.0):6.2f}" for k in
                                                                   ("worker", "sender", "C1", "C2", "gc", "other")),
                      flush=True)
            time.sleep(1.0)
        output = proc.stdout.read()
    finally:
        if proc.poll() is None:
            proc.kill()
        admin.delete_topic(lib, target.admin_bootstrap, topic)
        pool.close()
    parsed = parse(output)
    for window in parsed.windows:
        print(f"window: {window.records} records, {window.records_per_sec:,.0f} rec/s, "
              f"{window.latency_avg_ms:.1f} ms avg latency")
    total = parsed.total
    if total:
        print(f"total: {total.records_per_sec:,.0f} rec/s, p50 {total.latency_p50_ms:g} ms, "
              f"p99 {total.latency_p99_ms:g} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
