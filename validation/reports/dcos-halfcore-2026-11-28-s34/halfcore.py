"""DC/OS runs 1-3 (one 0.5-CPU producer) here: one broker pinned to CPU 0, the producer to CPU 1 in a cgroup-v1
CFS quota of 50/100 ms (QUOTA_US), its threads' CPU by kind sampled. Usage: halfcore.py EXAMPLE RECORDS REPEATS
OUT.jsonl  (with `kafkasim cluster up --brokers 1` running on 9092)."""
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kafkasim.model.scenario import load_scenario
from kafkasim.validation import admin, perftest, runners
from kafkasim.validation.environment import ThreadCpu
from kafkasim.validation.kafka_dist import ensure_kafka

example, records, repeats, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
quota = int(os.environ.get("QUOTA_US", "50000"))      # -1: no limit (still pinned to CPU 1)
lib = ensure_kafka(quiet=True)
sc = load_scenario(example, ["topic.replication.factor=1", "cluster.brokers=1", f"workload.records={records}"])
target = runners.Target("127.0.0.1:9092", "127.0.0.1:9092")
group = Path("/sys/fs/cgroup/cpu/kafkasim-half")
group.mkdir(exist_ok=True)
(group / "cpu.cfs_period_us").write_text("100000")
(group / "cpu.cfs_quota_us").write_text(str(quota))
try:
    for r in range(repeats):
        topic = f"half-{int(time.time())}"
        admin.create_topic(lib, target.admin_bootstrap, topic, sc.topic.partitions, 1)
        time.sleep(2)
        cmd = runners.argv("java", lib, sc, target, topic, records)

        def enter():
            (group / "cgroup.procs").write_text(str(os.getpid()))
            os.sched_setaffinity(0, {1})
        t = time.time()
        threads, timeline = ThreadCpu(), []
        with tempfile.TemporaryFile("w+") as out_file:
            proc = subprocess.Popen(cmd, stdout=out_file, stderr=subprocess.DEVNULL, text=True, preexec_fn=enter)
            while proc.poll() is None:        # the threads' CPU by kind (C1, C2, gc, sender, worker) every 50 ms
                now = threads.sample(proc.pid)
                if now and (not timeline or time.time() - t >= timeline[-1][0] + 1.0):
                    timeline.append((round(time.time() - t, 1), {k: round(v, 2) for k, v in now.items()}))
                time.sleep(0.05)
            out_file.seek(0)
            p = subprocess.CompletedProcess(cmd, proc.returncode, out_file.read(), "")
        parsed = perftest.parse(p.stdout)
        row = {"example": example, "repeat": r, "quota_us": quota, "seconds": time.time() - t,
               "result": parsed.total.__dict__ if parsed.total else None,
               "batch_size_avg": parsed.metrics.get("producer-metrics:batch-size-avg"),
               "records_per_request": parsed.metrics.get("producer-metrics:records-per-request-avg"),
               "compression_rate": parsed.metrics.get("producer-metrics:compression-rate-avg"),
               "queue_time_avg": parsed.metrics.get("producer-metrics:record-queue-time-avg"),
               "threads": {k: round(v, 2) for k, v in threads.totals.items()},
               "threads_at_start": {k: round(v, 3) for k, v in threads.at_start.items()}, "timeline": timeline,
               "windows": [w.__dict__ for w in parsed.windows]}
        print(json.dumps({k: v for k, v in row.items() if k not in ("windows", "timeline")}), flush=True)
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
        admin.delete_topic(lib, target.admin_bootstrap, topic)
finally:
    time.sleep(1)
    group.rmdir()
