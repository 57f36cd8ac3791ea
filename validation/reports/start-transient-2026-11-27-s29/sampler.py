"""sampler.py OUT SECONDS: every 50 ms, CPU (and run-queue wait, wait_*) of the C1/C2/main/sender/gc/other threads of java processes running TailConsumer or
ProducerPerformance; writes lines 't proc kind cpu_s'."""
import os, sys, time
out = open(sys.argv[1], "w")
tck = os.sysconf("SC_CLK_TCK")
def kind(comm):
    if comm.startswith("C1"): return "C1"
    if comm.startswith("C2"): return "C2"
    if comm.startswith("kafka-producer") : return "sender"
    if comm.startswith("G1") or comm.startswith("GC"): return "gc"
    if comm == "java": return "main"
    return "other"
t0 = time.time()
while time.time() - t0 < float(sys.argv[2]):
    for pid in os.listdir("/proc"):
        if not pid.isdigit(): continue
        try:
            cmd = open(f"/proc/{pid}/cmdline").read()
        except OSError: continue
        name = "tail" if "TailConsumer" in cmd else "perf" if "ProducerPerformance" in cmd else None
        if not name: continue
        agg = {}
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                comm = open(f"/proc/{pid}/task/{task}/comm").read().strip()
                st = open(f"/proc/{pid}/task/{task}/stat").read().rsplit(")", 1)[1].split()
                k = kind(comm); agg[k] = agg.get(k, 0) + (int(st[11]) + int(st[12])) / tck
                w = int(open(f"/proc/{pid}/task/{task}/schedstat").read().split()[1]) / 1e9
                agg["wait_" + k] = agg.get("wait_" + k, 0) + w
        except OSError: continue
        now = time.time()
        out.write(f"{now:.3f} {name} {pid} " + " ".join(f"{k}={v:.2f}" for k, v in sorted(agg.items())) + "\n")
    out.flush()
    time.sleep(0.05)
