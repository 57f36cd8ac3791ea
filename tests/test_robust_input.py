"""Input that used to crash or mislead (issue: honest defaults and robust input): each refused in one line, or now
handled as Kafka would."""
from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from kafkasim.calibration.bands import band
from kafkasim.model.scenario import ScenarioError, load_scenario
from kafkasim.validation import cluster as cl
from kafkasim.model.errors import UserError

EXAMPLE = "examples/local-1broker.yaml"


@pytest.mark.parametrize("value", ["nan", ".nan", "inf", "-inf", "1e400"])
@pytest.mark.parametrize("key", ["hardware.worker.record_us", "model.max_sim_seconds", "hardware.broker.handoff_us",
                                 "workload.records"])
def test_every_number_field_refuses_nan_and_infinity(key, value):
    with pytest.raises(ScenarioError, match=f"^{key}=.* is not allowed: expected"):
        load_scenario(EXAMPLE, [f"{key}={value}"])


def test_a_huge_value_is_named_not_echoed_whole():
    with pytest.raises(ScenarioError) as err:
        load_scenario(EXAMPLE, ["producer.batch.size=" + "9" * 3000])
    assert len(str(err.value)) < 200


def test_cluster_ids_never_start_with_a_dash(monkeypatch):
    ids = iter([b"\xfb" + bytes(15), bytes(16)])        # url-safe base64 of 0xfb… starts with '-'
    monkeypatch.setattr(cl.uuid, "uuid4", lambda: type("U", (), {"bytes": next(ids)})())
    assert not cl._random_cluster_id().startswith("-")


def test_cluster_up_refuses_a_directory_that_is_not_a_clusters(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="not a kafkasim cluster's"):
        cl.Cluster(tmp_path, 1, cl.free_base_port(29500, 1)).up(quiet=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_free_base_port_skips_a_block_in_use():
    import socket
    base = cl.free_base_port(31000, 1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", base))
        s.listen()
        assert cl.free_base_port(base, 1, step=1000) == base + 1000


def test_free_base_port_skips_a_block_another_live_process_claimed(tmp_path, monkeypatch):
    """Two clusters started at once: the first has chosen its block but not yet bound its ports (its nodes are
    still being formatted); the second must not take the same block."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    base = cl.free_base_port(34000, 1)
    (tmp_path / "kafkasim" / "port-claims" / str(base)).unlink()         # ours: leave it to the other process
    other = subprocess.Popen([sys.executable, "-c", "import sys, time\n"
                              "from kafkasim.validation import cluster as cl\n"
                              f"print(cl.free_base_port({base}, 1), flush=True)\n"
                              "time.sleep(30)"], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)})
    try:
        assert int(other.stdout.readline()) == base
        assert cl.free_base_port(base, 1, step=1000) == base + 1000      # claimed by a live process
    finally:
        other.kill()
        other.wait()
    assert cl.free_base_port(base, 1, step=1000) == base                 # its owner gone, the claim is stale


def test_the_band_keeps_its_warm_up_inside_its_run_and_its_percentiles_in_order():
    sc = load_scenario("examples/local-1broker.yaml", ["hardware.profile=local-2core-epyc",
                                                       "workload.records=120000", "workload.warmup_records=60000"])
    point = {"records_per_sec": 1.0e5, "p50_ms": 10.0, "p99_ms": 20.0}
    spread = band(sc, point, draws=3, max_records=20_000)
    assert spread is not None
    for figure, value in point.items():
        lo, hi = spread[figure]
        assert lo <= value <= hi
    assert spread["p99_ms"][0] >= spread["p50_ms"][0]


@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM])
def test_hangup_and_terminate_stop_a_command_as_ctrl_c_does(sig):
    """A live command's clean-up runs on KeyboardInterrupt: the handlers turn these signals into it (here a
    stand-in command that signals itself)."""
    script = f"""
import os, time
from kafkasim.app import cli
def slow(args):
    try:
        os.kill(os.getpid(), {int(sig)})
        time.sleep(5)
    except KeyboardInterrupt:
        print('cleaned up')
        raise
cli.cmd_predict.__code__ = slow.__code__
raise SystemExit(cli.main(['predict', '{EXAMPLE}']))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert "cleaned up" in proc.stdout
    assert proc.returncode == 130


@pytest.mark.parametrize("text, words", [
    ("a: &a [*a]\nproducer: &p {x: *p}\n", "nested more than"),
    ("x: " + "[" * 600 + "]" * 600 + "\n", "nested too deeply"),
    ("a: &a {b: 1, c: 1, d: 1, e: 1, f: 1, g: 1, h: 1, i: 1, j: 1, k: 1}\n"
     "b: &b {a: *a, b: *a, c: *a, d: *a, e: *a, f: *a, g: *a, h: *a, i: *a, j: *a}\n"
     "c: &c {a: *b, b: *b, c: *b, d: *b, e: *b, f: *b, g: *b, h: *b, i: *b, j: *b}\n"
     "d: {a: *c, b: *c, c: *c, d: *c, e: *c, f: *c, g: *c, h: *c, i: *c, j: *c}\n", "more than 2000 keys"),
    ("", "must be a mapping"),
    ("0\n", "must be a mapping"),
])
def test_scenario_files_that_would_recurse_or_say_nothing_are_refused_in_one_line(tmp_path, text, words):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    with pytest.raises(ScenarioError, match=words) as err:
        load_scenario(path)
    assert "\n" not in str(err.value)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"producer: {acks: \xff}\n")
    with pytest.raises(ScenarioError, match=r"s\.yaml: not UTF-8 text \(byte 17 is 0xff\)"):
        load_scenario(path)


def test_an_unparsable_set_value_is_one_line():
    with pytest.raises(ScenarioError, match=r"^--set workload.records=\[1, 2: not a value"):
        load_scenario(EXAMPLE, ["workload.records=[1, 2"])


def test_many_producers_get_their_own_random_streams():
    from kafkasim.model.simulate import simulate
    result = simulate(load_scenario(EXAMPLE, ["producers=63", "workload.records=200", "hardware.colocated_cores=0"]))
    assert result.records_acked == 63 * 200


def test_a_run_too_big_for_memory_is_refused_with_what_it_needs():
    from kafkasim.model.simulate import simulate
    with pytest.raises(ScenarioError, match=r"needs ≈ .* GiB .* enough for ≈ [\d,]+ records"):
        simulate(load_scenario(EXAMPLE, ["workload.records=10000000000"]))


def test_a_run_cut_at_the_simulated_time_limit_says_so():
    from kafkasim.model.simulate import simulate
    result = simulate(load_scenario(EXAMPLE, ["model.max_sim_seconds=0.5", "workload.records=200000"]))
    assert "reached model.max_sim_seconds=0.5" in result.cut_short
    assert result.cut_short in result.text() and result.to_json()["cut_short"] == result.cut_short
    assert simulate(load_scenario(EXAMPLE, ["workload.records=2000"])).cut_short is None


def test_each_measurement_gets_its_own_private_cluster_directory():
    import os

    from kafkasim.validation.targets import ClusterPool
    pool = ClusterPool()
    assert pool.directory.name == f"measure-cluster-{os.getpid()}" and pool.base_port is None


def test_an_unreachable_bootstrap_server_is_refused_at_once():
    import time

    from kafkasim.validation.runners import unreachable
    start = time.monotonic()
    assert unreachable(f"127.0.0.1:{cl.free_base_port(33000, 1)}") == "connection refused"
    assert time.monotonic() - start < 15


def test_batch_size_zero_sends_one_record_a_batch_as_kafka_does():
    from kafkasim.model.simulate import simulate
    result = simulate(load_scenario(EXAMPLE, ["producer.batch.size=0", "workload.records=2000"]))
    assert result.records_acked == 2000
    assert result.metrics["batch-size-avg"] < 2 * 1024       # one 1 KiB record (and its headers) a batch


def test_a_long_run_reports_its_progress(monkeypatch):
    from kafkasim.model import simulate as sm
    monkeypatch.setattr(sm, "PROGRESS_AFTER", 0.0)
    monkeypatch.setattr(sm, "PROGRESS_EVERY", 0.0)
    heard = []
    sc = load_scenario(EXAMPLE, ["workload.records=3000"])
    result = sm.simulate(sc, progress=heard.append)
    assert heard and heard[-1]["of"] == 3000 and 0 <= heard[-1]["records"] <= 3000
    assert heard[-1]["simulated_seconds"] <= result.simulated_seconds
    # the watcher changes nothing in the run
    assert sm.simulate(sc).perf_test == result.perf_test


def test_a_resource_is_named_saturated_only_at_the_threshold():
    from kafkasim.model.verdict import SATURATED, verdict
    util = {"worker threads": 0.1, "lock contention": 0.0, "buffer memory": 0.0, "sender thread": 0.3,
            "broker io-threads": 0.07, "host cpu": 0.04}
    idle = verdict(util, {}, achieved=50_000, target=100_000)
    assert idle["bottleneck"] == "none" and not idle["met"] and idle["busiest"] == "sender thread"
    assert "no resource is 85% busy" in idle["evidence"]
    busy = verdict({**util, "sender thread": SATURATED}, {"sender thread": "why"}, achieved=50_000, target=100_000)
    assert busy["bottleneck"] == "sender thread"
    met = verdict(util, {}, achieved=99_000, target=100_000)
    assert met["bottleneck"] == "none" and met["met"]


def test_settings_the_model_leaves_out_are_named_when_given():
    """A pasted config keeps working, and predict says which of its settings change nothing in the model."""
    s = load_scenario(EXAMPLE, ["retries=5", "cluster.broker.queued.max.requests=500"])   # the second: its default
    assert s.not_modelled() == ["producer.retries=5 is not modelled (the model has no failed requests to retry): "
                                "the prediction is the same for any value"]
    assert load_scenario(EXAMPLE).not_modelled() == []
    out = subprocess.run([sys.executable, "-m", "kafkasim.app.cli", "predict", EXAMPLE, "--set", "retries=5",
                          "--set", "workload.records=5000"], capture_output=True, text=True)
    assert out.returncode == 0 and "kafkasim: note: producer.retries=5 is not modelled" in out.stderr


@pytest.mark.parametrize("setting, words", [
    ("hardware.brokers.3.extra_latency_ms=20", "names broker 3, but cluster.brokers=3 numbers them 0 … 2"),
    ("hardware.brokers.1.rtt_ms=3", "a broker's own hardware is hardware.brokers.<id>.<key>"),
    ("hardware.brokers.one.broker_cores=2", "a broker's own hardware is hardware.brokers.<id>.<key>"),
    ("hardware.brokers.1.extra_latency_ms=-1", "hardware.brokers.1.extra_latency_ms=-1 is not allowed"),
    ("hardware.brokers.1.broker_cores=nan", "is not allowed"),
])
def test_a_brokers_own_hardware_is_checked_like_the_clusters(setting, words):
    with pytest.raises(ScenarioError, match=None) as err:
        load_scenario("examples/local-3broker-rf3.yaml", [setting])
    assert words in str(err.value) and "\n" not in str(err.value)
