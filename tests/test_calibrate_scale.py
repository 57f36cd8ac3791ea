"""`kafkasim calibrate scale`: a server's profile derived from a measured one, the scaling written down."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from kafkasim.app import cli
from kafkasim.calibration.scale import cpu_keys, scaled
from kafkasim.model.hardware import HARDWARE_FIELDS

from conftest import capture, scenario

MEASURED = str(Path(__file__).parent.parent / "validation/profiles/host-2026-11-27-s22.yaml")


def test_every_cpu_cost_is_divided_by_the_ratio_and_waits_are_kept():
    base = yaml.safe_load(Path(MEASURED).read_text())
    out = scaled(MEASURED, 32, 2.0, "a benchmark", "server")
    java, measured_java = out["clients"]["java"], base["clients"]["java"]
    assert java["worker.record_us"] == pytest.approx(measured_java["worker.record_us"] / 2)
    assert out["hardware"]["broker.request_us"] == pytest.approx(base["hardware"]["broker.request_us"] / 2)
    # a cost the measured profile leaves at its default is scaled from the default
    assert java["worker.contention_us"] == pytest.approx(HARDWARE_FIELDS["worker.contention_us"].default / 2)
    assert out["hardware"]["broker.handoff_us"] == base["hardware"]["broker.handoff_us"]   # a wait, not CPU
    assert {"rtt_ms", "broker.handoff_us", "sender.connect_ms", "consumer.join_ms"}.isdisjoint(cpu_keys())
    assert {"jvm.jit_cpu_ms", "jvm.sender_cold_cpu_ms", "consumer.cold_cpu_ms", "compression.zstd.byte_ns",
            "broker.fetch_partition_us"} <= set(cpu_keys())
    assert out["hardware"]["client_cores"] == out["hardware"]["broker_cores"] == 32
    assert out["hardware"]["colocated_cores"] == 0 and "host" not in out
    assert "a benchmark" in out["description"] and out["provenance"]["speed_ratio"] == 2.0


def test_a_host_twice_as_fast_per_core_sends_twice_as_fast_where_the_worker_limits(tmp_path):
    profiles = {}
    for ratio in (1.0, 2.0):
        path = tmp_path / f"server-{ratio}.yaml"
        assert cli.main(["calibrate", "scale", "--base-profile", MEASURED, "--cores", "16", "--speed-ratio",
                         str(ratio), "--benchmark", "test", "-o", str(path)]) == 0
        profiles[ratio] = path
    flat = {"workload.records": 100_000, "workload.record_size": 100, "producer.acks": "1",
            "producer.linger.ms": 10, "producer.batch.size": 262144, "topic.partitions": 3}
    rate = {r: capture(scenario(flat, **{"hardware.profile": str(p)})).result.steady_records_per_sec
            for r, p in profiles.items()}
    assert rate[2.0] / rate[1.0] == pytest.approx(2.0, rel=0.15)


@pytest.mark.parametrize("extra, message", [
    ([], "calibrate scale needs --cores, --speed-ratio, --benchmark: the measured profile, the stated host's cores, "
         "its per-core speed ÷ the measured host's, and the benchmark that says so"),
    (["--cores", "8", "--speed-ratio", "0", "--benchmark", "b"],
     "--speed-ratio 0.0: expected a number > 0 (the stated host's per-core speed ÷ this profile's host's)"),
    (["--cores", "8", "--speed-ratio", "1.5", "--benchmark", "b", "--set", "producer.acks=1"],
     "--set producer.acks: expected hardware.KEY=VALUE (the stated host's NIC, disk, RTT, ...)"),
    (["--cores", "8", "--speed-ratio", "1.5", "--benchmark", "b", "--set", "hardware.nic_mbit=-3"],
     "hardware.nic_mbit=-3 is not allowed: expected a number from 0.001 to 10000000"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys, extra, message):
    out = tmp_path / "server.yaml"
    assert cli.main(["calibrate", "scale", "--base-profile", MEASURED, "-o", str(out), *extra]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [f"kafkasim: error: {message}"]
    assert not out.exists()
