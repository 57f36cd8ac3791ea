"""one.py SESSION PROFILE [key=val…]: transfer mdape/worst/p99 + tail + (optional) consumer medians for one session."""
import sys, statistics, os
from kafkasim.calibration.runs import load_observations
from kafkasim.validation import report as R
from kafkasim.calibration import fit as F
sess, prof, *ov = sys.argv[1:]
params = {k: float(v) for k, v in (kv.split("=") for kv in ov)}
orig = F.scenario_for
R.scenario_for = lambda obs, profile, p, m=None: orig(obs, profile, {**p, **params}, m)
path = f"validation/data/transfer-{sess}.jsonl"
if os.path.exists(path):
    obs = load_observations(path, library="java")
    roles = R.roles_from_matrix("validation/matrices/transfer.yaml")
    preds = R.predict_all(obs, prof, None, progress=lambda *a: None)
    rows = [R.Row(o, R.role_of(o, roles), p) for o, p in zip(obs, preds)]
    sm = R.summarise(rows)
    print(f"transfer mdape {100*sm['unthrottled_mdape']:5.1f} worst {100*sm['unthrottled_worst']:+6.1f} p50 {sm['p50_ratio_median']:.2f} p99 {sm['p99_ratio_median']:.2f} thr-p99 {sm['throttled_p99_ratios']}")
for kind in ("tail", "consumer"):
    path = f"validation/data/local-{kind}-{sess}.jsonl"
    if not os.path.exists(path):
        continue
    obs = load_observations(path, library="java")
    preds = R.predict_all(obs, prof, None, progress=lambda *a: None)
    rat = {k: [] for k in ("records_per_sec", "p99_ms", "e2e_p50_ms", "e2e_p99_ms")}
    for o, p in zip(obs, preds):
        for k in rat:
            m, q = o.measured.get(k), p.get(k)
            if m and q:
                rat[k].append(q / m)
    err = statistics.median(abs(x - 1) for x in rat["records_per_sec"])
    print(kind, "rate mdape", round(100 * err, 1), {k: round(statistics.median(v), 2) for k, v in rat.items() if v})
