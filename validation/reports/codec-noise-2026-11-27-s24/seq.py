"""HostCosts JVMs each running a sequence of configurations; worker us/record per configuration."""
import json, os, subprocess, sys, tempfile
from kafkasim.validation import host_calibration as hc
from kafkasim.validation.cluster import Cluster, free_base_port
from kafkasim.validation.kafka_dist import cache_dir, compiled, ensure_kafka, java_command

N = {"none": 200000, "gzip": 50000, "snappy": 150000, "lz4": 200000, "zstd": 120000}
lib = ensure_kafka(); classes = compiled(lib, hc.TOOL)
port = free_base_port(hc.BASE_PORT, hc.NODES)
cluster = Cluster(cache_dir() / f"codec-seq-{os.getpid()}", hc.NODES, port)
cluster.up(quiet=True)
try:
    jmx = ",".join(f"127.0.0.1:{cluster.jmx_port(i)}" for i in range(hc.NODES))
    pids = ",".join(str(p) for p in cluster.state.pids)
    for seq in sys.argv[1:]:
        cmd = java_command(lib, hc.TOOL.stem, ["--bootstrap-server", cluster.state.bootstrap, "--jmx", jmx, "--broker-pids", pids,
                                               "--clock-ticks", "100"], classes=classes)
        err = tempfile.TemporaryFile("w+")
        p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True)
        out = []
        for k, item in enumerate(seq.split(",")):
            codec, _, mult = item.partition("*")
            run = hc.Run(f"{codec}-{k}", 1000, int(N[codec] * float(mult or 1)), codec=codec, warmup=1000)
            p.stdin.write(run.line(1.0, False) + "\n"); p.stdin.flush()
            r = json.loads(hc._next_result(p, err, run.id).split(" ", 1)[1])
            m = r["measured"]
            b = m["brokers"][0]; out.append(f"{codec} {1e6*m['worker_cpu_s']/m['records']:.2f} b{1e6*(b['process_cpu_s']-b.get('jit_cpu_s',0))/m['records']:.2f}")
        p.stdin.close(); p.wait(timeout=60)
        print(" | ".join(out), flush=True)
finally:
    cluster.down()
