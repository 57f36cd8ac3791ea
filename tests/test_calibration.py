"""Calibration: the fit recovers parameters from runs the model itself produced; snapshots and bands."""
import io
import json
import math

import pytest
import yaml

from kafkasim.calibration.bands import band
from kafkasim.calibration.fit import (NOISY, THROTTLED_WEIGHTS, WEIGHTS, Fit, fit, predicted, residuals_of,
                                      scenario_for)
from kafkasim.calibration.profile import profile_from_fit, write_profile
from kafkasim.calibration.runs import Observation, load_observations
from kafkasim.calibration.snapshot import read_snapshot, snapshot_observation
from kafkasim.model.hardware import load_profile
from kafkasim.model.scenario import from_flat
from kafkasim.model.simulate import simulate

BASE = {"client.library": "java", "client.version": "3.9", "producer.acks": "1", "producer.linger.ms": 0,
        "workload.records": 10000, "workload.record_size": 1024, "topic.partitions": 1,
        "hardware.profile": "local-2core"}


@pytest.fixture(scope="module")
def warm(tmp_path_factory) -> str:
    """local-2core with a warm producer JVM (in 10,000-record runs a cold start would hide the broker's cost), and
    a broker cost per request of 300 us to start from (the weak prior then costs little at the truth)."""
    profile = load_profile("local-2core")
    profile["clients"]["java"].update({"jvm.jit_cpu_ms": 0, "jvm.cold_factor": 1, "worker.first_send_ms": 0})
    profile["hardware"]["broker.request_us"] = 300.0
    path = tmp_path_factory.mktemp("profiles") / "local-2core-warm.yaml"
    path.write_text(yaml.safe_dump(profile))
    return str(path)


def synthetic(config_id: str, truth: dict, profile: str, **settings) -> Observation:
    """An observation whose 'measurement' is the model's own prediction with known parameters."""
    flat = {**BASE, **settings}
    scenario = from_flat(flat)
    obs = Observation(config_id, "java", "calibration", scenario.flat(), {}, {}, 1)
    obs.measured = predicted(simulate(scenario_for(obs, profile, truth, 10000)))
    return obs


def test_fit_recovers_the_broker_cost_that_made_the_runs(warm):
    truth = {"broker.request_us": 400.0}
    runs = [synthetic("b16k", truth, warm, **{"producer.batch.size": 16384}),
            synthetic("b64k", truth, warm, **{"producer.batch.size": 65536})]
    result = fit(runs, warm, ["broker.request_us"], max_records=10000, max_evaluations=12,
                 progress=io.StringIO())
    assert result.values["broker.request_us"] == pytest.approx(400.0, rel=0.15)
    assert result.cost < 0.01
    profile = profile_from_fit(result, "synthetic", "memory", ["b16k", "b64k"])
    assert profile["hardware"]["broker.request_us"] == pytest.approx(result.values["broker.request_us"], rel=1e-6)
    assert "broker.request_us" in profile["uncertainty"]["java"]


def test_fitted_profile_loads_and_predicts_with_a_band(tmp_path, warm):
    truth = {"broker.request_us": 700.0}
    runs = [synthetic("b16k", truth, warm, **{"producer.batch.size": 16384})]
    result = fit(runs, warm, ["broker.request_us"], max_records=10000, max_evaluations=8,
                 progress=io.StringIO())
    path = tmp_path / "fitted.yaml"
    write_profile(profile_from_fit(result, "fitted", "memory", ["b16k"]), path)
    scenario = from_flat({**BASE, "hardware.profile": str(path)})
    assert scenario.hardware["broker.request_us"] == pytest.approx(result.values["broker.request_us"])
    spread = band(scenario, draws=4, max_records=10000)
    lo, hi = spread["records_per_sec"]
    assert 0 < lo <= hi


def test_a_long_runs_band_is_about_the_parameters_not_the_run_length(tmp_path):
    """A cold producer's first 5,000 records are slower than its 30,000: the band is drawn on the short run but
    scaled to the full-length prediction, so a fit that pins its parameters down gives a band on the prediction
    (before, it gave the short run's rate: 13.0k–15.3k records/s beside a 21.1k prediction for
    examples/local-3broker-rf3.yaml)."""
    profile = load_profile("local-2core")
    profile["uncertainty"] = {"java": {"worker.record_us": 1e-6}}
    path = tmp_path / "pinned.yaml"
    path.write_text(yaml.safe_dump(profile))
    scenario = from_flat({**BASE, "workload.records": 30000, "hardware.profile": str(path)})
    point = simulate(scenario).perf_test
    assert simulate(scenario.replace(**{"workload.records": 5000})).perf_test["records_per_sec"] < \
        0.9 * point["records_per_sec"]
    lo, hi = band(scenario, point, draws=2, max_records=5000)["records_per_sec"]
    assert lo == pytest.approx(point["records_per_sec"], rel=1e-3) and hi == pytest.approx(lo, rel=1e-3)


def test_load_observations_takes_medians_and_spread(tmp_path):
    rows = []
    for i, rate in enumerate([100.0, 120.0, 110.0]):
        rows.append({"client": {"library": "java"}, "config_id": "c1", "role": "calibration", "ok": True,
                     "scenario": {"workload.throughput": -1}, "result": {"records_per_sec": rate},
                     "metrics": {"producer-metrics:request-latency-avg": 2.0 + i}})
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    (obs,) = load_observations(path)
    assert obs.measured["records_per_sec"] == 110.0
    assert obs.spread["records_per_sec"] == pytest.approx(20 / 110)
    assert obs.measured["request-latency-avg"] == 3.0
    assert obs.repeats == 3
    assert obs.log_range["records_per_sec"] == pytest.approx(math.log(120 / 100))
    assert obs.background_cores is None                       # not recorded: the fit assumes a quiet host


def test_a_run_with_warm_up_records_is_compared_by_its_steady_state_line(tmp_path):
    """The model leaves workload.warmup_records out of every figure; perf-test's total line keeps them (a fresh
    JVM's start), its steady-state line does not: that line is the measurement (local-slow-broker, 2026-11-28)."""
    total = {"records_per_sec": 29_950.0, "latency_avg_ms": 15.5, "latency_p50_ms": 21, "latency_p99_ms": 75}
    steady = {"records_per_sec": 29_900.0, "latency_avg_ms": 14.7, "latency_p50_ms": 22, "latency_p99_ms": 36}
    rows = [{"client": {"library": "java"}, "config_id": c, "ok": True, "scenario": {}, "result": total, **extra}
            for c, extra in (("warm", {"steady_state": steady}), ("whole", {"steady_state": None}))]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    warm, whole = sorted(load_observations(path), key=lambda o: o.config_id != "warm")
    assert warm.measured["p99_ms"] == 36 and warm.measured["records_per_sec"] == 29_900.0
    assert whole.measured["p99_ms"] == 75 and whole.measured["avg_latency_ms"] == 15.5


def test_the_workers_cpu_counts_from_the_producers_start_where_the_run_recorded_it(tmp_path):
    """Runs that store the threads' CPU at the producer's start give the worker's inside perf-test's window (the
    JVM's start-up before it left out); older runs give none, and predicted() gives the model's for comparison."""
    cpu = {"client_threads": {"worker": 1.5, "sender": 1.1}, "other_cores": 0.0}
    rows = [{"client": {"library": "java"}, "config_id": c, "ok": True, "scenario": {},
             "result": {"records_per_sec": 1}, "environment": {"cpu_during_run": {**cpu, **extra}}}
            for c, extra in (("new", {"client_threads_at_start": {"worker": 0.9, "sender": 0.01}}), ("old", {}))]
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    new, old = sorted(load_observations(path), key=lambda o: o.config_id != "new")
    assert new.measured["worker_cpu_s"] == pytest.approx(0.6) and "worker_cpu_s" not in old.measured
    assert new.measured["sender_cpu_s"] == old.measured["sender_cpu_s"] == 1.1
    result = simulate(from_flat({"workload.records": 5000, "threads": 2}))
    assert predicted(result)["worker_cpu_s"] == pytest.approx(
        result.utilisation["worker threads"] * result.simulated_seconds * 2)


def test_runs_are_simulated_with_the_other_load_measured_during_them(tmp_path):
    """Other processes' CPU during the runs (their median) becomes hardware.background_cores when it is more than
    the machine's own bookkeeping."""
    def store(others):
        rows = [{"client": {"library": "java"}, "config_id": "c1", "ok": True, "scenario": dict(BASE),
                 "result": {"records_per_sec": 100.0},
                 "environment": {"cpu_during_run": {"busy_cores": 1.9, "other_cores": other}}} for other in others]
        path = tmp_path / "runs.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in rows))
        (obs,) = load_observations(path)
        return scenario_for(obs, "local-2core", {}, 1000).hardware["background_cores"]
    assert store([0.4, 0.9, 0.6]) == pytest.approx(0.6)
    assert store([0.01, 0.02, 0.3]) == 0.0


def test_a_figure_its_repeats_cannot_agree_on_counts_less():
    """A throttled run's p99 repeats at 400 ms and 4000 ms (ln 10 = 2.3 > NOISY): its residual counts
    NOISY / 2.3 of a repeatable one's; throughput counts fully however it spreads."""
    obs = Observation("t", "java", "calibration", {"workload.throughput": 1000},
                      {"records_per_sec": 1000.0, "p99_ms": 1200.0}, {}, 3,
                      log_range={"records_per_sec": math.log(3), "p99_ms": math.log(10)})
    res = residuals_of(obs, {"records_per_sec": 1100.0, "p99_ms": 2400.0})
    assert res["records_per_sec"] == pytest.approx(WEIGHTS["records_per_sec"] * math.log(1.1))
    assert res["p99_ms"] == pytest.approx(THROTTLED_WEIGHTS["p99_ms"] * NOISY / math.log(10) * math.log(2))


def test_snapshot_names_and_values_are_checked(tmp_path):
    good = tmp_path / "snap.yaml"
    good.write_text("producer-metrics:request-latency-avg: 9.8\nrequest-rate: 1391\n")
    assert read_snapshot(good) == {"request-latency-avg": 9.8, "request-rate": 1391.0}
    bad = tmp_path / "bad.yaml"
    bad.write_text("request-latency: 9.8\n")
    with pytest.raises(ValueError, match="unknown figure 'request-latency'"):
        read_snapshot(bad)
    negative = tmp_path / "neg.yaml"
    negative.write_text("request-latency-avg: -1\n")
    with pytest.raises(ValueError, match="positive number"):
        read_snapshot(negative)


def test_snapshot_observation_picks_the_parameters_its_figures_determine():
    obs, parameters = snapshot_observation("examples/kontur-2020/I.yaml",
                                           {"request-latency-avg": 9.8, "batch-size-avg": 15066})
    assert parameters == ["broker.request_us"]
    assert obs.weights == {"request-latency-avg": 1.0, "batch-size-avg": 1.0}
    assert obs.scenario["hardware.profile"] == "kontur-2020"


def test_validate_names_a_missing_second_session_store_before_fitting(capsys, tmp_path):
    from kafkasim.app import cli
    code = cli.main(["validate", "validation/data/local-quiet.jsonl", "--out-dir", str(tmp_path),
                     "--remeasured", str(tmp_path / "nowhere.jsonl")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "nowhere.jsonl" in err and "does not exist" in err
    assert not list(tmp_path.iterdir())          # nothing fitted or written


def test_a_fit_from_a_hand_derived_profile_writes_its_own_provenance():
    """kontur-2020's provenance is a sentence, not a record per client: a fit starting from it (the README's
    snapshot calibration) must still write a profile."""
    assert isinstance(load_profile("kontur-2020")["provenance"], str)
    result = Fit("java", "kontur-2020", {"broker.request_us": 1000.0}, {"broker.request_us": 0.1},
                 {"I": {"records_per_sec": 0.01}}, 0.001, 5, 1.0)
    profile = profile_from_fit(result, "kontur-fitted", "snapshot", ["I"])
    assert list(profile["provenance"]) == ["java"]
    assert profile["hardware"]["broker.request_us"] == 1000.0
    assert "starting from kontur-2020" in profile["description"]
