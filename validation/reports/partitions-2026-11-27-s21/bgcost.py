"""Leader CPU per follower fetch with and without 2000 idle RF3 partitions (~667 led by node 1)."""
import json, os, subprocess, sys, time
from pathlib import Path
from kafkasim.validation import admin
from kafkasim.validation.kafka_dist import ensure_kafka, compiled, java_command
from kafkasim.validation.host_calibration import TOOL, Run, CLIENT_HEAP
lib = ensure_kafka()
st = json.load(open(os.path.expanduser("~/.cache/kafkasim/cluster/cluster.json")))
boot = "127.0.0.1:9092"
jmx = ",".join(f"127.0.0.1:{9392 + i}" for i in range(3))
classes = compiled(lib, TOOL)
cmd = java_command(lib, TOOL.stem, ["--bootstrap-server", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094", "--jmx", jmx, "--broker-pids",
                                    ",".join(map(str, st["pids"])), "--clock-ticks", str(os.sysconf("SC_CLK_TCK"))],
                   classes=classes)
runs = [Run("r3-a", 1000, 100_000, batch=16384, acks="all", partitions=3, replicas=3),
        Run("r3-b", 1000, 100_000, batch=16384, acks="all", partitions=3, replicas=3)]
proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def one(run, first):
    proc.stdin.write(run.line(1.0, first) + "\n"); proc.stdin.flush()
    while True:
        line = proc.stdout.readline()
        if not line: raise SystemExit("HostCosts ended")
        if line.startswith("RESULT "): return json.loads(line[7:])
out = {}
for label in sys.argv[1:]:
    if label.startswith("bg"):
        admin.create_topic(lib, boot, "bg-cost", int(label[2:]), 3, timeout=300); time.sleep(20)
    elif label == "nobg":
        admin.delete_topic(lib, boot, "bg-cost"); time.sleep(20)
    else:
        r = one(runs[0], label == "first")
        m = r["measured"]
        print(label, json.dumps({"records": m["records"], "seconds": m["seconds"], "brokers": m.get("brokers")})[:3000], flush=True)
proc.stdin.close(); proc.wait()
