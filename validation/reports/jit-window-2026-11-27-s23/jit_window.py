"""Per transfer configuration: the perf-test window (measured) against the model's run, and the client threads' CPU
measured over the whole process against the model's over its run: worker, Sender, the JIT compilers, broker.

    .venv/bin/python validation/reports/jit-window-2026-11-27-s23/jit_window.py RUNS.jsonl PROFILE.yaml

Runs measured since session 23 store the threads' CPU when the producer was built (client_threads_at_start): the
figures are then the window's own. Older runs' include what the JVM spent before perf-test's clock started (≈ 0.8–1
CPU-s of the main thread's and as much of the compilers'); the model's start at the first send.
"""
import collections
import json
import sys

import kafkasim.model.host as host_mod
import kafkasim.model.jvm as jvm_mod
from kafkasim.calibration.fit import scenario_for
from kafkasim.calibration.runs import load_observations
from kafkasim.model.simulate import simulate

jit = [0.0]


def counted(host, cpu_seconds, duty=1.0):
    """jvm.slices, counting the compilers' CPU."""
    idle = host_mod.SLICE * (1.0 - duty) / duty
    left = cpu_seconds
    while left > 0:
        step = min(host_mod.SLICE, left)
        yield from host.run(step)
        jit[0] += step
        left -= step
        if idle > 0:
            yield host.env.timeout(idle)


jvm_mod.slices = counted
raw = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    raw[r["config_id"]].append(r)
print(f"{'config':20} {'error':>6} | window meas / model | worker | sender | compilers | (CPU-s: measured, model's)")
seen = set()
for o in load_observations(sys.argv[1], library="java"):
    if o.config_id in seen:
        continue
    seen.add(o.config_id)
    jit[0] = 0.0
    res = simulate(scenario_for(o, sys.argv[2], {}))
    T, u = res.simulated_seconds, res.utilisation
    run = raw[o.config_id][0]
    cpu = run["environment"]["cpu_during_run"]
    at = cpu.get("client_threads_at_start", {})
    t = {k: v - at.get(k, 0.0) for k, v in cpu["client_threads"].items()}
    window = run["result"]["records"] / run["result"]["records_per_sec"]
    err = res.perf_test["records_per_sec"] / o.measured["records_per_sec"] - 1
    print(f"{o.config_id:20} {err * 100:+5.0f}% | {window:5.2f} {T:5.2f} | {t['worker']:4.2f} "
          f"{u['worker threads'] * T:4.2f} | {t['sender']:4.2f} {u['sender thread'] * T:4.2f} | "
          f"{t['C1'] + t['C2']:4.2f} {jit[0]:4.2f}")
