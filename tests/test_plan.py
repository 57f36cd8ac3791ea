"""kafkasim plan: the plan meets its target in the model, and no cheaper configuration of a small exhaustive grid
does. The hardware is made slow (20 µs per send(), a 100 Mbit/s NIC) so that a small target needs several
producers and brokers and each simulation stays short."""
from __future__ import annotations

import itertools
import json

import pytest

from kafkasim.app import plan as pl
from kafkasim.app.plan_command import parse_record_size
from kafkasim.model import bounds as bd
from kafkasim.app.sweep import evaluate
from kafkasim.app.cli import main as cli_main
from kafkasim.model.scenario import ScenarioError

SLOW = {"hardware.worker.record_us": 20.0, "hardware.nic_mbit": 100.0}
SPACE = pl.Space(brokers=(1, 2, 3), producers=(1, 2, 3), threads=(1,), partitions_per_broker=(1, 2),
                 batch_sizes=(16384, 65536), linger_ms=(5.0,), compressions=("none",), max_in_flights=(5,),
                 tries_per_shape=2)
REQUEST = dict(target_rps=50_000, record_size=200, acks="1", rf=1, profile="generic-server", overrides=SLOW,
               min_records=6_000, sim_seconds=0.12)


@pytest.fixture(scope="module")
def planned():
    planner = pl.Planner(pl.Request(**REQUEST), SPACE, jobs=2)
    return planner, planner.run(sensitivity=False, runners_up=1)


def test_plan_meets_its_target_in_the_model(planned):
    planner, plan = planned
    assert plan.best is not None
    best = plan.best
    row = evaluate(planner.scenario(best.shape, best.settings))
    check = pl.Evaluation(best.shape, best.settings, "", 0.0, row=row)
    planner.judge(check)
    assert check.passed, check.reason
    assert row["records_acked"] > 0 and row["records_failed"] == 0
    assert check.capacity >= planner.req.planned_rps


def test_capacity_estimates_never_exceed_their_tightest_bound(planned):
    _, plan = planned
    judged = [e for e in plan.evaluations if e.row is not None and e.bound_name]
    assert judged and all(e.capacity <= e.bound * (1 + 1e-9) for e in judged)


def test_a_queue_that_keeps_growing_does_not_keep_up(planned):
    """A run whose acknowledgements over its middle fall short of the offered rate fails, however long the latency
    tail perf-test's own rate divides by."""
    planner, plan = planned
    row = dict(evaluate(planner.scenario(plan.best.shape, plan.best.settings)))
    row["steady_records_per_sec"] = 0.5 * planner.req.planned_rps
    check = pl.Evaluation(plan.best.shape, plan.best.settings, "", 0.0, row=row)
    planner.judge(check)
    assert not check.passed and "delivers" in check.reason


def test_no_cheaper_configuration_in_the_exhaustive_grid_meets_it(planned):
    planner, plan = planned
    best = plan.best
    cheaper = []
    for b, p, t, ppb in itertools.product(SPACE.brokers, SPACE.producers, SPACE.threads, SPACE.partitions_per_broker):
        shape = bd.Shape(b, p, t, b * ppb)
        if shape.cost < best.shape.cost:
            cheaper.extend((shape, st) for st in SPACE.settings())
    assert cheaper, "the grid should hold cheaper configurations for the test to mean anything"
    from kafkasim.app.sweep import run_scenarios
    rows = run_scenarios([planner.scenario(s, st) for s, st in cheaper], jobs=2)
    for (shape, st), row in zip(cheaper, rows):
        ev = pl.Evaluation(shape, st, "", 0.0, row=row)
        planner.judge(ev)
        assert not ev.passed, f"{shape.text()}; {st.text()} is cheaper than the plan and meets the target"


def test_analytic_bounds_are_upper_bounds_of_the_model(planned):
    """The pruning is safe only if the model never beats a bound: check the plan's capacity against them."""
    planner, plan = planned
    best = plan.best
    _, bound = bd.least(planner.bounds.all(best.shape, best.settings))
    assert best.capacity <= bound / bd.BOUND_SLACK


def test_plan_json_and_text(capsys):
    args = ["plan", "--target-rps", "20000", "--record-size", "200", "--rf", "1", "--acks", "1",
            "--max-brokers", "2", "--max-producers", "2", "--batch-sizes", "65536", "--linger-ms", "5",
            "--compression", "none", "--max-in-flight", "5", "--sim-seconds", "0.2", "--jobs", "1", "-q",
            "--set", "hardware.worker.record_us=20", "--no-sensitivity"]
    assert cli_main(args + ["--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plan"]["meets_target"] and data["planned_rps"] == pytest.approx(26_000)
    assert data["plan"]["brokers"] == 1 and data["plan"]["producers"] == 1
    assert cli_main(args) == 0
    out = capsys.readouterr().out
    assert "PLAN   1 brokers" in out and "simulated for 0.20 s of traffic" in out
    assert out.splitlines()[0].endswith(", payload random-letters; hardware profile generic-server (hand-set or derived from published figures, not measured); hardware.worker.record_us=20")


@pytest.mark.parametrize("args, message", [
    (["--target-rps", "0", "--record-size", "100"], "--target-rps=0 is not allowed"),
    (["--target-rps", "1000", "--record-size", "big"], "--record-size='big' is not allowed"),
    (["--target-rps", "1000", "--record-size", "100", "--batch-sizes", "-1"], "producer.batch.size=-1 is not allowed"),
    (["--target-rps", "1000", "--record-size", "100", "--max-brokers", "2"], "RF 3 needs at least 3 brokers"),
    (["--target-rps", "1000", "--record-size", "100", "--set", "producer.batch.sise=1"], "unknown key"),
    (["--target-rps", "1000", "--record-size", "100", "--set", "network.rtt_ms=20", "--p99-ms", "5"],
     "--p99-ms=5 is not reachable here: every record waits at least one produce round trip, ≥ 40."),
])
def test_bad_plan_input_is_one_line_and_exit_2(capsys, args, message):
    assert cli_main(["plan", *args, "-q"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkasim: error: ") and message in err and len(err.strip().splitlines()) == 1


def test_record_size_range_is_the_models_uniform_distribution():
    assert parse_record_size("500-1000") == (750, 1000)
    assert parse_record_size("1024") == (1024, 0)
    with pytest.raises(ScenarioError):
        parse_record_size("1000-500")


def test_the_small_case_needs_more_than_one_broker_and_producer(planned):
    """The grid test above means something only if the plan had to grow past the smallest shape on both sides."""
    _, plan = planned
    assert plan.best.shape.brokers == 2 and plan.best.shape.producers == 2


def test_the_bounds_take_the_compression_level_the_search_is_run_with():
    """--set producer.compression.gzip.level=1: a send() costs what the model charges for gzip at level 1 (cheaper
    than at the default), and the batches are as big on the wire; a bound from the default level would prune
    plans the model passes."""
    def bounds(**overrides):
        request = pl.Request(**{**REQUEST, "overrides": {**SLOW, **overrides}})
        return bd.Bounds(pl.Planner(request, SPACE).base)

    gzip = bd.Settings(batch_size=65536, linger_ms=5.0, compression="gzip", max_in_flight=5)
    default, fast = bounds(), bounds(**{"producer.compression.gzip.level": 1})
    assert fast.send_seconds(gzip) < default.send_seconds(gzip)
    assert fast.wire(gzip) > default.wire(gzip)


def test_a_p99_no_candidate_approaches_stops_the_search(monkeypatch):
    """Past the floor a p99 limit may still be out of reach: once P99_PATIENCE candidates in a row fail on p99
    without a lower p99, the search stops and says so, rather than simulating the whole space."""
    monkeypatch.setattr(pl, "P99_PATIENCE", 3)
    planner = pl.Planner(pl.Request(**{**REQUEST, "p99_ms": 0.5}), SPACE, jobs=2)
    plan = planner.run(sensitivity=False)
    assert plan.best is None and plan.gave_up.startswith("p99 ≤ 0.5 ms not reached: the lowest p99 of ")
    assert len(plan.evaluations) < SPACE.size() and "stopped: p99 ≤ 0.5 ms not reached" in plan.text()
    assert plan.to_json()["search"]["stopped"] == plan.gave_up


def test_consumer_groups_need_more_broker_nic_and_the_plan_says_so(capsys):
    """Three groups reading every record take three more copies out of the leaders' NICs: on 100 Mbit/s NICs a
    rate one broker's NIC out carries alone needs more brokers with them, and the plan names the NIC out."""
    def bound(groups: int) -> float:
        request = pl.Request(**{**REQUEST, "consumer_groups": groups})
        b = bd.Bounds(pl.Planner(request, SPACE).base)
        return b.broker(1, 1, bd.Settings(batch_size=65536, linger_ms=5.0, compression="none", max_in_flight=5))[
            "broker NIC out"]

    assert bound(3) > 0 and "broker NIC out" not in bd.Bounds(
        pl.Planner(pl.Request(**REQUEST), SPACE).base).broker(
        1, 1, bd.Settings(batch_size=65536, linger_ms=5.0, compression="none", max_in_flight=5))
    assert bound(1) == pytest.approx(3 * bound(3))
    args = ["plan", "--target-rps", "20000", "--record-size", "200", "--rf", "1", "--acks", "1",
            "--max-brokers", "3", "--max-producers", "2", "--batch-sizes", "65536", "--linger-ms", "5",
            "--compression", "none", "--max-in-flight", "5", "--sim-seconds", "0.2", "--jobs", "1", "-q",
            "--set", "hardware.nic_mbit=100", "--no-sensitivity", "--format", "json"]
    assert cli_main(args) == 0
    alone = json.loads(capsys.readouterr().out)["plan"]
    assert cli_main(args + ["--consumer-groups", "3"]) == 0
    read = json.loads(capsys.readouterr().out)["plan"]
    assert read["brokers"] > alone["brokers"]
    assert cli_main(args[:-2] + ["--consumer-groups", "3"]) == 0
    assert "broker NIC out" in capsys.readouterr().out


def test_a_group_catching_up_takes_nic_out_and_past_the_page_cache_disk_too(capsys):
    """A group 1M records of 200 B behind, catching up in 100 s, reads 10k records/s more than the producers
    write: within the page cache (0.2 GB on one broker, 5 GiB of cache) that is NIC out only; 100M records (20 GB)
    over 10,000 s come from disk, beside the writes. The plan then needs more brokers and names the disk."""
    st = bd.Settings(batch_size=65536, linger_ms=5.0, compression="none", max_in_flight=5)
    base = pl.Planner(pl.Request(**REQUEST), SPACE).base
    nic = base.flat()["hardware.nic_mbit"] * bd.MBIT / 200
    disk = base.flat()["hardware.disk_mb_s"] * 1e6 / 200
    cached = bd.Bounds(base, (1e6, 100)).broker(1, 1, st)
    assert cached["broker NIC out"] == pytest.approx(nic - 10e3)           # RF 1: the group's copy alone
    assert cached["broker disk"] == pytest.approx(disk)
    on_disk = bd.Bounds(base, (100e6, 10_000)).broker(1, 1, st)
    assert on_disk["broker disk"] == pytest.approx((disk - 10e3) / 2)
    assert bd.Bounds(base, (100e6, 10_000)).broker(2, 2, st)["broker disk"] == pytest.approx((2 * disk - 10e3) / 2)
    assert bd.Bounds(base, (100e6, 10_000)).broker(4, 4, st)["broker disk"] == pytest.approx(4 * disk)  # 5 GB each
    args = ["plan", "--target-rps", "20000", "--record-size", "200", "--rf", "1", "--acks", "1",
            "--max-brokers", "4", "--max-producers", "1", "--batch-sizes", "65536", "--linger-ms", "5",
            "--compression", "none", "--max-in-flight", "5", "--sim-seconds", "0.2", "--jobs", "1", "-q",
            "--set", "hardware.disk_mb_s=10", "--no-sensitivity", "--format", "json"]
    assert cli_main(args) == 0
    alone = json.loads(capsys.readouterr().out)
    assert cli_main(args + ["--catch-up", "100000000:3600"]) == 0
    behind = json.loads(capsys.readouterr().out)
    assert behind["catch_up"] == {"records": 100e6, "seconds": 3600}
    assert behind["plan"]["brokers"] > alone["plan"]["brokers"]
    assert cli_main(args[:-2] + ["--catch-up", "100000000:3600"]) == 0
    assert "broker disk" in capsys.readouterr().out


@pytest.mark.parametrize("bad", ["100", "0:60", "100:-1", "a:b"])
def test_a_catch_up_target_that_is_not_records_colon_seconds_is_refused(bad, capsys):
    assert cli_main(["plan", "--target-rps", "1000", "--record-size", "100", "--catch-up", bad]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--catch-up" in err[0] and "RECORDS:SECONDS" in err[0]
