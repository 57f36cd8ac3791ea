"""probe.py RUNS PROFILE CONFIG: the model's host CPU (cores) per 0.5 s, and the measured run's thread totals."""
import sys, json
from kafkasim.calibration.runs import load_observations
from kafkasim.calibration.fit import scenario_for
import kafkasim.model.host as H
import simpy
runs, prof, cid = sys.argv[1:4]
hosts = []
orig = H.Host.__init__
def init(self, *a, **k):
    orig(self, *a, **k); hosts.append(self)
H.Host.__init__ = init
oe = simpy.Environment.__init__
envs = []
def einit(self, *a, **k):
    oe(self, *a, **k); envs.append(self)
    def probe(env=self):
        last = {}
        while True:
            yield env.timeout(0.5)
            row = []
            for h in hosts:
                row.append(f"{h.name}:{(h.busy_seconds - last.get(h.name, 0)) / 0.5:.2f}")
                last[h.name] = h.busy_seconds
            print(f"{env.now:4.1f}", " ".join(row))
            if env.now > 6: return
    self.process(probe())
simpy.Environment.__init__ = einit
from kafkasim.model.simulate import simulate
obs = [o for o in load_observations(runs, library="java") if o.config_id == cid][0]
res = simulate(scenario_for(obs, prof, {}))
print("model p99", res.perf_test["p99_ms"])
for l in open(runs):
    r = json.loads(l)
    if r["config_id"] == cid:
        c = r["environment"]["cpu_during_run"]
        print("measured", c.get("client_threads"), "at start", c.get("client_threads_at_start"), "cluster", c["cluster_cores"], "p99", r["result"]["latency_p99_ms"])
