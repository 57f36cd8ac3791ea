"""Live smoke test: a real Kafka 4.3.1 broker (downloaded once from Maven Central), two short perf-test runs
(the Java tool and kafkasim's kafka-python clone), sane results, and nothing left running afterwards."""
import os
import re
import subprocess
from pathlib import Path

import pytest

from kafkasim.model.errors import UserError
from kafkasim.model.scenario import load_scenario
from kafkasim.validation import admin, perftest, runners
from kafkasim.validation.cluster import Cluster
from kafkasim.validation.kafka_dist import ensure_kafka, java_command
from kafkasim.validation.measure import Config, Measurer
from kafkasim.validation.runners import Target
from kafkasim.validation.store import RunStore

pytestmark = pytest.mark.live

def test_idle_background_partitions_are_created_beside_the_topic_and_removed(tmp_path):
    """cluster.background_partitions on a private cluster: an idle topic with that many replicas a broker exists
    while the configuration runs, and goes with its topic."""
    from kafkasim.validation.targets import ClusterPool, network_of

    scenario = tmp_path / "bg.yaml"
    scenario.write_text(SCENARIO.replace("brokers: 1", "brokers: 1, background_partitions: 40, background_bytes: 0")
                        .replace("records: 20000", "records: 5000"))
    store = RunStore(tmp_path / "runs.jsonl")
    pool = ClusterPool(tmp_path / "pool", base_port=_free_base_port(), say=lambda text: None)
    config = Config(scenario, "java")
    said, seen = [], []
    try:
        target = pool.target(1, network_of(config.load()))
        measurer = Measurer(store, repeat=1, warmup_records=0)
        measurer.say = said.append
        lib = ensure_kafka(quiet=True)
        real_run = measurer._run_once

        def run_once(*args):      # the topics while the run is under way
            seen.extend(admin.topic_command(lib, target.admin_bootstrap, ["--list"]).stdout.split())
            return real_run(*args)
        measurer._run_once = run_once
        measurer.measure(config, target)
        [run] = store.records()
        assert run["ok"], run["error"]
        assert run["scenario"]["cluster.background_partitions"] == 40
        assert any("creating 40 idle partitions (RF 1, 40 replicas a broker)" in line for line in said), said
        background = f"{run['target']['topic']}-background"
        assert background in seen
        topics = admin.topic_command(lib, target.admin_bootstrap, ["--list"]).stdout.split()
        assert background not in topics and run["target"]["topic"] not in topics
    finally:
        directory = pool.directory
        pool.close()
        assert _processes_mentioning(str(directory.resolve())) == []


SCENARIO = """
name: live-smoke
producer: {acks: 1, enable.idempotence: false, batch.size: 65536, linger.ms: 5, compression.type: lz4}
workload: {records: 20000, record_size: 512, throughput: -1}
topic: {partitions: 2, replication.factor: 1}
cluster: {brokers: 1}
"""


def _free_base_port(brokers: int = 1) -> int:
    """A base port whose every port a cluster takes is free."""
    from kafkasim.validation.cluster import free_base_port
    return free_base_port(29092, brokers, step=7, tries=120)


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                pass
    return [p for p in pids if p != os.getpid()]


@pytest.fixture
def broker(tmp_path):
    cluster = Cluster(tmp_path / "cluster", brokers=1, base_port=_free_base_port())
    try:
        cluster.up(timeout=120)
        yield cluster
    finally:
        cluster.down()
        assert _processes_mentioning(str(cluster.directory)) == []


def test_java_and_kafka_python_runs(broker, tmp_path):
    scenario = tmp_path / "smoke.yaml"
    scenario.write_text(SCENARIO)
    store = RunStore(tmp_path / "runs.jsonl")
    bootstrap = broker.state.bootstrap
    target = Target(bootstrap, bootstrap, brokers=1, managed=True)
    measurer = Measurer(store, repeat=1, warmup_records=0)
    measurer.measure(Config(scenario, "java"), target)
    measurer.measure(Config(scenario, "kafka-python", ["workload.records=10000"]), target)

    runs = {r["client"]["library"]: r for r in store.records()}
    assert set(runs) == {"java", "kafka-python"}
    for client, run in runs.items():
        n = run["records_requested"]
        assert run["ok"], run["error"]
        assert run["delivery_errors"] == 0
        assert run["result"]["records"] == n
        assert 100 < run["result"]["records_per_sec"] < 5_000_000
        assert 0 <= run["result"]["latency_p50_ms"] <= run["result"]["latency_p99_ms"] <= run["result"]["latency_max_ms"]
        assert run["metrics"]["producer-metrics:record-send-rate"] > 0
        assert 0.2 < run["metrics"]["producer-metrics:compression-rate-avg"] <= 1.05
        assert run["scenario"]["producer.compression.type"] == "lz4"
        assert run["environment"]["cores"] >= 1
        cpu = run["environment"]["cpu_during_run"]      # where the host's CPU went: client, broker, the rest
        assert cpu["client_cores"] > 0.05 and cpu["cluster_cores"] > 0.05
        assert cpu["busy_cores"] >= cpu["client_cores"] + cpu["cluster_cores"] - 0.1
    java_cpu = runs["java"]["environment"]["cpu_during_run"]
    threads = java_cpu["client_threads"]                 # the JVM's threads' CPU-seconds by kind
    assert threads["worker"] > 0 and threads["sender"] > 0 and threads["C2"] > 0
    assert sum(threads.values()) <= java_cpu["client_cores"] * runs["java"]["seconds"] + 0.1
    assert "client_threads" not in runs["kafka-python"]["environment"]["cpu_during_run"]
    assert runs["java"]["client"]["version"] == "4.3.1"
    assert runs["java"]["metrics"]["producer-metrics:record-send-total"] == runs["java"]["records_requested"]

    # A rerun into the same file skips what is there (resumable).
    assert measurer.measure(Config(scenario, "java"), target) == []


def _measuring(broker, tmp_path, warmup_records: int):
    """The smoke scenario's file, the `broker` fixture's cluster as one kafkasim started, a captured output and a
    Measurer of one run per configuration writing into tmp_path."""
    import io
    scenario = tmp_path / "smoke.yaml"
    scenario.write_text(SCENARIO)
    bootstrap = broker.state.bootstrap
    target = Target(bootstrap, bootstrap, brokers=1, managed=True)
    out = io.StringIO()
    return scenario, target, out, Measurer(RunStore(tmp_path / "runs.jsonl"), repeat=1,
                                           warmup_records=warmup_records, out=out)


def test_the_first_configuration_on_a_cluster_warms_its_brokers(broker, tmp_path, monkeypatch):
    """The warm-up of the first configuration measured on a cluster repeats until CLUSTER_WARMUP_SECONDS of load have
    run, and says how the brokers' CPU a record went; later configurations warm up once. Each run's progress line
    gives the brokers' CPU a record."""
    from kafkasim.validation import measure
    monkeypatch.setattr(measure, "CLUSTER_WARMUP_SECONDS", 10.0)   # a first cold run of 20000 takes 2-6 s
    monkeypatch.setattr(measure, "BROKER_JIT_QUIET", 100.0)        # (the compilers' own rule: the test below)
    scenario, target, out, measurer = _measuring(broker, tmp_path, warmup_records=20000)
    measurer.measure(Config(scenario, "java"), target)
    measurer.measure(Config(scenario, "java", ["producer.linger.ms=1"]), target)
    first, second = [line for line in out.getvalue().splitlines() if "warm-up" in line]
    sent, runs, seconds = re.search(r"warm-up \((\d+) records in (\d+) runs, (\d+) s, discarded\): [\d,]+ rec/s; "
                                    r"the brokers' CPU a record [\d.]+ → [\d.]+ us; their compilers [\d.]+ → [\d.]+ "
                                    r"cores$", first).groups()
    assert int(runs) >= 2 and int(seconds) >= 10 and int(sent) > 20000 * int(runs), first   # later runs sized to fill
    assert re.search(r"warm-up \(20000 records, discarded\): [\d,]+ rec/s$", second), second
    assert [r["ok"] for r in measurer.store.records()] == [True, True]
    runs = [line for line in out.getvalue().splitlines() if " run 1/1: " in line]   # each says what the brokers took
    assert len(runs) == 2 and all(re.search(r", brokers [\d.]+ us CPU a record \(", line) for line in runs), runs


def _end_offsets(lib, bootstrap: str, topic: str) -> dict[int, int]:
    out = subprocess.run(java_command(lib, "org.apache.kafka.tools.GetOffsetShell",
                                      ["--bootstrap-server", bootstrap, "--topic", topic]),
                         capture_output=True, text=True, check=True).stdout
    return {int(p): int(o) for p, o in (line.rsplit(":", 2)[1:] for line in out.split())}


def test_several_threads_share_one_producer(broker, tmp_path):
    """validation/ProducerThreads.java: the records split over the threads sharing one producer, the partitions each
    choice writes (read back as the topic's end offsets), and a measured run with the time in send()."""
    lib = ensure_kafka()
    bootstrap = broker.state.bootstrap
    target = Target(bootstrap, bootstrap, brokers=1, managed=True)
    base = SCENARIO.replace("partitions: 2", "partitions: 6").replace("records: 20000", "records: 30001")
    (tmp_path / "base.yaml").write_text(base)
    for choice, threads in (("round-robin", 3), ("per-thread", 2)):
        sc = load_scenario(tmp_path / "base.yaml", [f"threads={threads}", f"workload.partition_choice={choice}"])
        topic = f"threads-{choice}"
        admin.create_topic(lib, bootstrap, topic, 6, 1)
        out = runners.run(runners.argv("java", lib, sc, target, topic, 30001, warmup_records=3000), timeout=120)
        assert out.exit_status == 0, out.stderr[-2000:]
        parsed = perftest.parse(out.stdout)
        assert parsed.total.records == 30001 and parsed.worker_latency_us > 0
        # the steady state: the records past each thread's share of the warm-up, timed from the first of them (timed
        # from the start, its rate would be 27001/30001 of the total's)
        assert parsed.steady_state.records == 27001
        assert parsed.steady_state.records_per_sec > 0.95 * parsed.total.records_per_sec
        ends = _end_offsets(lib, bootstrap, topic)
        if choice == "round-robin":   # one shared counter: the partitions take turns, whichever thread sends
            assert sorted(ends.values()) == [5000] * 5 + [5001], ends
        else:                         # thread 0 writes partitions 0, 2, 4 and sends 15001 records; thread 1 the rest
            assert ends[0] + ends[2] + ends[4] == 15001 and ends[1] + ends[3] + ends[5] == 15000, ends
            assert min(ends.values()) > 0, ends
    scenario = tmp_path / "threads.yaml"
    scenario.write_text(SCENARIO + "threads: 2\n")
    store = RunStore(tmp_path / "runs.jsonl")
    Measurer(store, repeat=1, warmup_records=0).measure(Config(scenario, "java"), target)
    [run] = store.records()
    assert run["ok"], run["error"]
    assert run["result"]["records"] == 20000 and run["worker_latency_us"] > 0
    assert " ProducerThreads " in run["command"] and "--threads 2" in run["command"]
    assert run["environment"]["cpu_during_run"]["client_threads"]["worker"] > 0   # its threads count as workers


def test_a_clients_cpu_limit_is_applied_as_a_containers(broker, tmp_path):
    """hardware.client_cpu_limit=0.3: perf-test runs in a cgroup with a quota of 30 ms every 100 ms, which it runs
    out of in most periods; its CPU stays under the limit, and the cgroup goes with the run."""
    from kafkasim.validation.cpulimit import CpuLimit
    try:
        CpuLimit(0.3, name="kafkasim-probe").close()
    except UserError as exc:
        pytest.skip(str(exc))
    bootstrap = broker.state.bootstrap
    scenario = tmp_path / "limited.yaml"
    scenario.write_text(SCENARIO + "hardware: {colocated_cores: 0, background_cores: 0, client_cores: 1, "
                                   "client_cpu_limit: 0.3}\n")
    store = RunStore(tmp_path / "runs.jsonl")
    Measurer(store, repeat=1, warmup_records=0).measure(Config(scenario, "java"), Target(bootstrap, bootstrap,
                                                                                         brokers=1, managed=True))
    [run] = store.records()
    assert run["ok"], run["error"]
    limit = run["environment"]["client_cpu_limit"]
    assert limit["cores"] == 0.3 and limit["period_ms"] == 100.0, limit
    assert limit["throttled_periods"] >= 0.5 * limit["periods"] > 0, limit
    cpu = run["environment"]["cpu_during_run"]
    assert cpu["client_cores"] <= 0.36, cpu             # (the quota, and a sampling's slack)
    assert not [p for p in Path("/sys/fs/cgroup").rglob("kafkasim-client-*")]


def test_an_older_java_client_is_the_one_measured(broker, tmp_path, monkeypatch):
    """client.version 2.2: its kafka-clients release fetched from Maven Central, run by ProducerThreads; its own
    partitioner (round-robin for records without a key) shows in the topic's end offsets."""
    lib = ensure_kafka()
    bootstrap = broker.state.bootstrap
    target = Target(bootstrap, bootstrap, brokers=1, managed=True)
    scenario = tmp_path / "old.yaml"
    scenario.write_text(SCENARIO.replace("partitions: 2", "partitions: 6").replace("records: 20000", "records: 30001")
                        + 'client: {library: java, version: "2.2"}\n')
    store = RunStore(tmp_path / "runs.jsonl")
    monkeypatch.setattr(admin, "delete_topic", lambda *args: None)   # the topic is read back below
    Measurer(store, repeat=1, warmup_records=0).measure(Config(scenario, "java"), target)
    [run] = store.records()
    assert run["ok"], run["error"]
    assert run["client"] == {"library": "java", "version": "2.2.2"}
    assert "kafka-clients-2.2.2" in run["command"] and " ProducerThreads " in run["command"]
    assert run["result"]["records"] == 30001 and run["worker_latency_us"] > 0
    assert run["metrics"]["producer-metrics:record-send-total"] == 30001
    ends = _end_offsets(lib, bootstrap, f"kafkasim-{run['key'][:8]}")   # (the default topic.name)
    assert sorted(ends.values()) == [5000] * 5 + [5001], ends     # one record to each partition in turn


def test_a_broker_down_for_the_measurement(tmp_path):
    """cluster.offline_brokers=1 on a private 3-node cluster: node 3 is stopped once the topic exists, the run
    sends it nothing and loses nothing (acks=all with the two left in sync), and afterwards every node runs
    again, the topic is gone, and nothing is left once the cluster stops."""
    from kafkasim.validation.targets import ClusterPool, network_of

    scenario = tmp_path / "down.yaml"
    scenario.write_text(SCENARIO.replace("acks: 1", "acks: all").replace(
        "topic: {partitions: 2, replication.factor: 1}", "topic: {partitions: 6, replication.factor: 3, "
        "min.insync.replicas: 2}").replace("brokers: 1", "brokers: 3, offline_brokers: 1"))
    store = RunStore(tmp_path / "runs.jsonl")
    pool = ClusterPool(tmp_path / "pool", base_port=_free_base_port(3), say=lambda text: None)
    config = Config(scenario, "java")
    said = []
    try:
        target = pool.target(3, network_of(config.load()))
        measurer = Measurer(store, repeat=1, warmup_records=0)
        measurer.say = said.append
        measurer.measure(config, target)
        [led] = [line.split("led now: ")[1] for line in said if "partitions led now" in line]
        counts = dict(part.rsplit(" ", 1) for part in led.split(", "))       # {"node 1": "3", …}
        assert set(counts) <= {"node 1", "node 2"} and sum(map(int, counts.values())) == 6, led
        [run] = store.records()
        assert run["ok"], run["error"]
        assert run["delivery_errors"] == 0 and run["target"]["offline_brokers"] == 1
        assert run["scenario"]["cluster.offline_brokers"] == 1
        requests = {node: run["metrics"].get(f"producer-node-metrics:request-total{{node-id=node-{node}}}", 0.0)
                    for node in (1, 2, 3)}
        assert requests[1] > 0 and requests[2] > 0 and requests[3] == 0, requests
        assert pool.cluster.status()["up"]
        topics = admin.topic_command(ensure_kafka(quiet=True), target.admin_bootstrap, ["--list"]).stdout.split()
        assert run["target"]["topic"] not in topics
    finally:
        directory = pool.directory
        pool.close()
        assert _processes_mentioning(str(directory.resolve())) == []


def test_jit_sampler_shows_the_compilers_of_a_fresh_producer(broker, tmp_path, capsys):
    """`python -m kafkasim.validation.jit`: a short perf-test run whose JVM threads' CPU is read from /proc; the
    worker and the JIT compilers have used CPU, and the perf-test total is there."""
    from kafkasim.validation import jit

    scenario = tmp_path / "jit.yaml"
    scenario.write_text(SCENARIO.replace("records: 20000", "records: 30000").replace("throughput: -1",
                                                                                     "throughput: 10000"))
    assert jit.main([str(scenario), "--bootstrap-server", broker.state.bootstrap]) == 0
    out = capsys.readouterr().out.splitlines()
    numbers = lambda fields: all(f.replace(".", "").isdigit() for f in fields)
    samples = [line.split() for line in out if len(line.split()) == 8 and numbers(line.split())]
    assert len(samples) >= 2
    worker, sender, c1, c2 = (float(x) for x in samples[-1][1:5])
    assert worker > 0 and c1 > 0 and c2 > 0
    assert any(line.startswith("total: ") for line in out)
    per_request = [line.split() for line in out if line.strip().startswith(("worker:", "sender:"))]
    assert len(per_request) == 2 and all(float(line[1]) > 0 for line in per_request)
    # the broker's CPU, and its own compilers' part of it
    brokers = next(line for line in out if line.startswith("brokers: ")).split()
    everything, compilers = float(brokers[1]), float(brokers[-1])
    assert everything > 0 and 0 <= compilers <= everything
    waits = next(line for line in out if line.startswith("waited for a core: "))
    kinds = [w.split()[0] for w in waits.split(": ", 1)[1].split(", ")]
    assert kinds == ["worker", "sender", "C1", "C2", "gc", "other"]


def test_jit_runs_the_topic_tools_where_the_brokers_are(tmp_path, monkeypatch):
    """Behind an emulated network the brokers live in a network namespace: the jit tool creates and deletes its
    topic through the target's admin prefix (`ip netns exec …`), as `kafkasim measure` does (without it the topic
    command waited 60 s for a broker it could not reach)."""
    from kafkasim.validation import admin, jit, kafka_dist, targets

    ns = ("ip", "netns", "exec", "kafkasim-test")
    target = Target("10.0.0.1:19092", "127.0.0.1:19092", 1, ns, ns)
    calls = []
    monkeypatch.setattr(targets, "resolve", lambda *a, **k: target)
    monkeypatch.setattr(kafka_dist, "ensure_kafka", lambda: tmp_path)
    monkeypatch.setattr(admin, "create_topic", lambda *a, **k: calls.append(("create", a[1], k.get("prefix"))))
    monkeypatch.setattr(admin, "delete_topic", lambda *a, **k: calls.append(("delete", a[1], k.get("prefix"))))

    def no_run(*args, **kwargs):
        raise KeyboardInterrupt      # stop before perf-test starts
    monkeypatch.setattr(jit, "_sample", no_run)
    scenario = tmp_path / "jit.yaml"
    scenario.write_text(SCENARIO)
    with pytest.raises(KeyboardInterrupt):
        jit.main([str(scenario), "--set", "network.rtt_ms=1"])
    assert calls == [("create", "127.0.0.1:19092", ns), ("delete", "127.0.0.1:19092", ns)]


def test_jit_thread_kinds():
    from kafkasim.validation.environment import thread_kind as kind_of

    assert [kind_of(n) for n in ("C2 CompilerThre", "C1 CompilerThre", "kafka-producer-", "java", "GC Thread#0",
                                 "G1 Refine#0", "javaagent")] == ["C2", "C1", "sender", "worker", "gc", "gc", "other"]


def test_host_busy_seconds_leaves_out_idle_and_iowait():
    from kafkasim.validation.environment import host_busy_seconds

    # user nice system idle iowait irq softirq steal (ticks)
    tick = os.sysconf("SC_CLK_TCK")
    stat = f"cpu  {100 * tick} {10 * tick} {50 * tick} {1000 * tick} {30 * tick} {5 * tick} {5 * tick} 0 0 0\ncpu0 ..."
    assert host_busy_seconds(stat) == pytest.approx(170.0)


def test_codec_levels_are_measured_through_the_clients_own_streams(tmp_path):
    """validation/CodecLevels.java runs against the Kafka client jars and reports a cost and a ratio per level:
    lz4 at any level but its default 9 is LZ4HC, which costs far more for a slightly smaller batch."""
    from kafkasim.validation import codec_levels

    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog; " * 2000)
    rows = codec_levels.measure(0.05, text, levels={"lz4": [9, 1], "gzip": [1]})
    got = {(r["codec"], int(r["level"]), r["payload"]): (float(r["ns_per_byte"]), float(r["ratio"])) for r in rows}
    assert len(got) == 9                                   # three payloads a level
    fast, hc = got[("lz4", 9, "random-letters")], got[("lz4", 1, "random-letters")]
    assert hc[0] > 3 * fast[0] and hc[1] <= fast[1]
    assert 0.5 < got[("gzip", 1, "random-letters")][1] < 0.75 and got[("gzip", 1, "text")][1] < 0.1
    # one value in every record (perf-test before 3.0) shrinks to a few % and costs gzip far less than fresh letters
    repeated, fresh = got[("gzip", 1, "repeated")], got[("gzip", 1, "random-letters")]
    assert repeated[1] < 0.05 and repeated[0] < 0.5 * fresh[0]


def test_an_older_clients_codecs_are_measured_through_its_own_jars(tmp_path):
    """The same helper runs a 2.2 client's codecs (CompressionType, before KIP-390's Compression) from its own jars,
    and names the codec libraries that client ships."""
    from kafkasim.validation import codec_levels, codec_versions

    text = tmp_path / "text.txt"
    text.write_text("the quick brown fox jumps over the lazy dog; " * 2000)
    rows = codec_levels.measure(0.05, text, levels={"zstd": [3], "snappy": [0]}, release="2.2.2")
    got = {(r["codec"], r["payload"]): float(r["ratio"]) for r in rows}
    assert len(got) == 6 and got[("zstd", "text")] < 0.1 and 0.5 < got[("zstd", "random-letters")] < 0.7
    assert codec_versions.libraries("2.2.2")["zstd"] == "zstd-jni-1.3.8-1"


def test_a_broker_killed_mid_measurement_is_reported_within_seconds(tmp_path):
    """The broker dies during the second of two runs: that run fails within seconds saying so, the first run is
    kept, the measurement stops (no further run waits out its time limit), and nothing is left running."""
    import signal
    import threading
    import time

    from kafkasim.model.errors import LiveError
    from kafkasim.validation.targets import ClusterPool, network_of

    scenario = tmp_path / "dies.yaml"
    scenario.write_text(SCENARIO.replace("records: 20000", "records: 40000").replace("throughput: -1",
                                                                                     "throughput: 4000"))
    store = RunStore(tmp_path / "runs.jsonl")
    pool = ClusterPool(tmp_path / "pool", base_port=_free_base_port(1), say=lambda text: None)
    config = Config(scenario, "java")
    killed = {}

    def kill_during_second_run():
        while len(store.records()) < 1:
            time.sleep(0.2)
        time.sleep(3)
        killed["at"] = time.monotonic()
        os.kill(pool.cluster.state.pids[0], signal.SIGKILL)

    try:
        target = pool.target(1, network_of(config.load()))
        measurer = Measurer(store, repeat=3, warmup_records=0)
        said = []
        measurer.say = said.append
        killer = threading.Thread(target=kill_during_second_run, daemon=True)
        killer.start()
        with pytest.raises(LiveError, match="broker 1 is down"):
            measurer.measure(config, target)
        assert time.monotonic() - killed["at"] < 15
        first, second = store.records()
        assert first["ok"] and not second["ok"] and "broker 1 is down" in second["error"]
        # (its topic is not deleted: the dying broker's port may still take the delete, which would wait a minute)
        assert any("was left on" in line and "broker 1 is down" in line for line in said)
    finally:
        directory = pool.directory
        pool.close()
        assert _processes_mentioning(str(directory.resolve())) == []


def _measure_cli(tmp_path, name: str, records: int, throughput: int):
    """`kafkasim measure` on its own private cluster, in a child process (stderr a pipe, read by the caller)."""
    import sys
    scenario = tmp_path / f"{name}.yaml"
    scenario.write_text(SCENARIO.replace("records: 20000", f"records: {records}")
                        .replace("throughput: -1", f"throughput: {throughput}"))
    return subprocess.Popen([sys.executable, "-m", "kafkasim.app.cli", "measure", str(scenario), "--repeat", "1",
                             "--warmup-records", "0", "--out", str(tmp_path / f"{name}.jsonl")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _cluster_dir(pid: int) -> Path:
    from kafkasim.validation.kafka_dist import cache_dir
    return cache_dir() / f"measure-cluster-{pid}"


def test_two_measurements_at_once_each_have_their_own_cluster(tmp_path):
    """Two `kafkasim measure` at once: each starts its own private cluster (own directory, own free ports), both
    finish with their run stored, and each removes what it started."""
    import json
    import time
    first = _measure_cli(tmp_path, "first", 5000, -1)
    time.sleep(2)
    second = _measure_cli(tmp_path, "second", 5000, -1)
    outs = [proc.communicate(timeout=300) for proc in (first, second)]
    assert (first.returncode, second.returncode) == (0, 0), [err[-600:] for _, err in outs]
    ports = [re.search(r"on ports (\d+)", out + err)[1] for out, err in outs]
    assert ports[0] != ports[1]
    for name, proc in (("first", first), ("second", second)):
        runs = [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        assert len(runs) == 1 and runs[0]["ok"]
        assert not _cluster_dir(proc.pid).exists() and _processes_mentioning(str(_cluster_dir(proc.pid))) == []


def test_a_closed_terminal_stops_the_measurement_and_its_cluster(tmp_path):
    """SIGHUP (the terminal closed) mid-run: measure exits 130 and its private broker is stopped and removed, as on
    Ctrl-C."""
    import signal
    import time
    proc = _measure_cli(tmp_path, "hup", 200_000, 5000)       # a 40-s run
    directory = _cluster_dir(proc.pid)
    try:
        deadline = time.monotonic() + 120
        while not _processes_mentioning(str(directory)) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.5)
        assert _processes_mentioning(str(directory)), "the private broker never started"
        time.sleep(8)                        # the broker is up and the run under way
        proc.send_signal(signal.SIGHUP)
        _, err = proc.communicate(timeout=90)
        assert proc.returncode == 130, err[-600:]
        assert "interrupted" in err
        assert _processes_mentioning(str(directory)) == [] and not directory.exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def _measure_consumer(tmp_path, name: str, *sets: str) -> dict:
    """`kafkasim measure` of the smoke scenario with `sets`, one run, no warm-up; its stored run."""
    import json
    import sys
    scenario = tmp_path / "smoke.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / f"{name}.jsonl"
    proc = subprocess.run([sys.executable, "-m", "kafkasim.app.cli", "measure", str(scenario), "--repeat", "1",
                           "--warmup-records", "0", "--out", str(out), *(a for s in sets for a in ("--set", s))],
                          capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-800:]
    [run] = [json.loads(line) for line in out.read_text().splitlines()]
    assert run["ok"], run["error"]
    return run


def test_measure_reads_a_filled_topic_with_consumer_perf_test_and_tails_a_producer(tmp_path):
    """A catch-up read (kafka-consumer-perf-test after the producer tool filled the topic) and a consumer tailing
    a throttled producer (validation/TailConsumer.java): every record read, the end-to-end latency stored, and the
    tailing consumer's CPU kept apart from other processes'."""
    read = _measure_consumer(tmp_path, "read", "producers=0", "consumers.groups=1",
                             "consumers.prefilled_records=5000")
    assert read["kind"] == "consumer" and read["result"]["records"] == 5000
    assert read["metrics"]["consumer-fetch-manager-metrics:fetch-total"] > 0
    tail = _measure_consumer(tmp_path, "tail", "consumers.groups=1", "consumers.start=before-producers",
                             "workload.records=3000", "workload.throughput=1000")
    e2e = tail["end_to_end"]
    assert e2e["records"] == 3000 and tail["result"]["records"] == 3000
    assert 0 <= e2e["e2e_p50_ms"] <= e2e["e2e_p99_ms"] <= e2e["e2e_max_ms"] < 10_000
    assert tail["environment"]["cpu_during_run"]["consumer_cores"] > 0


def test_a_warm_up_repeats_while_the_brokers_compile(broker, tmp_path, monkeypatch):
    """Any configuration's warm-up on a cluster kafkasim started repeats while the brokers' compilers take
    BROKER_JIT_QUIET cores or more, up to WARMUP_LIMIT_SECONDS (here the compilers always count as busy)."""
    from kafkasim.validation import measure
    monkeypatch.setattr(measure, "BROKER_JIT_QUIET", 0.0)
    monkeypatch.setattr(measure, "WARMUP_LIMIT_SECONDS", 6.0)
    monkeypatch.setattr(measure, "JIT_RUN_SECONDS", 1.0)
    scenario, target, out, measurer = _measuring(broker, tmp_path, warmup_records=5000)
    measurer.warm_clusters.add(measure.warmth(target))      # not the cluster's first configuration
    measurer.measure(Config(scenario, "java"), target)
    line = next(line for line in out.getvalue().splitlines() if "warm-up" in line)
    runs, seconds = re.search(r"warm-up \(\d+ records in (\d+) runs, (\d+) s, discarded\)", line).groups()
    assert int(runs) >= 2 and int(seconds) >= 6 and re.search(r"their compilers [\d.]+ → [\d.]+ cores$", line), line


def test_warm_up_reads_repeat_while_the_brokers_compile(broker, tmp_path, monkeypatch):
    """A catch-up read's discarded warm-up reads repeat, each in a group of its own, while the brokers' compilers
    are busy (here: always), up to WARMUP_LIMIT_SECONDS (10 s: one read, its group's join included, took 4.0 s
    on a slow hour of this project's VM)."""
    from kafkasim.validation import measure
    monkeypatch.setattr(measure, "BROKER_JIT_QUIET", 0.0)
    monkeypatch.setattr(measure, "WARMUP_LIMIT_SECONDS", 10.0)
    scenario, target, out, measurer = _measuring(broker, tmp_path, warmup_records=1)
    measurer.measure(Config(scenario, "java", ["producers=0", "consumers.groups=1",
                                               "consumers.prefilled_records=5000"]), target)
    reads = [line for line in out.getvalue().splitlines() if "warm-up read" in line]
    assert len(reads) >= 2 and all(re.search(r"the brokers' compilers [\d.]+ cores$", r) for r in reads), reads
    assert [r["ok"] for r in measurer.store.records()] == [True]


def test_a_tailing_consumers_configuration_warms_the_fetch_path_with_discarded_tail_runs(broker, tmp_path,
                                                                                          monkeypatch):
    """A producer with a tailing consumer: after the producer's warm-up, discarded runs of the producer with its
    tailing consumer (the brokers' fetch path: a producer's warm-up leaves it cold) while the brokers' compilers are
    busy (here: always) up to WARMUP_LIMIT_SECONDS (10 s: one run, the consumer's join included, took 5.7 s on a
    slow host, 2026-11-28); only the measured run is stored."""
    from kafkasim.validation import measure
    monkeypatch.setattr(measure, "BROKER_JIT_QUIET", 0.0)
    monkeypatch.setattr(measure, "WARMUP_LIMIT_SECONDS", 10.0)
    monkeypatch.setattr(measure, "JIT_RUN_SECONDS", 1.0)
    scenario, target, out, measurer = _measuring(broker, tmp_path, warmup_records=2000)
    measurer.warm_clusters.add(measure.warmth(target))      # not the cluster's first configuration
    measurer.measure(Config(scenario, "java", ["consumers.groups=1", "consumers.start=before-producers",
                                               "workload.records=3000", "workload.throughput=1000"]), target)
    runs = [line for line in out.getvalue().splitlines() if "warm-up run" in line]
    assert len(runs) >= 2 and all(re.search(r"the brokers' compilers [\d.]+ cores$", r) for r in runs), runs
    [stored] = measurer.store.records()
    assert stored["ok"] and stored["end_to_end"]["records"] == 3000


def test_a_group_of_two_instances_reads_the_topic_side_by_side(broker, tmp_path, monkeypatch):
    """consumers.instances=2: two kafka-consumer-perf-test processes in one group read equal shares of a topic
    filled round-robin; the run keeps the group's figures, each instance's, and both processes' threads' CPU."""
    from kafkasim.validation import consumerperf
    monkeypatch.setattr(consumerperf, "GROUP_IDLE_TIMEOUT_MS", 5000)     # (an instance left short waits this long)
    scenario, target, out, measurer = _measuring(broker, tmp_path, warmup_records=0)
    measurer.measure(Config(scenario, "java", ["producers=0", "consumers.groups=1", "consumers.instances=2",
                                               "consumers.prefilled_records=6000"]), target)
    [run] = measurer.store.records()
    assert run["ok"], run["error"]
    result = run["result"]
    assert result["records"] == 6000 and [i["records"] > 0 for i in result["instances"]] == [True, True]
    assert 0 < result["fetch_ms"] <= max(i["fetch_ms"] + i["rebalance_ms"] for i in result["instances"]) + 1000
    assert run["command"].endswith("(× 2)") and run["stdout"].count(consumerperf.HEADER) == 2
    assert run["environment"]["cpu_during_run"]["client_threads"]["worker"] > 0



def test_measure_runs_producer_and_consumer_through_tls(tmp_path):
    """producer/consumer.security.protocol=ssl on a private cluster: a throwaway certificate, the SSL listener, the
    clients' truststore from a file; every record sent, tailed and read through TLS."""
    from kafkasim.validation.cluster import SSL_OFFSET
    tail = _measure_consumer(tmp_path, "tls-tail", "producer.security.protocol=ssl", "consumer.security.protocol=ssl",
                             "consumers.groups=1", "consumers.start=before-producers", "workload.records=3000",
                             "workload.throughput=1000")
    read = _measure_consumer(tmp_path, "tls-read", "producers=0", "consumers.groups=1",
                             "consumers.prefilled_records=5000", "consumer.security.protocol=ssl")
    assert tail["scenario"]["producer.security.protocol"] == tail["scenario"]["consumer.security.protocol"] == "ssl"
    assert tail["end_to_end"]["records"] == 3000 and tail["result"]["records"] == 3000
    assert read["result"]["records"] == 5000
    for run in (tail, read):       # through the SSL listener: its ports are the cluster's first + SSL_OFFSET
        port = int(run["target"]["bootstrap"].split(",")[0].rsplit(":", 1)[1])
        assert port % 1000 == (19092 + SSL_OFFSET) % 1000
