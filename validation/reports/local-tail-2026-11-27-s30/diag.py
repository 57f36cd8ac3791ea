"""diag.py RUNS PROFILE [key=val ...]: per-config e2e and producer p50/p99 ratios with hardware overrides."""
import sys, statistics
from kafkasim.calibration.runs import load_observations
from kafkasim.calibration import fit as F
from kafkasim.validation import report as R
runs, prof, *ov = sys.argv[1:]
params = {}
for kv in ov:
    k, v = kv.split("=")
    params[k] = float(v)
orig = F.scenario_for
R.scenario_for = lambda obs, profile, p, m=None: orig(obs, profile, {**p, **params}, m)
obs = load_observations(runs, library="java")
preds = R.predict_all(obs, prof, None, progress=lambda *a: None)
rat = {k: [] for k in ("records_per_sec", "p50_ms", "p99_ms", "e2e_p50_ms", "e2e_p99_ms")}
for o, p in zip(obs, preds):
    line = [o.config_id]
    for k in rat:
        m, q = o.measured.get(k), p.get(k)
        if m and q:
            rat[k].append(q / m); line.append(f"{k}={q/m:.2f}({q:.0f}/{m:.0f})")
    print(" ".join(line))
print("MEDIAN", {k: round(statistics.median(v), 2) for k, v in rat.items() if v})
