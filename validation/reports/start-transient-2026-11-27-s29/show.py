import sys
rows = {}
for line in open(sys.argv[1]):
    t, name, pid, *kv = line.split()
    d = {k: float(v) for k, v in (x.split("=") for x in kv)}
    rows.setdefault((name, pid), []).append((float(t), d))
perf = [v for k, v in rows.items() if k[0] == "perf" and len(v) > 20]
tails = [v for k, v in rows.items() if k[0] == "tail" and len(v) > 20]
idx = int(sys.argv[2])
pairs = [(p, t) for p in perf for t in tails if t[0][0] < p[0][0] and t[-1][0] > p[0][0]]
p, c = pairs[idx]
t0 = p[0][0]
def at(series, t):
    best = series[0][1]
    for tt, d in series:
        if tt <= t: best = d
    return best
K = ("C1", "C2", "main", "sender")
for i in range(0, int(float(sys.argv[3]) * 10)):
    t = t0 + i * 0.1
    dp, dc = at(p, t), at(c, t)
    print(f"{i/10:5.1f} perf " + " ".join(f"{k} {dp.get(k,0):4.2f}" for k in K) + f" w.snd {dp.get('wait_sender',0):4.2f}"
          + " | tail " + " ".join(f"{k} {dc.get(k,0):4.2f}" for k in K[:3]) + f" w.main {dc.get('wait_main',0):4.2f}")
