"""`kafkasim calibrate host`: measure this host's CPU costs in a few minutes and write them as a profile.

It starts a private three-node cluster (JMX on loopback), runs validation/HostCosts.java over a designed matrix —
record sizes, batch sizes and linger, partitions, every codec, a follower and two, one throttled run — in one JVM,
reads each thread's CPU (the client's own and the brokers' over JMX), stops the cluster, and hands the runs to
calibration.host_costs for the regression. The profile records every cost's standard error, the runs it came from
(PROFILE.runs.jsonl beside it) and the host's fingerprint.
"""
from __future__ import annotations

import datetime
import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kafkasim.calibration import host as hostinfo
from kafkasim.calibration.host_costs import (client_costs, consumer_cold, consumer_costs, consumer_jit,
                                             host_costs, profile_sections)
from kafkasim.calibration.profile import profile_yaml
from kafkasim.model.errors import LiveError, UserError
from kafkasim.model.hardware import HARDWARE_FIELDS, THIS_HOST, this_host_path
from kafkasim.validation import consumerperf, environment, perftest, runners, tls
from kafkasim.validation.cluster import Cluster, free_base_port
from kafkasim.validation.kafka_dist import cache_dir, compiled, ensure_kafka, java_command
from kafkasim.validation.runners import CLIENT_HEAP

TOOL = Path(__file__).resolve().parent / "HostCosts.java"
# Below Linux's ephemeral ports (32768–60999): a node binds its listener seconds after it starts, and meanwhile
# another node's outgoing connection may take that port from the ephemeral range (seen once in CI at 39092)
BASE_PORT = 29092
NODES = 3


@dataclass(frozen=True)
class Run:
    """One configuration of the matrix; records are for the full mode (the short one sends a tenth)."""
    id: str
    size: int
    records: int
    batch: int = 65536
    linger: int = 5
    codec: str = "none"
    acks: str = "1"
    partitions: int = 1
    replicas: int = 1
    rate: float = -1
    buffer: int = 33554432
    consume: tuple[int, ...] = ()    # then read the topic once per fetch size (max.partition.fetch.bytes)
    background: int = 0              # beside an idle topic of this many RF-3 partitions (in the fetch sessions)
    consume_warmup: bool = False     # after a discarded read that warms the consumer's code
    warm_bytes: int = 0              # a warm-up that writes this many bytes through the leader
    tls: bool = False                # through the SSL listener, producer and consumer alike

    @property
    def topic(self) -> str:
        return f"kafkasim-host-{self.id}"

    def led_by_node_1(self, spread: bool = False) -> int:
        """How many of this run's partitions node 1 leads under `assignment`."""
        return sum(p.split(":")[0] == "1" for p in assignment(self.partitions, self.replicas, spread).split("|"))

    def topic_line(self, only: str, spread: bool = False) -> str:
        """HostCosts' line that only creates (`only="create"`) or deletes this run's topic."""
        return (f"id={self.id} topic={self.topic} assign={assignment(self.partitions, self.replicas, spread)} "
                f"only={only}")

    def line(self, scale: float, first: bool, client: dict[str, str] | None = None) -> str:
        """The run's line for HostCosts; `client`: another listener and its client properties (an SSL run's)."""
        records = max(2000, int(self.records * scale))
        # the first run starts the JVM and warms the brokers: a long warm-up (its cold start is measured)
        warmup = max(1000, int((1.5 if first else 0.25) * records)) if self.rate <= 0 else records // 4
        if self.warm_bytes:
            warmup = max(warmup, int(scale * self.warm_bytes / self.size))
        props = {"batch.size": self.batch, "linger.ms": self.linger, "compression.type": self.codec,
                 "acks": self.acks, "enable.idempotence": "false", "max.in.flight.requests.per.connection": 5,
                 "buffer.memory": self.buffer}
        reads = [f"consume={','.join(map(str, self.consume))}"] if self.consume else []
        if self.consume_warmup:
            reads.append("consume_warmup=1")
        return " ".join([f"id={self.id}", f"topic={self.topic}", f"assign={assignment(self.partitions, self.replicas)}",
                         f"records={records}", f"warmup={warmup}", f"size={self.size}", f"rate={self.rate * scale}",
                         *(f"p.{k}={v}" for k, v in props.items()), *reads,
                         *(f"bootstrap={v}" if k == "bootstrap.servers" else f"c.{k}={v}"
                           for k, v in (client or {}).items())])


def assignment(partitions: int, replicas: int, spread: bool = False) -> str:
    """HostCosts' replica assignment, partition by partition: node 1 leads each (`spread`: the nodes in turn), the
    next nodes follow."""
    return "|".join(":".join(str(1 + (p * spread + j) % NODES) for j in range(replicas)) for p in range(partitions))


# The first run starts the JVM (its cold start is measured) and warms the brokers' produce and replication paths
# (it is left out of the brokers' costs). Record sizes 100 B–4 KiB and batches 16–256 KiB separate the worker's
# per-record, per-byte and per-batch costs and the Sender's per-request and per-batch ones; partitions put several
# batches in a request; each codec gives its cost per byte on the worker and on the leader; one and two followers
# give the fetch costs, and the last of those again beside an idle topic of 600 partitions the cost of each
# partition in a fetch session; the throttled run, the hand-offs at low load; a full buffer and a small one, the
# collector's cost per record and per record held. ≈ 1.5 minutes of runs on this project's 2-core machine.
# The second first writes 6 GB through the leader (≈ 30 s): measured on this project's VMs, once 3–4 GB had been
# written since the host booted, a broker's request handlers' kernel time per append tripled (user time the same)
# and stayed so, whatever the retention settings, through new brokers too; and the brokers' own code warms with it
# (a calibration without it, 700 GB into a boot, had its next runs' broker CPU 23–34 % above the fit, against
# −13 to +9 % with it; session 25).
# Three of them are then read by a consumer, with small and large fetches: its costs per fetch, record and byte,
# and the leader's per consumer fetch (≈ 10 s in all). Two of those again through the SSL listener give what TLS
# adds per byte: the Sender's and the leader's network threads' on the way in, the consumer's and the leader's on
# the way out (≈ 8 s).
SLOW_STATE_BYTES = 6_000_000_000
CONSUMER_FETCHES = (65536, 1048576)
MATRIX = (
    Run("warm-s1k-b64k-p3-r3", 1000, 150_000, acks="all", partitions=3, replicas=3),
    Run("s4k-b64k-sustained", 4000, 50_000, warm_bytes=SLOW_STATE_BYTES),
    Run("s512-b64k", 512, 300_000, consume=CONSUMER_FETCHES, consume_warmup=True),
    Run("s100-b16k-l0", 100, 400_000, batch=16384, linger=0),
    Run("s100-b256k", 100, 500_000, batch=262144, linger=10, consume=CONSUMER_FETCHES),
    Run("s1k-b16k-l0", 1000, 150_000, batch=16384, linger=0),
    Run("s1k-b256k", 1000, 200_000, batch=262144, linger=10, consume=CONSUMER_FETCHES),
    Run("s1k-b64k-p6", 1000, 200_000, partitions=6),
    Run("s256-b16k-p12", 256, 300_000, batch=16384, partitions=12),
    Run("s1k-b64k-lz4", 1000, 200_000, codec="lz4"),
    Run("s1k-b64k-snappy", 1000, 150_000, codec="snappy"),
    Run("s1k-b64k-zstd", 1000, 120_000, codec="zstd"),
    Run("s1k-b64k-gzip", 1000, 50_000, codec="gzip"),
    Run("s1k-b64k-r2", 1000, 150_000, acks="all", replicas=2),
    Run("s1k-b256k-r2", 1000, 150_000, batch=262144, linger=10, acks="all", replicas=2),
    Run("s1k-b16k-p3-r3", 1000, 100_000, batch=16384, acks="all", partitions=3, replicas=3),
    Run("s1k-b16k-p3-r3-bg", 1000, 20_000, batch=16384, acks="all", partitions=3, replicas=3, background=600),
    Run("s1k-b16k-t2k", 1000, 8_000, batch=16384, linger=0, rate=2000),
    Run("s1k-b64k-buf1m", 1000, 150_000, buffer=1 << 20),
    Run("s512-b64k-tls", 512, 300_000, consume=CONSUMER_FETCHES, consume_warmup=True, tls=True,
        warm_bytes=100_000_000),
    Run("s1k-b256k-tls", 1000, 200_000, batch=262144, linger=10, consume=CONSUMER_FETCHES, tls=True),
)


def calibrate_host(output: Path, short: bool = False, say=None) -> dict:
    """Measure, regress, write the profile; returns it. Starts and stops its own cluster; leaves nothing running.
    Progress goes to `say` (default: stdout, each line flushed, so a pipe or a log file shows it as it comes)."""
    say = say or functools.partial(print, flush=True)
    output = Path(output)
    if output.suffix not in (".yaml", ".yml"):
        raise LiveError(f"-o {output}: a profile is a .yaml file")
    scale = 0.1 if short else 1.0
    started = time.monotonic()
    lib = ensure_kafka()
    classes = compiled(lib, TOOL)
    base_port = free_base_port(BASE_PORT, NODES)
    cluster = Cluster(cache_dir() / f"calibrate-host-{os.getpid()}", NODES, base_port, tls=True)
    say(f"kafkasim: calibrate host: starting {NODES} Kafka nodes (ports {base_port}..)")
    cluster.up(quiet=True)
    progress = lambda text: say(f"kafkasim: calibrate host: {text} ({time.monotonic() - started:.0f} s)")  # noqa: E731
    try:
        runs, speed = _matrix(lib, classes, cluster, scale, progress)
        for k in range(COLD_JVMS):
            runs.append(_cold_perf_test(lib, cluster, scale, consumer_reads=k == 0))
            cold = runs[-1]["perf_test"]
            progress(f"fresh kafka-producer-perf-test JVM {k + 1} of {COLD_JVMS}: {cold['records_per_sec']:,.0f} "
                     f"records/s, its Sender {cold['threads'].get('sender', 0):.2f} and its compilers "
                     f"{cold['threads'].get('C1', 0) + cold['threads'].get('C2', 0):.2f} CPU-s")
        for run in PYTHON_RUNS:
            runs.append(_python_run(cluster, run, scale))
            r = runs[-1]["python"]
            progress(f"kafka-python {run.id}: {r['records_per_sec']:,.0f} records/s, worker "
                     f"{1e6 * r['worker_cpu_s'] / r['records']:.1f} us a record")
    finally:
        cluster.down(grace=0)                                    # (no shutdown to wait for: nothing of it is kept,
        shutil.rmtree(cluster.directory, ignore_errors=True)     # its logs neither)
    fingerprint = measure_speed(lib, first=speed)
    measured_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    runs = [{**r, "host": fingerprint, "measured_at": measured_at} for r in runs]
    output.parent.mkdir(parents=True, exist_ok=True)
    runs_file = output.with_suffix(".runs.jsonl")
    runs_file.write_text("".join(json.dumps(r) + "\n" for r in runs))
    profile = write_host_profile(runs_file, output, short)
    if not short:                            # `hardware.profile: this-host` from now on
        kept = this_host_path()
        kept.parent.mkdir(parents=True, exist_ok=True)
        kept.write_text(profile_yaml({**profile, "name": THIS_HOST,
                                      "provenance": {"java": {**profile["provenance"]["java"],
                                                              "runs": str(runs_file.resolve())}}}))
    say(f"kafkasim: calibrate host: wrote {output} and {runs_file} in {time.monotonic() - started:.0f} s "
        f"(speed score {fingerprint['speed_score']:.0f})")
    return profile


def _matrix(lib: Path, classes: Path, cluster: Cluster, scale: float, say) -> tuple[list[dict], dict]:
    """MATRIX in one HostCosts JVM, then each codec alone and the speed score it measures last: (runs, speed)."""
    jmx = ",".join(f"127.0.0.1:{cluster.jmx_port(i)}" for i in range(NODES))
    pids = ",".join(str(p) for p in cluster.state.pids)
    cmd = java_command(lib, TOOL.stem, ["--bootstrap-server", cluster.state.bootstrap, "--jmx", jmx,
                                        "--broker-pids", pids,
                                        "--clock-ticks", str(os.sysconf("SC_CLK_TCK"))], classes=classes)
    stderr = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, text=True,
                            start_new_session=True)
    ask = lambda line, what: json.loads(_next_result(proc, stderr, what, send=line).split(" ", 1)[1])  # noqa: E731
    runs: list[dict] = []
    ssl = {"bootstrap.servers": cluster.state.ssl_bootstrap, **tls.client_properties(cluster.state.tls_directory)}
    try:
        for i, run in enumerate(MATRIX):
            background = Run(BACKGROUND_ID, 0, 0, partitions=run.background, replicas=NODES) if run.background else None
            if background:
                ask(background.topic_line("create", spread=True), "the idle background topic")
            result = ask(run.line(scale, i == 0, ssl if run.tls else None), run.id)
            if background:
                ask(background.topic_line("delete"), "deleting the background topic")
            runs.append({**result, "size": run.size, "codec": run.codec, "replicas": run.replicas,
                         "leader": 1, "throttled": run.rate > 0, "acks": run.acks, "partitions": run.partitions,
                         **({"tls": True} if run.tls else {}),
                         **({"background_led": background.led_by_node_1(spread=True)} if background else {})})
            m = result["measured"]
            say(f"[{i + 1}/{len(MATRIX)}] {run.id}: {m['records'] / m['seconds']:,.0f} records/s, worker "
                f"{1e6 * m['worker_cpu_s'] / m['records']:.2f} us a record, Sender "
                f"{1e6 * m['sender_cpu_s'] / max(1, m['request-total']):.0f} us a request")
        for run in (PERF_TEST, *PYTHON_RUNS):          # the topics of the runs that follow in other processes
            ask(run.topic_line("create"), f"creating {run.topic}")
        proc.stdin.close()
        codecs_line = _next_result(proc, stderr, "each codec alone", prefix="CODECS ")
        runs.append({"id": "codecs-alone", "codecs_alone": json.loads(codecs_line.split(" ", 1)[1])})
        speed = json.loads(_next_result(proc, stderr, "the speed score", prefix="SPEED ").split(" ", 1)[1])
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        stderr.close()
    return runs, speed


# JVMs the speed score is the best of: the hot path's compiled speed differs from JVM to JVM (on 2026-11-26's host
# four runs a minute apart gave 4171, 2397, 3956 and 3814), and the best of three lands on the fast mode.
SPEED_JVMS = 3


def measure_speed(lib: Path | None = None, runs: int = SPEED_JVMS, first: dict | None = None) -> dict:
    """This host's fingerprint, its speed score measured now (the best of `runs` HostCosts --speed JVMs, ≈ 3 s
    each, `first` counting as one), remembered for this boot."""
    lib = lib or ensure_kafka(quiet=True)
    cmd = java_command(lib, TOOL.stem, ["--speed"], classes=compiled(lib, TOOL))
    speeds = [first] if first else []
    while len(speeds) < runs:
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            raise LiveError("measuring this host's speed score did not finish in 60 s") from None
        line = next((ln for ln in out.stdout.splitlines() if ln.startswith("SPEED ")), None)
        if line is None:
            raise LiveError(f"measuring this host's speed score failed: "
                            f"{runners.last_line(out.stderr)}")
        speeds.append(json.loads(line.split(" ", 1)[1]))
    fingerprint = hostinfo.fingerprint(best_speed(speeds))
    hostinfo.remember(fingerprint)
    return fingerprint


def best_speed(speeds: list[dict]) -> dict:
    """The fastest of several JVMs' speed measurements; its spread the widest of theirs and of the scores
    between JVMs."""
    best = max(speeds, key=lambda x: x["score"])
    scores = [x["score"] for x in speeds]
    between = (max(scores) - min(scores)) / max(scores) if max(scores) > 0 else 0.0
    return {**best, "spread": max([between] + [x.get("spread", 0.0) for x in speeds]), "jvms": len(speeds)}


BACKGROUND_ID = "background"         # (its topic: kafkasim-host-background)


PERF_TEST = Run("perf-test-cold", 1000, 300_000)
# Fresh JVMs measured: one JVM's Sender excess varied 0.6–1.4 CPU-s on one host (sessions 25–29), with the host's
# speed of the moment; the profile takes each figure's median (jvm.sender_cold_cpu_ms sets the tails' start)
COLD_JVMS = 3


def _cold_perf_test(lib: Path, cluster: Cluster, scale: float, consumer_reads: bool = True) -> dict:
    """One real kafka-producer-perf-test run in a fresh JVM, as every run the model predicts starts: its threads'
    CPU (the JIT compilers', the Sender's while its code is cold) and its own counters; with `consumer_reads`, fresh
    consumer JVMs' reads of what it wrote."""
    run = PERF_TEST
    records = max(20_000, int(run.records * scale))
    cmd = java_command(lib, "org.apache.kafka.tools.ProducerPerformance",
                       _perf_args(cluster, run, records, codec=True), heap=CLIENT_HEAP)
    threads = environment.ThreadCpu()       # (at_start: when the Sender first shows, perf-test's clock starts)
    parsed = _tool_run(run, cmd, records / 1000, threads.sample)
    reads = _cold_reads(lib, cluster, run.topic, records) if consumer_reads else []
    metric = lambda name: parsed.metrics.get(f"producer-metrics:{name}")                          # noqa: E731
    return {"id": run.id, "size": run.size, "codec": run.codec, "replicas": 1, "leader": 1, "throttled": False,
            "perf_test": {"records": records, "records_per_sec": parsed.total.records_per_sec,
                          "seconds": records / parsed.total.records_per_sec,
                          "threads": {k: round(v, 3) for k, v in threads.totals.items()},
                          "threads_at_start": {k: round(v, 3) for k, v in threads.at_start.items()},
                          "request-total": metric("request-total"), "batch-size-avg": metric("batch-size-avg"),
                          "outgoing-byte-total": metric("outgoing-byte-total"),
                          "record-send-total": metric("record-send-total"),
                          # (its first send()'s wait for metadata in a fresh JVM, as every perf-test run's: 250–506 ms
                          # in the stored runs, where the warm HostCosts JVM's first producer waits ≈ 50–175)
                          "metadata-wait-time-ns-total": metric("metadata-wait-time-ns-total"),
                          "consumer_reads": reads}}


def _cold_reads(lib: Path, cluster: Cluster, topic: str, records: int) -> list[dict]:
    """kafka-consumer-perf-test in two fresh JVMs reading the topic: one record (the JVM's start, the consumer's
    construction, the group's join and a first fetch) and every record; each one's main-thread CPU and counts."""
    out = []
    for n in (1, records):
        threads = environment.ThreadCpu()
        args = ["--bootstrap-server", cluster.state.bootstrap, "--topic", topic, "--num-records", str(n),
                "--group", f"kafkasim-host-cold-{n}", "--timeout", str(consumerperf.IDLE_TIMEOUT_MS),
                "--print-metrics"]
        cmd = java_command(lib, "org.apache.kafka.tools.ConsumerPerformance", args, heap=CLIENT_HEAP)
        run = runners.run(cmd, 120 + n / 1000, threads.sample)
        parsed = consumerperf.parse(run.stdout)
        if run.exit_status != 0 or parsed.result() is None:
            raise LiveError(f"calibrate host: a fresh kafka-consumer-perf-test reading {n} records failed: "
                            f"{runners.last_line(run.stderr)}")
        metric = lambda name: parsed.metrics.get(f"consumer-fetch-manager-metrics:{name}") or 0.0   # noqa: E731
        out.append({"records": metric("records-consumed-total"), "fetch-total": metric("fetch-total"),
                    "bytes-consumed-total": metric("bytes-consumed-total"),
                    "main_cpu_s": threads.totals.get("worker", 0.0),
                    "threads": {k: round(v, 3) for k, v in threads.totals.items()}})
    return out


# kafka-python, which kafkasim installs: record sizes and batch sizes enough to separate its per-record, per-byte
# and per-request costs (it is ten times slower than the Java client: short runs)
PYTHON_RUNS = (Run("kp-s100-b16k", 100, 40_000, batch=16384), Run("kp-s100-b64k", 100, 40_000),
               Run("kp-s1k-b16k", 1000, 30_000, batch=16384), Run("kp-s1k-b64k", 1000, 30_000))


def _python_run(cluster: Cluster, run: Run, scale: float) -> dict:
    """One kafka-python perf-test run (kafkasim.validation.pyperf): its main thread's CPU (the worker) and its other
    threads' (the I/O thread, the Sender), and its own counters."""
    records = max(3000, int(run.records * scale))
    cmd = [sys.executable, "-m", "kafkasim.validation.pyperf", "--client", "kafka-python",
           *_perf_args(cluster, run, records, codec=False)]
    threads = environment.ThreadCpu(kind=environment.main_or_other)
    parsed = _tool_run(run, cmd, records / 200, threads.sample)
    metric = lambda name: parsed.metrics.get(f"producer-metrics:{name}") or 0.0                   # noqa: E731
    # kafka-python keeps rates, not totals: its requests from the records a request carried, its bytes from their size
    requests = records / metric("records-per-request-avg") if metric("records-per-request-avg") else None
    return {"id": run.id, "python": {
        "client": "kafka-python", "records": records, "size": run.size,
        "records_per_sec": parsed.total.records_per_sec,
        "worker_cpu_s": threads.totals.get("worker", 0.0), "sender_cpu_s": threads.totals.get("sender", 0.0),
        "request-total": requests, "outgoing-byte-total": requests * metric("request-size-avg") if requests else None}}


def _perf_args(cluster: Cluster, run: Run, records: int, codec: bool) -> list[str]:
    """perf-test's flags for one of the runs here (the Python copy takes the same)."""
    props = {"acks": run.acks, "batch.size": run.batch, "linger.ms": run.linger, "enable.idempotence": "false",
             **({"compression.type": run.codec} if codec else {})}
    return ["--bootstrap-server", cluster.state.bootstrap, "--topic", run.topic, "--num-records", str(records),
            "--record-size", str(run.size), "--throughput", "-1", "--print-metrics",
            "--command-property", *(f"{k}={v}" for k, v in props.items())]


def _tool_run(run: Run, cmd: list[str], seconds: float, watch):
    """One perf-test run on its topic (HostCosts made it), watched while it runs: its parsed output, or a one-line
    error naming the run."""
    out = runners.run(cmd, 120 + seconds, watch)
    parsed = perftest.parse(out.stdout)
    if out.exit_status != 0 or parsed.total is None:
        raise LiveError(f"calibrate host: the run {run.id} failed: {runners.last_line(out.stderr)}")
    return parsed


def _next_result(proc: subprocess.Popen, stderr, what: str, prefix: str = "RESULT ", send: str = "") -> str:
    """The tool's next line of the kind asked for (after sending it `send`, if any); a one-line error naming the
    step if it ends first."""
    if send:
        proc.stdin.write(send + "\n")
        proc.stdin.flush()
    for line in proc.stdout:
        if line.startswith(prefix):
            return line
    proc.wait()
    stderr.seek(0)
    err = [ln for ln in stderr.read().splitlines() if ln.strip() and not ln.startswith("\tat ")]
    why = next((ln for ln in reversed(err) if "Exception" in ln or "ERROR" in ln), err[-1] if err else "no output")
    raise LiveError(f"calibrate host: {what} failed: {why.strip()[:300]}")


def write_host_profile(runs_file: Path, output: Path, short: bool = False) -> dict:
    """The profile of the runs `calibrate host` stored (`--from-runs`: the regression again, nothing measured)."""
    try:
        runs = [json.loads(line) for line in Path(runs_file).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise UserError(f"--from-runs {runs_file}: not a calibrate-host runs file ({exc})") from None
    if not runs or "host" not in runs[0] or "measured" not in runs[0]:
        raise UserError(f"--from-runs {runs_file}: not a calibrate-host runs file (no runs with their host)")
    profile = host_profile(runs, runs[0]["host"], Path(output), short)
    Path(output).write_text(profile_yaml(profile))
    return profile


def host_profile(runs: list[dict], fingerprint: dict, output: Path, short: bool) -> dict:
    costs, notes = host_costs(runs)
    defaults = {k: f.default for k, f in HARDWARE_FIELDS.items()}
    hardware, java, errors = profile_sections(costs, defaults)
    python_runs = [r["python"] for r in runs if "python" in r and r["python"].get("request-total")]
    reads = [read for r in runs if not r.get("tls") for read in r.get("consumed", [])]
    if reads:
        measured, consumer_notes = consumer_costs(reads, costs, notes["idle_broker_cores"])
        cold = next((r["perf_test"].get("consumer_reads") for r in runs if "perf_test" in r), None)
        if cold:
            measured["consumer.cold_cpu_ms"] = consumer_cold(cold, measured)
            measured.update(consumer_jit(cold))
        costs, notes = {**costs, **measured}, {**notes, **consumer_notes}
        _, consumer_java, consumer_errors = profile_sections(measured, defaults)
        java, errors = {**java, **consumer_java}, {**errors, **consumer_errors}
    clients = {"java": java}
    if python_runs:
        _, clients["kafka-python"], python_errors = profile_sections(client_costs(python_runs), defaults)
        errors = {**errors, **{f"kafka-python:{k}": v for k, v in python_errors.items()}}
    # Not measured here: the loopback network (taken as fast and near), the disk (page cache absorbs these runs)
    measured_at = runs[0].get("measured_at", "unknown")       # (when the runs were, not when this regression is)
    return {
        "name": output.stem,
        "description": f"Measured by `kafkasim calibrate host`{' --short' if short else ''} on {fingerprint['cpu']} "
                       f"({fingerprint['cores']} cores, speed {fingerprint['speed_score']:.0f}), {measured_at[:10]}: "
                       f"threads' CPU of the real Java client and brokers, by regression.",
        "host": fingerprint,
        "provenance": {"java": {"runs": output.with_suffix(".runs.jsonl").name, "measured_at": measured_at,
                                "configs": [r["id"] for r in runs], "standard_errors": errors,
                                "runs_per_cost": {k: c.runs for k, c in costs.items()}, **notes}},
        "hardware": {"colocated_cores": fingerprint["cores"], "rtt_ms": 0.05, "nic_mbit": 40000, "disk_mb_s": 400,
                     **hardware},
        "clients": clients,
    }
