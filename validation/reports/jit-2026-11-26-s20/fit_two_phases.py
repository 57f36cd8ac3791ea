import re, sys, numpy as np
from scipy.optimize import nnls
for f in sys.argv[1:]:
    rows = [tuple(map(float, l.split()[:3])) for l in open(f) if re.match(r"^ *\d+\.\d ", l)]
    t = np.array([r[0] for r in rows]); s = np.array([r[2] for r in rows])
    txt = open(f).read()
    req = float(re.search(r"in ([\d,]+) requests", txt).group(1).replace(",", ""))
    i0 = np.argmax(s > 0) - 1
    t0 = t[i0]; end = t[-1]
    R = req / (end - t0)
    tt, ss = t[i0:] - t0, s[i0:]
    late = tt > 0.6 * tt[-1]
    slope = np.polyfit(tt[late], ss[late], 1)[0]
    ex = ss - slope * tt
    n = R * tt
    best = None
    for W1 in [25, 50, 100, 200, 300, 500]:
        for W2 in [500, 1000, 1500, 2000, 3000, 4000, 6000, 8000]:
            if W2 <= W1: continue
            X = np.column_stack([1 - np.exp(-n / W1), 1 - np.exp(-n / W2)])
            a, r = nnls(X, ex)
            if best is None or r < best[0]: best = (r, W1, W2, a)
    r, W1, W2, a = best
    print(f"{f}: R {R:.0f} req/s, steady {slope:.3f} cores = {slope/R*1e6:.0f} us/req; excess total {ex[-1]:.2f}; "
          f"W1 {W1} A1 {a[0]:.2f} CPU-s, W2 {W2} A2 {a[1]:.2f} CPU-s, resid {r:.3f}")
