"""`kafkasim predict`: perf-test's lines, the metrics and the verdict as text; everything plus the resolved scenario,
seed, model version and runtime as JSON; the same seed gives the same output; bad input is one line, status 2, no
traceback."""
import json
import re
import subprocess
import sys

import pytest

from kafkasim.app import cli

from conftest import ROOT

SCENARIO = """name: cli-test
client: {library: java, version: "2.4"}
producer: {acks: 1, batch.size: 16384, linger.ms: 2}
workload: {records: 400, throughput: 5000}
topic: {partitions: 2}
"""

TOTAL_LINE = re.compile(r"^\d+ records sent, \d+\.\d{6} records/sec \(\d+\.\d\d MB/sec\), \d+\.\d\d ms avg latency, "
                        r"\d+\.\d\d ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$")


def predict(capsys, *argv):
    code = cli.main(["predict", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def predict_json(capsys, *argv):
    code, out, err = predict(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def test_text_output_has_perf_test_lines_metrics_and_verdict(capsys, tmp_scenario):
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO))
    assert code == 0
    lines = out.splitlines()
    assert TOTAL_LINE.match(lines[0]), lines[0]
    assert lines[0].startswith("400 records sent")
    for name in ("record-queue-time-avg", "request-latency-avg", "batch-size-avg", "records-per-request-avg",
                 "record-send-rate", "request-rate", "request-size-avg", "outgoing-byte-rate",
                 "compression-rate-avg", "bufferpool-wait-ratio", "requests-in-flight", "record-error-rate"):
        assert any(line.startswith(f"producer-metrics:{name} ") for line in lines), name
    assert any(line.startswith("worker latency (time in send())") for line in lines)
    assert any(line.startswith("bottleneck: ") for line in lines)
    assert any(line.startswith("broker 0: leads 2 partitions") for line in lines)
    assert any("RequestQueueTimeMs" in line and "TotalTimeMs" in line for line in lines)


def test_json_carries_resolved_scenario_seed_version_and_runtime(capsys, tmp_scenario):
    data = predict_json(capsys, tmp_scenario(SCENARIO), "--set", "producer.batch.size=32768")
    import kafkasim
    assert data["seed"] == 1 and data["model_version"] == kafkasim.__version__
    assert data["runtime_seconds"] > 0 and data["simulated_seconds"] > 0
    sc = data["scenario"]
    assert sc["producer.batch.size"] == 32768                 # --set applied
    assert sc["producer.linger.ms"] == 2                      # from the file
    assert sc["producer.max.in.flight.requests.per.connection"] == 5   # the client default, resolved
    assert sc["producer.buffer.memory"] == 33554432
    assert sc["hardware.profile"] == "generic-server" and "hardware.rtt_ms" in sc
    assert TOTAL_LINE.match(data["perf_test"]["total"])
    assert data["records_sent"] == data["records_acked"] + data["records_failed"] == 400
    assert {"bottleneck", "utilisation", "evidence"} <= set(data["verdict"])
    assert data["brokers"][0]["request_time_ms"]["TotalTimeMs"] > 0
    assert "timeline" not in data
    with_timeline = predict_json(capsys, tmp_scenario(SCENARIO), "--timeline")
    assert len(with_timeline["timeline"]["time_s"]) > 10


def test_json_scenario_reproduces_the_run(capsys, tmp_scenario):
    """The resolved scenario in the JSON, fed back as a file, gives the same figures."""
    import yaml
    first = predict_json(capsys, tmp_scenario(SCENARIO))
    again = predict_json(capsys, tmp_scenario(yaml.safe_dump(first["scenario"]), "resolved.yaml"))
    assert again["perf_test"] == first["perf_test"] and again["metrics"] == first["metrics"]


def strip_runtime(data):
    data = dict(data)
    data.pop("runtime_seconds")
    return data


def test_same_seed_same_output(capsys, tmp_scenario):
    path = tmp_scenario(SCENARIO.replace("topic: {partitions: 2}", "topic: {partitions: 3}") +
                        "hardware: {broker.service_cv: 1}\n")
    a = strip_runtime(predict_json(capsys, path))
    b = strip_runtime(predict_json(capsys, path))
    assert a == b
    c = strip_runtime(predict_json(capsys, path, "--seed", "7"))
    assert c["seed"] == 7 and c["scenario"]["seed"] == 7
    # a different seed draws different random numbers (partition choice, broker service times)
    assert c["metrics"] != a["metrics"]


def test_same_seed_same_text(capsys, tmp_scenario):
    path = tmp_scenario(SCENARIO)
    strip = lambda text: re.sub(r"simulated in [0-9.]+ s", "", text)
    assert strip(predict(capsys, path)[1]) == strip(predict(capsys, path)[1])


@pytest.mark.parametrize("argv, words", [
    (["/nonexistent.yaml"], ["does not exist"]),
    (["{s}", "--set", "producer.batch.sise=1"], ["unknown key 'producer.batch.sise'", "did you mean"]),
    (["{s}", "--set", "producer.acks=2"], ["producer.acks=2 is not allowed", "one of 0, 1, all, -1"]),
    (["{s}", "--set", "producer.batch.size=-1"], ["producer.batch.size=-1"]),
    (["{s}", "--set", "producer.compression.type=brotli"], ["brotli"]),
    (["{s}", "--set", "batch.size"], ["key=value"]),
    (["{s}", "--set", "producer.enable.idempotence=true"], ["acks=all"]),
    (["{bad}"], ["not valid YAML"]),
    (["{typo}"], ["unknown key 'producer.lingr.ms'", "producer.linger.ms"]),
    (["{s}", "--format", "xml"], ["invalid choice"]),
])
def test_bad_input_is_one_line_and_status_2(capsys, tmp_scenario, argv, words):
    paths = {"s": tmp_scenario(SCENARIO), "bad": tmp_scenario("producer: [1, 2\n", "bad.yaml"),
             "typo": tmp_scenario("producer: {lingr.ms: 5}\n", "typo.yaml")}
    argv = [a.format(**paths) for a in argv]
    try:
        code = cli.main(["predict", *argv])
    except SystemExit as exc:       # argparse's own errors exit directly
        code = exc.code
    out = capsys.readouterr()
    assert code == 2
    err = out.err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kafkasim: error: "), err
    for word in words:
        assert word in err[0]
    assert out.out == ""


def test_console_script_bad_key_no_traceback(tmp_scenario):
    """The installed `kafkasim` script, as a user runs it."""
    exe = ROOT / ".venv" / "bin" / "kafkasim"
    command = [str(exe)] if exe.exists() else [sys.executable, "-m", "kafkasim.app.cli"]
    proc = subprocess.run(command + ["predict", str(tmp_scenario(SCENARIO)), "--set", "topic.partition=3"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip() == ("kafkasim: error: unknown key 'topic.partition'; did you mean "
                                   "'topic.partitions'?")


def test_a_validated_profile_says_how_it_did_on_held_out_runs(capsys, tmp_path, tmp_scenario, monkeypatch):
    """`kafkasim validate` records the held-out error in the profile; `predict` with that profile shows it."""
    import yaml
    from kafkasim.model.hardware import load_profile

    profile = load_profile("local-2core")
    profile.pop("uncertainty", None)            # (no band: this test is about the line below the prediction)
    profile["provenance"] = {"java": {
        "held_out": {"configs": 20, "throughput_mdape": 0.071, "noise_floor": 0.029, "another_session": 0.065,
                     "report": "validation/reports/local-quiet-java.md"}}}
    path = tmp_path / "validated.yaml"
    path.write_text(yaml.safe_dump(profile))
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO), "--set", f"hardware.profile={path}")
    assert code == 0
    line = out.splitlines()[-1]
    assert line.startswith(f"profile {path} on 20 held-out configurations: throughput a median 7.1 % off")
    assert "repeats 2.9 % apart, another session's 6.5 %" in line and "local-quiet-java.md" in line
    assert "fitted on" not in line                      # (no machine recorded)
    # fitted on another CPU than this one: the line says so
    profile["provenance"]["java"]["machine"] = {"cpu": "Some Other CPU @ 1 GHz", "cores": 2}
    path.write_text(yaml.safe_dump(profile))
    monkeypatch.setattr("kafkasim.calibration.bands.machine", lambda: {"cpu": "A CPU no profile was fitted on"})
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO), "--set", f"hardware.profile={path}")
    assert out.splitlines()[-1].endswith("local-quiet-java.md; fitted on Some Other CPU @ 1 GHz, not on this "
                                         "machine's A CPU no profile was fitted on)")
    # … and names the built-in profile fitted on this machine's CPU, if there is one
    monkeypatch.setattr("kafkasim.calibration.bands.machine", lambda: {"cpu": "AMD EPYC"})
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO), "--set", f"hardware.profile={path}")
    assert out.splitlines()[-1].endswith("not on this machine's AMD EPYC: local-2core-epyc was fitted on it)")
    # kafka-python was not validated in this profile: nothing is claimed for it
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO.replace("library: java, version: \"2.4\"",
                                                                 "library: kafka-python, version: \"3.0\"")),
                           "--set", f"hardware.profile={path}")
    assert code == 0 and "held-out" not in out
    # nor for a hand-derived profile, whose provenance is a sentence
    code, out, _ = predict(capsys, tmp_scenario(SCENARIO), "--set", "hardware.profile=kontur-2020")
    assert code == 0 and "held-out" not in out


# --- kafkasim perf-test: kafka-producer-perf-test's own command line -------------------------------------------

def perf_test(capsys, *argv):
    code = cli.main(["perf-test", *map(str, argv)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_pasted_perf_test_command_predicts_as_the_scenario_does(capsys, tmp_path, tmp_scenario):
    """perf-test's flags, its --producer-props and --producer.config become the scenario's keys; connection and
    security properties are taken silently (a password in them is never printed); others are named as left out."""
    config = tmp_path / "producer.properties"
    config.write_text("# the client's file\nbootstrap.servers=broker:9092\nsasl.jaas.config=hunter2-secret\n"
                      "linger.ms=7\nbatch.size=1000\ninterceptor.classes=com.example.Audit\n")
    code, out, err = perf_test(capsys, "--topic", "t", "--num-records", 3000, "--record-size", 300, "--throughput",
                               20000, "--producer-props", "acks=1", "batch.size=32768", "bootstrap.servers=x:9092",
                               "--producer.config", config, "--scenario", tmp_scenario(SCENARIO), "--format", "json")
    assert code == 0, err
    assert "hunter2" not in out + err
    assert err.strip() == ("kafkasim: note: producer property interceptor.classes is not a setting the model has: "
                           "left out")
    pasted = json.loads(out)
    same = predict_json(capsys, tmp_scenario(SCENARIO), "--set", "workload.records=3000", "--set",
                        "workload.record_size=300", "--set", "workload.throughput=20000", "--set", "acks=1",
                        "--set", "batch.size=32768", "--set", "linger.ms=7")     # the command line wins on batch.size
    assert pasted["perf_test"] == same["perf_test"]
    assert pasted["scenario"]["producer.batch.size"] == 32768


def test_a_payload_file_gives_the_record_sizes(capsys, tmp_path):
    payloads = tmp_path / "payloads.txt"
    payloads.write_text("a" * 10 + "\n" + "b" * 30 + "\n" + "c" * 20 + "\n")
    code, out, err = perf_test(capsys, "--num-records", 2000, "--payload-file", payloads, "--throughput", -1,
                               "--format", "json")
    assert code == 0, err
    scenario = json.loads(out)["scenario"]
    assert (scenario["workload.record_size"], scenario["workload.record_size_max"]) == (20, 30)


@pytest.mark.parametrize("argv, words", [
    (["--num-records", "10", "--throughput", "-1"], "either --record-size or --payload-file"),
    (["--num-records", "10", "--throughput", "-1", "--record-size", "10", "--transactional-id", "x"],
     "the model has no transactions"),
    (["--num-records", "10", "--throughput", "-1", "--record-size", "10", "--producer-props", "acks"],
     "--producer-props 'acks': expected key=value"),
    (["--num-records", "10", "--throughput", "-1", "--record-size", "10", "--producer-props", "acks=maybe"],
     "producer.acks='maybe' is not allowed"),
])
def test_bad_perf_test_input_is_one_line_and_status_2(capsys, argv, words):
    code, _, err = perf_test(capsys, *argv)
    assert code == 2 and words in err and len(err.strip().splitlines()) == 1, err
