"""Where a fresh Java producer's CPU goes, thread by thread: `python -m kafkasim.validation.jit SCENARIO`.

One perf-test run of the scenario's producer (as `kafkasim measure` runs it), with the CPU time of each of its JVM's
threads read from /proc every 50 ms and summed by kind: the worker (perf-test's main thread), the Sender
(kafka-producer-network-thread), the C1 and C2 JIT compiler threads, GC, and the rest; and the CPU of the Kafka
nodes on this host (environment.own_processes_seconds), with their own compiler threads' part. It prints the running
totals every --interval seconds, and at the end each thread's CPU per request, per record and per byte sent (the
brokers' without their compilers), and how long each kind of thread waited for a core (/proc/…/schedstat). The
local-2core profile's measured costs come from this: the compilers' CPU (jvm.jit_cpu_ms), the costs per byte of
the worker, the Sender and the broker (runs with two record sizes and several request counts), and the Sender's
cold start (jvm.cold_factor, jvm.warm_invocations). Extra JVM options
(e.g. -XX:TieredStopAtLevel=1, C1 only) show what the JIT costs. Start the cluster first (`kafkasim cluster up`)
and discard a first run or two, or the brokers' own JIT shares the cores too (measured: a broker's compilers took
0.4-5.4 CPU-s a run in the first pass after its start, 0.01-0.04 in the second). Linux only.
"""
from __future__ import annotations

import argparse
import sys
import time

from kafkasim.model.errors import LiveError, UserError
from kafkasim.validation import admin, kafka_dist, runners, targets
from kafkasim.validation.environment import KAFKA_NODE, ThreadCpu, own_pids, own_processes_seconds, since
from kafkasim.validation.measure import Config
from kafkasim.validation.perftest import parse

COLUMNS = ("worker", "sender", "C1", "C2", "gc", "other", "broker")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkasim.validation.jit", description=__doc__.split("\n")[0])
    parser.add_argument("scenario")
    parser.add_argument("--set", action="append", default=[], dest="overrides", metavar="KEY=VALUE")
    parser.add_argument("--bootstrap-server", help="default: the cluster `kafkasim cluster up` started")
    parser.add_argument("--jvm-option", action="append", default=[], help="extra JVM option, e.g. "
                                                                          "-XX:TieredStopAtLevel=1")
    parser.add_argument("--interval", type=float, default=1.0, help="seconds between printed readings (default 1)")
    args = parser.parse_args(argv)
    pool = targets.ClusterPool()      # (a private cluster only if none is up)
    try:
        sc = Config(args.scenario, "java", args.overrides).load()
        target = targets.resolve(sc, args.bootstrap_server, None, pool)
        lib = kafka_dist.ensure_kafka()
        topic = f"{sc.topic.name}-jit"
        # (an emulated network puts the brokers in a namespace: the admin tools run there, as measure's do)
        admin.create_topic(lib, target.admin_bootstrap, topic, sc.topic.partitions, sc.topic.replication_factor,
                           prefix=target.admin_prefix)
        cmd = runners.argv("java", lib, sc, target, topic, sc.workload.records)
    except (UserError, LiveError, ValueError) as exc:
        pool.close()
        print(f"kafkasim: error: {exc}", file=sys.stderr)
        return 2
    java = cmd.index("java")
    cmd[java + 1:java + 1] = args.jvm_option
    try:
        output, threads, broker_cpu = _sample(cmd, args.interval, runners.time_limit(sc, sc.workload.records))
    finally:
        admin.delete_topic(lib, target.admin_bootstrap, topic, prefix=target.admin_prefix)
        pool.close()
    parsed = parse(output)
    for window in parsed.windows:
        print(f"window: {window.records} records, {window.records_per_sec:,.0f} rec/s, "
              f"{window.latency_avg_ms:.1f} ms avg latency")
    total = parsed.total
    if total:
        print(f"total: {total.records_per_sec:,.0f} rec/s, p50 {total.latency_p50_ms:g} ms, "
              f"p99 {total.latency_p99_ms:g} ms")
        _per_unit(threads.totals, broker_cpu, total.records, parsed.metrics)
    _waits(threads)
    return 0


def _sample(cmd: list[str], interval: float, limit: float) -> tuple[str, ThreadCpu, dict[str, float]]:
    """Run the producer, reading its threads' CPU (and the brokers') as it runs and printing the totals so far
    every `interval` seconds. Returns its output, its threads' readings and the brokers' CPU-seconds: all of it,
    and their own JIT compilers' part (a broker started moments before still compiles its request path)."""
    threads = ThreadCpu(waits=True)
    brokers = {pid: ThreadCpu() for pid in own_pids((KAFKA_NODE,))}
    compiling = _compilers(brokers)
    broker_start = own_processes_seconds()
    started = time.monotonic()
    printed = [-interval]
    print("   s  " + "  ".join(f"{k:>6}" for k in COLUMNS) + "  (CPU-s so far)")

    def watch(pid: int) -> None:
        now = time.monotonic() - started
        # (so far: a thread that has exited, as the main one does before the JVM ends, keeps its CPU in the totals)
        cpu = threads.totals if threads.sample(pid) else None
        if cpu and now - printed[0] >= interval:
            printed[0] = now
            print(f"{now:5.1f} " + "  ".join(f"{cpu.get(k, 0.0):6.2f}" for k in COLUMNS[:-1])
                  + f"  {since(broker_start, own_processes_seconds()):6.2f}", flush=True)

    out = runners.run(cmd, limit, watch)
    broker = {"all": since(broker_start, own_processes_seconds()), "JIT": _compilers(brokers) - compiling}
    return out.stdout, threads, broker


def _compilers(brokers: dict[int, ThreadCpu]) -> float:
    """The brokers' C1 and C2 compiler threads' CPU-seconds so far. (A compiler thread that exits takes its
    CPU out of the sum: the JIT's part is then short and the brokers' work over by as much.)"""
    total = 0.0
    for pid, threads in brokers.items():
        threads.sample(pid)
        total += threads.totals.get("C1", 0.0) + threads.totals.get("C2", 0.0)
    return total


def _per_unit(cpu: dict[str, float], broker: dict[str, float], records: int, metrics: dict) -> None:
    """Each thread's CPU per request, per record and per byte sent (requests and bytes from the producer's
    metrics): the figures the profile's sender.*, worker.* and broker.* costs stand for (the brokers' without
    their JIT compilers' part)."""
    per_request = metrics.get("producer-metrics:records-per-request-avg")
    sent = metrics.get("producer-metrics:outgoing-byte-total")
    if not per_request or not sent or not records:
        return
    requests = records / per_request
    print(f"{records} records in {requests:,.0f} requests, {sent / 2**20:,.1f} MiB sent")
    print(f"brokers: {broker['all']:.2f} CPU-s, of which their JIT compilers {broker['JIT']:.2f}")
    for kind in ("worker", "sender", "broker"):
        seconds = broker["all"] - broker["JIT"] if kind == "broker" else cpu.get(kind, 0.0)
        print(f"{kind:>7}: {seconds:6.2f} CPU-s = {seconds / requests * 1e6:8.1f} us/request = "
              f"{seconds / records * 1e6:6.2f} us/record = {seconds / sent * 1e9:6.2f} ns/byte")


def _waits(threads: ThreadCpu) -> None:
    """How long each kind of thread was runnable but waited for a core (/proc/…/schedstat): on a host shared
    with the brokers, the Sender's wait decides how many batches each request carries."""
    if any(threads.waits.values()):
        print("waited for a core: " + ", ".join(f"{kind} {threads.waits.get(kind, 0.0):.2f} s"
                                                for kind in COLUMNS[:-1]))


if __name__ == "__main__":
    sys.exit(main())
