"""kafkasim sweep: points equal single predictions, serial = processes = Dask, --vary parsing and its errors."""
from __future__ import annotations

import csv
import json

import pytest

from kafkasim.app import sweep as sw
from kafkasim.app.cli import main as sweep_main
from kafkasim.model.scenario import ScenarioError, from_flat
from kafkasim.model.simulate import simulate

BASE = {"name": "sweep-test", "client.version": "3.9", "workload.records": 3000, "workload.warmup_records": 500,
        "workload.throughput": 60000, "workload.record_size": 512, "topic.partitions": 2, "seed": 3}


def base():
    return from_flat(BASE, source="test")


def deterministic(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != sw.RUNTIME_COLUMN}


def test_grid_is_the_cartesian_product_in_order():
    axes = sw.parse_axes(["batch.size=16384,65536", "linger.ms=0,5,20"])
    assert [a.key for a in axes] == ["producer.batch.size", "producer.linger.ms"]
    points = sw.grid_points(axes)
    assert len(points) == 6
    assert points[0] == {"producer.batch.size": 16384, "producer.linger.ms": 0.0}
    assert points[-1] == {"producer.batch.size": 65536, "producer.linger.ms": 20.0}


def test_latin_hypercube_covers_each_stratum_once_and_is_reproducible():
    axes = sw.parse_axes(["batch.size=8192:262144:log", "linger.ms=0:20", "compression.type=none,lz4"])
    a = sw.lhs_points(axes, 8, seed=5)
    assert a == sw.lhs_points(axes, 8, seed=5)
    assert all(8192 <= p["producer.batch.size"] <= 262144 for p in a)
    assert all(isinstance(p["producer.batch.size"], int) for p in a)
    linger = sorted(p["producer.linger.ms"] for p in a)
    assert all(20 * i / 8 <= x < 20 * (i + 1) / 8 for i, x in enumerate(linger))   # one point per stratum
    assert sorted(p["producer.compression.type"] for p in a) == ["lz4"] * 4 + ["none"] * 4


def test_sweep_rows_equal_single_predictions():
    s = base()
    result = sw.sweep(s, sw.parse_axes(["batch.size=8192,65536", "partitions=1,3"]), records=None)
    assert len(result.rows) == 4
    for point, row in zip(result.points, result.rows):
        single = simulate(s.replace(**point))
        assert row["records_per_sec"] == single.perf_test["records_per_sec"]
        assert row["p99_ms"] == single.perf_test["p99_ms"]
        assert row["avg_latency_ms"] == single.perf_test["avg_latency_ms"]
        assert row["bottleneck"] == single.verdict["bottleneck"]
        assert row["records_acked"] == single.records_acked


def test_processes_equal_serial():
    s = base()
    axes = sw.parse_axes(["batch.size=8192,32768,65536"])
    serial = sw.sweep(s, axes, records=None, jobs=1)
    parallel = sw.sweep(s, axes, records=None, jobs=2)
    assert [deterministic(r) for r in serial.rows] == [deterministic(r) for r in parallel.rows]


def test_dask_local_cluster_equals_local_run():
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed "
                                                                  "(pip install 'kafkasim[dask]')")
    s = base()
    axes = sw.parse_axes(["batch.size=8192,65536", "linger.ms=0,5"])
    local = sw.sweep(s, axes, records=None, jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as lc:
        on_dask = sw.sweep(s, axes, records=None, scheduler=lc.scheduler_address)
    assert [deterministic(r) for r in local.rows] == [deterministic(r) for r in on_dask.rows]


def test_records_are_scaled_down_and_the_note_says_so():
    s = from_flat({**BASE, "workload.records": 1_000_000, "workload.warmup_records": 100_000})
    scaled, note = sw.with_records(s, 20_000)
    assert scaled.workload.records == 20_000 and scaled.workload.warmup_records == 2_000
    assert "20000 records per producer" in note and "1000000" in note


@pytest.mark.parametrize("vary, message", [
    ("batch.sise=1", "unknown key 'batch.sise'; did you mean 'producer.batch.size'?"),
    ("batch.size=-3", "producer.batch.size=-3 is not allowed: expected an integer from 0 to 2147483647"),
    ("compression.type=lz5", "producer.compression.type='lz5' is not allowed"),
    ("batch.size", "expected key=v1,v2,..."),
    ("batch.size=16384:1024", "low end must be below its high end"),
])
def test_bad_vary_is_one_line_and_exit_2(tmp_path, capsys, vary, message):
    path = tmp_path / "s.yaml"
    path.write_text("workload: {records: 1000}\n")
    assert sweep_main(["sweep", str(path), "--vary", vary]) == 2
    err = capsys.readouterr().err
    assert err.startswith("kafkasim: error: ") and message in err
    assert len(err.strip().splitlines()) == 1


def test_range_without_samples_is_an_error():
    with pytest.raises(ScenarioError, match="--samples"):
        sw.grid_points(sw.parse_axes(["linger.ms=0:20"]))


def test_impossible_combination_names_the_point():
    s = from_flat({**BASE, "topic.replication.factor": 1})
    with pytest.raises(ScenarioError, match="in the sweep point topic.replication.factor=2"):
        sw.point_scenarios(s, sw.grid_points(sw.parse_axes(["replication.factor=2"])))


def test_cli_writes_csv_json_and_png(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("workload: {records: 2000, throughput: 50000, record_size: 512}\ntopic: {partitions: 2}\n")
    out = tmp_path / "r.csv"
    assert sweep_main(["sweep", str(path), "--vary", "batch.size=8192,65536", "--out", str(out), "-q"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["producer.batch.size"] for r in rows] == ["8192", "65536"]
    assert (tmp_path / "r.png").stat().st_size > 1000
    assert "records per sec" in capsys.readouterr().out
    js = tmp_path / "r.json"
    assert sweep_main(["sweep", str(path), "--vary", "linger.ms=0:10", "--samples", "3", "--out", str(js),
                       "-q", "--format", "json"]) == 0
    data = json.loads(js.read_text())
    assert len(data["points"]) == 3 and data["varied"] == ["producer.linger.ms"]
    assert json.loads(capsys.readouterr().out)["points"][0]["result"]["records_per_sec"] > 0


def test_out_to_a_missing_folder_is_refused_before_the_work(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sw, "run_scenarios", lambda *a, **k: pytest.fail("the sweep ran"))
    code = sweep_main(["sweep", "examples/local-1broker.yaml", "--vary", "linger.ms=0,5",
                       "--out", str(tmp_path / "no-such-dir" / "x.csv")])
    assert code == 2 and "does not exist" in capsys.readouterr().err


def test_records_zero_is_the_scenarios_own_count(capsys):
    code = sweep_main(["sweep", "examples/local-1broker.yaml", "--vary", "linger.ms=0", "--records", "0",
                       "--set", "workload.records=2000", "--quiet"])
    assert code == 0


def test_ctrl_c_keeps_the_finished_points(tmp_path, capsys, monkeypatch):
    calls = []

    def evaluate(scenario):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(scenario)
        return real(scenario)
    real = sw.evaluate
    monkeypatch.setattr(sw, "evaluate", evaluate)
    out = tmp_path / "kept.csv"
    code = sweep_main(["sweep", "examples/local-1broker.yaml", "--vary", "linger.ms=0,1,2,3", "--records", "2000",
                       "--out", str(out), "--quiet"])
    assert code == 130
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 2
    assert "interrupted after 2 of 4" in capsys.readouterr().err


def test_finished_points_are_on_disk_as_they_finish(tmp_path, monkeypatch):
    """A sweep with --out writes each finished point to OUT.partial.jsonl at once: one that dies keeps them; one
    that completes leaves only its output. The default simulates each point in full, as predict."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text("client: {version: '3.9'}\nworkload: {records: 3000, warmup_records: 500}\n")
    out = tmp_path / "points.csv"
    assert sweep_main(["sweep", str(scenario), "--vary", "batch.size=8192,16384", "--out", str(out), "-q"]) == 0
    assert out.is_file() and not (tmp_path / "points.csv.partial.jsonl").exists()
    assert [r["producer.batch.size"] for r in csv.DictReader(out.open())] == ["8192", "16384"]
    one = simulate(from_flat({"client.version": "3.9", "workload.records": 3000, "workload.warmup_records": 500,
                              "producer.batch.size": 16384}))
    assert float(list(csv.DictReader(out.open()))[1]["records_per_sec"]) == pytest.approx(
        one.perf_test["records_per_sec"])

    calls = []
    real = sw.evaluate

    def dies_on_the_second(s):
        calls.append(s)
        if len(calls) == 2:
            raise RuntimeError("the machine went away")
        return real(s)
    monkeypatch.setattr(sw, "evaluate", dies_on_the_second)
    out.unlink()
    with pytest.raises(RuntimeError):
        sweep_main(["sweep", str(scenario), "--vary", "batch.size=8192,16384", "--out", str(out), "-q"])
    kept = [json.loads(line) for line in (tmp_path / "points.csv.partial.jsonl").read_text().splitlines()]
    assert [k["settings"] for k in kept] == [{"producer.batch.size": 8192}] and not out.exists()
