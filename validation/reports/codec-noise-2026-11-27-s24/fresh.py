"""Fresh HostCosts JVMs: each runs one codec twice (first cold, then warm); worker us/record per phase."""
import json, os, subprocess, sys, tempfile, time
from kafkasim.validation import host_calibration as hc
from kafkasim.validation.cluster import Cluster, free_base_port
from kafkasim.validation.kafka_dist import cache_dir, compiled, ensure_kafka, java_command

lib = ensure_kafka(); classes = compiled(lib, hc.TOOL)
port = free_base_port(hc.BASE_PORT, hc.NODES)
cluster = Cluster(cache_dir() / f"codec-fresh-{os.getpid()}", hc.NODES, port)
cluster.up(quiet=True)
plan = [(c, n) for c, n in (("none", 300000), ("gzip", 80000), ("snappy", 300000), ("lz4", 300000), ("zstd", 250000))]
plan = [p for p in plan if p[0] in sys.argv[1:]] or plan
try:
    jmx = ",".join(f"127.0.0.1:{cluster.jmx_port(i)}" for i in range(hc.NODES))
    pids = ",".join(str(p) for p in cluster.state.pids)
    # warm the brokers first in a throwaway JVM
    for rep in range(int(os.environ.get("REPS", "1"))):
      for codec, n in [("none", 200000)] * (rep == 0) + plan:
        cmd = java_command(lib, hc.TOOL.stem, ["--bootstrap-server", cluster.state.bootstrap, "--jmx", jmx, "--broker-pids", pids,
                                               "--clock-ticks", "100"], classes=classes)
        err = tempfile.TemporaryFile("w+")
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        out = []
        for k in range(3):
            run = hc.Run(f"{codec}-{k}", 1000, n, codec=codec, warmup=1000)
            p.stdin.write(run.line(1.0, False) + "\n"); p.stdin.flush()
            r = json.loads(hc._next_result(p, err, run.id).split(" ", 1)[1])
            m, w = r["measured"], r["warmup"]
            out.append(f"{1e6*m['worker_cpu_s']/m['records']:.2f} ({m['seconds']:.1f}s, {m['records']/m['seconds']:,.0f}/s, jit {m['phase_jit_cpu_s']:.2f})")
        p.stdin.close(); p.wait(timeout=60)
        print(codec, "worker us/rec: fresh", out[0], "| 2nd", out[1], "| 3rd", out[2], flush=True)
finally:
    cluster.down()
