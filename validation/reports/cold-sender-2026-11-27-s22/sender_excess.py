"""The Sender thread's CPU beyond its warm costs, per transfer configuration: measured against the model's.

    .venv/bin/python validation/reports/cold-sender-2026-11-27-s22/sender_excess.py RUNS.jsonl PROFILE.yaml WARM.yaml

WARM.yaml: PROFILE.yaml with its Java `jvm.cold_factor` set to 1 (sed). Prints, per configuration, the measured
Sender CPU, the model's warm and cold Sender CPU, both excesses, then the run's length T (records ÷ measured rate)
beside the measured excess, and a fit of excess = a·(1 − exp(−T/τ)).
"""
import statistics, sys, json
from kafkasim.calibration.runs import load_observations
from kafkasim.validation.report import predict_all
data = sys.argv[1]
obs = load_observations(data, library="java")
by = {}
for o in obs:
    by.setdefault(o.config_id, []).append(o)
firsts = [v[0] for v in by.values()]
cold = predict_all(firsts, sys.argv[2], None, progress=lambda *a: None, jobs=2)
warm = predict_all(firsts, sys.argv[3], None, progress=lambda *a: None, jobs=2)
rows = []
for o, c, w in zip(firsts, cold, warm):
    meas = statistics.median(x.measured.get("sender_cpu_s") or float("nan") for x in by[o.config_id])
    secs = statistics.median(x.measured.get("elapsed_s") or x.measured.get("seconds") or float("nan") for x in by[o.config_id])
    req = o.measured.get("request-total") or float("nan")
    print(f"{o.config_id:22} meas {meas:5.2f} warm {w['sender_cpu_s']:5.2f} model-cold {c['sender_cpu_s']:5.2f}  excess meas {meas - w['sender_cpu_s']:+5.2f} model {c['sender_cpu_s'] - w['sender_cpu_s']:+5.2f}  requests {req:7.0f}")

import numpy as np
from scipy.optimize import curve_fit
T, E = [], []
for o, c, w in zip(firsts, cold, warm):
    meas = statistics.median(x.measured.get("sender_cpu_s") or float("nan") for x in by[o.config_id])
    t = o.scenario["workload.records"] / o.measured["records_per_sec"]
    T.append(t); E.append(meas - w["sender_cpu_s"])
    print(f"{o.config_id:22} T {t:5.1f} s  excess {meas - w['sender_cpu_s']:+5.2f}")
f = lambda t, a, tau: a * (1 - np.exp(-t / tau))
(a, tau), _ = curve_fit(f, np.array(T), np.array(E), p0=(1, 2))
res = np.array(E) - f(np.array(T), a, tau)
print("fit a", a, "tau", tau, "resid sd", res.std(), "E sd", np.std(E))
