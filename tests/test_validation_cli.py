"""kafkasim measure / cluster: bad input gives one line and status 2 before anything starts; the matrix and the
run store behave (no broker needed here; tests/test_live_smoke.py runs the real thing)."""
import json
from pathlib import Path

import pytest

from kafkasim.app import cli
from kafkasim.model.hardware import load_profile
from kafkasim.model.errors import UserError
from kafkasim.validation.matrix import Matrix
from kafkasim.validation.measure import Config, config_key, measured_settings
from kafkasim.validation.summary import spread
from kafkasim.validation.store import RunStore

ROOT = Path(__file__).parent.parent
SCENARIO = "name: t\nproducer: {acks: all}\nworkload: {records: 1000}\n"


def run_cli(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:       # argparse's own errors exit directly
        code = exc.code
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


@pytest.mark.parametrize("argv, message", [
    ((), "measure needs exactly one of SCENARIO or --matrix FILE"),
    (("nope.yaml",), "scenario file 'nope.yaml' does not exist"),
    (("{s}", "--set", "producer.batch.sise=1"), "unknown key 'producer.batch.sise'"),
    (("{s}", "--set", "threads=4", "--client", "kafka-python", "--bootstrap-server", "127.0.0.1:1"),
     "live runs cannot reproduce threads=4 with kafka-python"),
    (("{s}", "--set", "workload.partition_choice=round-robin", "--client", "kafka-python", "--bootstrap-server",
      "127.0.0.1:1"), "explicit partitions are the Java client's runs only"),
    (("{s}", "--set", "network.rtt_ms=5", "--bootstrap-server", "127.0.0.1:1"), "can only be emulated"),
    (("{s}", "--set", "cluster.brokers=3", "--set", "topic.replication.factor=3", "--set",
      "topic.min.insync.replicas=2", "--set", "cluster.offline_brokers=1", "--bootstrap-server", "127.0.0.1:1"),
     "cluster.offline_brokers=1 stops brokers during the measurement"),
    (("{s}", "--command-config", "/nonexistent"), "--command-config /nonexistent: no such file"),
    (("{s}", "--repeat", "0"), "--repeat 0: must be at least 1"),
    (("{s}", "--only", "b16k-l0-none-a1-p1"), "--only picks configurations of a matrix: it needs --matrix FILE"),
    (("--matrix", str(ROOT / "validation/matrices/local.yaml"), "--client", "java", "--only",
      "b16k-l0-none-a1-p1,b16k-l0-none-a1-p1-t3k"),
     "--only b16k-l0-none-a1-p1-t3k: not a configuration of"),
])
def test_measure_user_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    # keep the Kafka download out of this test: only the checks before any live step run
    monkeypatch.setattr("kafkasim.validation.measure.ensure_kafka", lambda: tmp_path)
    code, err = run_cli(capsys, "measure", *[a.format(s=scenario) for a in argv])
    assert code == 2
    assert len(err) == 1 and err[0].startswith("kafkasim: error: ") and message in err[0], err


def test_cluster_up_rejects_two_brokers(capsys):
    code, err = run_cli(capsys, "cluster", "up", "--brokers", "2")
    assert code == 2 and "invalid choice: 2" in err[-1]


def test_reference_matrix_loads_and_keeps_calibration_to_a_third():
    m = Matrix(ROOT / "validation/matrices/local.yaml")
    ids = {c.config_id for c in m.configs}
    assert len(ids) >= 24 and m.repeat >= 3
    for client in ("java", "kafka-python"):
        roles = [c.role for c in m.configs if c.client == client]
        assert 0 < roles.count("calibration") <= len(roles) / 3, client
    for c in m.configs:
        sc = c.load()
        assert sc.workload.payload == "random-letters"
    assert {c.client for c in m.configs} == {"java", "kafka-python"}


def test_config_key_ignores_hardware_but_not_producer_settings(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)

    def key(*overrides):
        return config_key(measured_settings(Config(path, "java", list(overrides)).load()), "java", "4.3.1")
    assert key() == key("hardware.nic_mbit=1000")
    assert key() != key("producer.batch.size=65536")


def test_a_key_added_later_keeps_the_stored_runs_keys(tmp_path):
    """cluster.offline_brokers came after the reference runs were stored: at 0 it is not part of the key."""
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO + "cluster: {brokers: 3}\ntopic: {replication.factor: 3, min.insync.replicas: 2}\n")
    up = measured_settings(Config(path, "java").load())
    assert "cluster.offline_brokers" not in up
    assert measured_settings(Config(path, "java", ["cluster.offline_brokers=1"]).load())["cluster.offline_brokers"] == 1


def test_store_resumes_and_skips_a_torn_line(tmp_path):
    store = RunStore(tmp_path / "runs.jsonl")
    store.append({"key": "k", "repeat": 0, "ok": True})
    store.append({"key": "k", "repeat": 1, "ok": False})
    with open(store.path, "a") as f:
        f.write('{"key": "k", "repeat": 2, "ok": tr')  # cut short by a crash
    assert store.done_repeats("k") == {0}
    assert len(store.records()) == 2


def test_spread():
    s = spread([90.0, 100.0, 110.0])
    assert s["median"] == 100.0 and s["range_pct"] == pytest.approx(20.0)
    assert s["cv_pct"] == pytest.approx(8.165, abs=0.01)


def test_run_queue_wait_from_schedstat(tmp_path):
    """The jit tool's wait for a core: /proc/…/schedstat's second field, in ns; 0 where the kernel keeps none."""
    from kafkasim.validation.environment import run_queue_seconds

    (tmp_path / "schedstat").write_text("81234567 4500000000 120\n")     # run ns, run-queue wait ns, slices
    assert run_queue_seconds(tmp_path / "schedstat") == 4.5
    assert run_queue_seconds(tmp_path / "missing") == 0.0


def test_the_codec_level_table_agrees_with_the_producers_threads():
    """model/codec_levels.yaml (the codec streams alone) against validation/data/local-levels.jsonl (perf-test at
    each level, the same machine and day): what a level adds to the worker's and the Sender's CPU per record of
    1 KiB is what the table says, within 30 % (or 1 ns a byte, for levels that change little). Measure both again
    together on a new machine."""
    import statistics

    import yaml

    table = yaml.safe_load((ROOT / "model" / "codec_levels.yaml").read_text())
    runs = [json.loads(line) for line in (ROOT / "validation/data/local-levels.jsonl").read_text().splitlines()]

    def ns_per_byte(config_id):
        threads = [r["environment"]["cpu_during_run"]["client_threads"] for r in runs if r["config_id"] == config_id]
        return statistics.median(t["worker"] + t["sender"] for t in threads) / 100_000 / 1024 * 1e9

    checked = 0
    for config_id in {r["config_id"] for r in runs}:
        codec, _, level = config_id.partition("-")
        if not level:
            continue
        levels = table[codec]["levels"]
        expected = levels[int(level)]["random-letters"][0] - levels[table[codec]["default"]]["random-letters"][0]
        measured = ns_per_byte(config_id) - ns_per_byte(codec)
        assert abs(measured - expected) <= 0.3 * abs(expected) + 1.0, (config_id, measured, expected)
        checked += 1
    assert checked == 7


def test_validate_checks_a_profile_as_it_is(tmp_path, capsys):
    """`kafkasim validate RUNS --no-fit`: no fit, every configuration held out, the report says which profile on
    which machine, and no profile is written."""
    code = cli.main(["validate", str(ROOT / "validation/data/local-offline.jsonl"), "--no-fit",
                     "--base-profile", "local-2core", "--out-dir", str(tmp_path), "--max-records", "3000",
                     "--jobs", "1"])
    assert code == 0
    out = capsys.readouterr().out
    assert "profile: local-2core" in out and "held-out throughput error" in out
    report = (tmp_path / "local-offline-java-local-2core.md").read_text()
    fitted_on = load_profile("local-2core")["provenance"]["java"]["machine"]["cpu"]
    assert f"Profile `local-2core` as it is (fitted on {fitted_on})" in report
    assert "checked on all 4 configurations" in report and "Fitted parameters" not in report
    assert report.count("| held-out |") == 4
    assert not list(tmp_path.glob("*.yaml"))


def test_a_report_names_the_host_a_measured_profile_comes_from():
    """A profile `calibrate host` measured is not fitted: the report names its host, speed and time."""
    from kafkasim.validation.report import _origin
    origin = _origin(str(ROOT / "validation/profiles/host-2026-11-25-s17.yaml"), "java")
    assert origin == ("measured by `kafkasim calibrate host` on Intel(R) Xeon(R) Processor, speed 5975, "
                      "2026-11-25 11:27")


def test_validate_without_runs_of_the_client_is_one_line(tmp_path, capsys):
    code, err = run_cli(capsys, "validate", str(ROOT / "validation/data/local-offline.jsonl"), "--no-fit",
                        "--client", "kafka-python", "--out-dir", str(tmp_path))
    assert code == 2 and err == ["kafkasim: error: no kafka-python runs in "
                                 f"{ROOT / 'validation/data/local-offline.jsonl'}"]


def test_validate_fits_the_parameters_it_is_given(tmp_path, capsys):
    """--parameters: the keys to fit instead of the client's default set; a key that is not one is one line."""
    code, err = run_cli(capsys, "validate", str(ROOT / "validation/data/local-epyc.jsonl"), "--parameters",
                        "broker.request_us,worker.recrd_us", "--out-dir", str(tmp_path))
    assert code == 2 and err == ["kafkasim: error: unknown parameter 'worker.recrd_us': expected hardware keys such "
                                 "as worker.record_us"], err


def test_a_java_source_that_does_not_compile_is_a_one_line_error(tmp_path):
    """kafka_dist.compiled: javac's first complaint, once, as a LiveError; nothing half-built is kept."""
    from kafkasim.model.errors import LiveError
    from kafkasim.validation.kafka_dist import compiled
    lib = tmp_path / "kafka" / "lib"
    lib.mkdir(parents=True)
    source = tmp_path / "Broken.java"
    source.write_text("public class Broken { void f() { int x = } }\n")
    with pytest.raises(LiveError, match=r"^compiling Broken\.java failed: .*Broken\.java:1: error") as err:
        compiled(lib, source)
    assert "\n" not in str(err.value)
    assert not any((lib.parent / "classes").iterdir())
    source.write_text("public class Broken { }\n")
    out = compiled(lib, source)
    assert (out / "Broken.class").is_file() and compiled(lib, source) == out


def test_a_java_scenarios_client_version_is_the_client_measured(tmp_path, monkeypatch):
    """A Java scenario's client.version picks the release measured (kafka_dist.CLIENT_RELEASES) and the tool that
    runs it: ProducerThreads on that client's jars below 4.3; a scenario of another library is measured with 4.3."""
    from kafkasim.validation import runners
    from kafkasim.validation.kafka_dist import KAFKA_VERSION, client_release
    path = tmp_path / "s.yaml"
    path.write_text(SCENARIO)
    assert client_release("2.4") == "2.4.1" and client_release("2.2.0") == "2.2.2"
    assert client_release("4.3") == KAFKA_VERSION
    with pytest.raises(UserError, match=r"^client.version=1.1 has no Java client to measure; allowed: 2.2, 2.3, "):
        client_release("1.1")
    old = Config(path, "java", ["client.version=2.2"]).load()
    assert old.client.version == "2.2" and runners.client_version("java", old) == "2.2.2"
    assert old.producer_properties()["linger.ms"] == "0"     # 2.2's default, which the run is given
    python = tmp_path / "p.yaml"
    python.write_text(SCENARIO + "client: {library: kafka-python, version: '3.0'}\n")
    assert runners.client_version("java", Config(python, "java").load()) == KAFKA_VERSION
    target = runners.Target("127.0.0.1:9092", "127.0.0.1:9092")
    lib = tmp_path / "kafka" / "lib"
    lib.mkdir(parents=True)
    from kafkasim.validation import kafka_dist
    compiled_with = []   # neither download nor compile: the argv alone
    monkeypatch.setattr(runners, "compiled", lambda lib, source, jars: compiled_with.append(jars) or tmp_path / "cls")
    monkeypatch.setattr(kafka_dist, "ensure_client", lambda release: tmp_path / f"kafka-clients-{release}" / "lib")
    argv = runners.argv("java", lib, old, target, "t", 1000)
    cp = argv[argv.index("-cp") + 1].split(":")
    assert argv[argv.index("-cp") + 2] == "ProducerThreads" and "--threads" in argv
    assert cp[:2] == [str(tmp_path / "cls"), str(tmp_path / "kafka-clients-2.2.2" / "lib" / "*")], cp
    assert not any(str(lib / "*") == entry for entry in cp)   # not the 4.3 client's classes as well
    assert compiled_with == [cp[1:]]
    # perf-test before 3.0 sent one value in every record (payload: repeated): the threaded tool repeats it
    repeated = old.replace(**{"workload.payload": "repeated"})
    runners.check_supported(repeated, "java")
    assert "--repeat-payload" in runners.argv("java", lib, repeated, target, "t", 1000)
    assert "--repeat-payload" not in argv
    with pytest.raises(UserError, match="workload.payload=repeated with kafka-python"):
        runners.check_supported(repeated, "kafka-python")


def test_summary_gives_the_brokers_cpu_a_record_of_each_configuration(tmp_path, capsys):
    """brokers_us_per_record: what a run's brokers on this host took per record (None for a cluster elsewhere);
    the summary shows its lowest and highest run per configuration."""
    from kafkasim.validation import summary
    from kafkasim.validation.summary import brokers_us_per_record

    def run(repeat, cluster_cores, rate=400_000.0):
        return {"key": "k", "repeat": repeat, "ok": True, "config_id": "c", "client": {"library": "java"},
                "seconds": 10.0, "delivery_errors": 0,
                "result": {"records": 4_000_000, "records_per_sec": rate, "latency_avg_ms": 5.0, "latency_p99_ms": 9},
                "environment": {"cpu_during_run": {"cluster_cores": cluster_cores}}}
    assert brokers_us_per_record(run(0, 0.25)) == pytest.approx(0.625)
    assert brokers_us_per_record(run(0, 0.0)) is None and brokers_us_per_record({"seconds": 1.0}) is None
    store = RunStore(tmp_path / "runs.jsonl")
    for repeat, cores in enumerate((0.25, 0.5, 0.3)):
        store.append(run(repeat, cores))
    assert summary.main([str(store.path)]) == 0
    assert " 0.62–1.25\n" in capsys.readouterr().out


def test_codec_versions_refuses_an_unknown_version_in_one_line(capsys):
    from kafkasim.validation import codec_versions

    assert codec_versions.main(["--versions", "2.2,1.0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kafkasim: error: --versions 1.0: allowed " + ", ".join(codec_versions.CLIENT_RELEASES)]


def test_validate_names_the_runs_it_simulates_shorter_than_measured():
    """A run of more records than the model simulates (scenario_for's cap) is a longer, warmer run than the
    prediction: validate names those configurations, and none where the cap covers every run."""
    from kafkasim.calibration.runs import Observation
    from kafkasim.validation.report import shortened, shortened_line

    def obs(cid, records):
        return Observation(cid, "java", "held-out", {"workload.records": records}, {"records_per_sec": 1.0}, {}, 1)

    runs = [obs("long", 4_000_000), obs("short", 300_000)]
    assert shortened(runs, None) == {"shortened_configs": ["long"], "records_simulated": 1_000_000}
    assert shortened(runs, 4_000_000) == {}
    line = shortened_line(shortened(runs, 2_000_000))
    assert "1 configuration(s)" in line and "2,000,000" in line and ": long;" in line
    assert shortened_line(shortened(runs, 4_000_000)) == ""
