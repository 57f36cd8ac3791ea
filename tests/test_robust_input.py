"""Input that used to crash or mislead (issue: honest defaults and robust input): each refused in one line, or now
handled as Kafka would."""
from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from kafkasim.calibration.bands import band
from kafkasim.model.scenario import ScenarioError, load_scenario
from kafkasim.validation import cluster as cl
from kafkasim.validation.errors import UserError

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
