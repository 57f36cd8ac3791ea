"""cpu.py RUNS PROFILE: per config, measured busy cores (host, cluster, client, consumer) vs the model's."""
import sys, json, statistics
from kafkasim.calibration.runs import load_observations
from kafkasim.calibration.fit import scenario_for
from kafkasim.model.simulate import simulate
runs, prof = sys.argv[1:3]
meas = {}
for l in open(runs):
    r = json.loads(l); c = r["environment"]["cpu_during_run"]
    meas.setdefault(r["config_id"], []).append((c["busy_cores"], c["cluster_cores"], c["client_cores"], c.get("consumer_cores", 0), c.get("other_cores", 0)))
seen = set()
for o in load_observations(runs, library="java"):
    if o.config_id in seen: continue
    seen.add(o.config_id)
    res = simulate(scenario_for(o, prof, {}))
    u = res.utilisation
    m = [round(statistics.median(x[i] for x in meas[o.config_id]), 2) for i in range(5)]
    print(f"{o.config_id:20s} measured busy/cluster/client/consumer/other {m}  model {({k: round(float(v), 2) for k, v in u.items() if 'cpu' in k or 'thread' in k})}")
