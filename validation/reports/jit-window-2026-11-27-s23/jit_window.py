"""Per transfer configuration: the perf-test window (measured) against the model's run, and the client threads' CPU
measured over the whole process against the model's over its run: worker, Sender, the JIT compilers, broker.

    .venv/bin/python validation/reports/jit-window-2026-11-27-s23/jit_window.py RUNS.jsonl PROFILE.yaml

The measured worker and compiler CPU include what the JVM spent before perf-test's clock started (≈ 0.3–0.5 CPU-s
on the main thread, ≈ 1 CPU-s of compilation in the calibrate host's cold run); the model's start at the first send.
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
print(f"{'config':20} {'error':>6} | window meas / model | worker | sender | compilers | (process CPU-s, model's)")
seen = set()
for o in load_observations(sys.argv[1], library="java"):
    if o.config_id in seen:
        continue
    seen.add(o.config_id)
    jit[0] = 0.0
    res = simulate(scenario_for(o, sys.argv[2], {}))
    T, u = res.simulated_seconds, res.utilisation
    run = raw[o.config_id][0]
    t = run["environment"]["cpu_during_run"]["client_threads"]
    window = run["result"]["records"] / run["result"]["records_per_sec"]
    err = res.perf_test["records_per_sec"] / o.measured["records_per_sec"] - 1
    print(f"{o.config_id:20} {err * 100:+5.0f}% | {window:5.2f} {T:5.2f} | {t['worker']:4.2f} "
          f"{u['worker threads'] * T:4.2f} | {t['sender']:4.2f} {u['sender thread'] * T:4.2f} | "
          f"{t['C1'] + t['C2']:4.2f} {jit[0]:4.2f}")
