"""The published studies, reproduced (`kafkasim reproduce`, validation/published/*.yaml): the issue's targets.

Each study is predicted once per test session (module-scoped fixture, the studies' own shorter runs), then every
trend check and the per-run throughput targets are separate tests. Where the model misses a target the test is
xfail with what the model gives and why, so the gap stays visible and a fix shows up as XPASS.
"""
from __future__ import annotations

import math
import re
from types import SimpleNamespace

import pytest
import yaml

from conftest import EXAMPLES, SEED_DATA
from kafkasim.app.cli import main
from kafkasim.validation import reproduce as rep

SPECS = {study: rep.load_study(study) for study in rep.STUDIES}

# (study, check name) -> why the model misses it today.
KNOWN_MISSES = {
    ("vm-2core", "latency rises again from 32 to 50 KiB"):
        "the 50 KiB run's higher mean (42.0 vs 31.1 ms) comes from stalls in its 3rd and 4th windows (18.6 and "
        "121.3 ms avg, 920 ms max, 48.4k records/s) — the 16 KiB run stalled in its 3rd window too (194.3 ms, "
        "1106 ms max), the 32 KiB run not at all — while both runs' other later windows show 1.2 ms; their start "
        "goes the other way (first window 88.8 ms at 32 KiB, 27.3 at 50 KiB: the start-up backlog drains faster "
        "with bigger batches); the model's first windows tie (13.2 vs 13.3 ms). The stalls (GC, page-cache "
        "writeback on a 2 GB VM) do not follow batch.size and the model leaves them out: its means are 54.8 ms "
        "(32 KiB) and 16.7 ms (50 KiB), most of it the start-up backlog, which drains faster with bigger batches "
        "(first windows 216 and 64 ms), and its calmest later windows tie (0.97 and 1.02 ms). Measured here with "
        "the 2.2 client the post used (validation/data/local-vm-batch-size.jsonl, five passes), 50 KiB had the lowest mean latency "
        "in every pass (medians 83.9, 13.6, 11.1, 2.9 ms over 8/16/32/50 KiB), and single late windows of "
        "124–331 ms came at 8 and 16 KiB",
    ("vm-2core", "latency over 8/16/32/50 KiB is lowest at 32 KiB"):
        "see the check above: without the later stalls the model's latency keeps falling with batch.size, "
        "lowest at 50 KiB (16.7 against 54.8 ms at 32 KiB)",
    ("kontur-2020", "VIII → IX → X: more partitions, less contention"):
        "the model's three runs are within 1 % of each other (415.4k, 411.4k, 415.4k records/s; published 394.9k "
        "→ 397.8k → 404.0k, each within the others' spread): the producer-wide lock, not the partitions' deque "
        "locks, sets their pace in the model, so more partitions change nothing it can resolve; the check passed "
        "by chance with the NICs first come, first served (405.2k, 409.3k, 414.7k)",
    ("kontur-2020", "XI → XII: own partitions per thread beat round-robin"):
        "both runs meet their 500k target in the model (504.3k and 501.4k records/s; published 421.6k and 500.0k): "
        "it misses what 2.2's round-robin costs in send() (see KONTUR_MISSES' XI); the check passed by 0.04 % with "
        "the NICs first come, first served",
    ("linkedin-2014", "sync replication carries at most 3/4 of async"):
        "the model's acks=-1 run keeps the worker thread's pace (821.6k records/s, published 421.8k): with 64000-B "
        "batches a record waits 7.5 ms on average, most of it for the followers' next fetch, and five requests in "
        "flight a broker still carry the thread's records. The post blames the wait for the followers; what made "
        "it that long in 2014 is not stated (0.8.1's produce purgatory, rewritten in 0.8.2 and 0.9, is a "
        "candidate the model leaves out). A broker of today does not halve one producer either: on three local "
        "Kafka 4.3.1 nodes (validation/data/local-acks-2026-11-28-s33.jsonl, docs/fidelity.md) acks=all kept 86 % "
        "of acks=1 with 64000-B batches and 89 % with 8196-B ones, the model 95 % and 100 %",
    ("dcos-2018", "the upper range (200000 B, linger 100) carries at most 5/6 of the lower"):
        "the model gives the upper range (linger.ms 100) 320.7k records/s and the lower (10 ms) 318.6k, where the "
        "source measured 233.6k and 342.9k in one whole run each. Measured here with the 2.2 client held to half a "
        "core by a CFS quota, perf-test's one value in every record (validation/data/dcos-halfcore-repeated-"
        "2026-11-28-s34.jsonl, validation/reports/dcos-halfcore-2026-11-28-s34/), the two ranges tie (204.4k and "
        "205.6k against 204.3k and 222.4k records/s) while their latencies are the source's (upper p50 99-100 ms, "
        "p99 208-224 ms; published 100 and 204): the longer linger does not slow a half-core producer here, and "
        "what slowed the 2018 run is not stated",
}

# Kontur run -> why the model misses its 15 % today.
KONTUR_MISSES: dict[str, str] = {
    "XI": "the model's XI meets its 500k target (504.3k records/s steady, +20 %; published 421.6k): 4.9 us in "
          "send() where the talk measured 6.2 (XII 4.4, 4.5). 2.2's round-robin sends each record to the next of "
          "18 partitions, so most appends take a deque lock another thread took last, but that time under 18 "
          "separate locks only shortens the threads' wait at the producer-wide lock, which sets the pace. On a "
          "real producer here the direction holds (2.4's own partitions 459k records/s, 4.82 us in send(), "
          "against 2.2's round-robin 377k, 6.49 us; validation/data/local-kontur-clients.jsonl), so XI has a cost "
          "the model lacks; not found. (XI → XII, both at the target, is a tie: KNOWN_MISSES.)",
}


@pytest.fixture(scope="module")
def reproduced():
    """One prediction per run per study, shared by every test in this file."""
    cache: dict[str, rep.StudyResult] = {}

    def get(study: str) -> rep.StudyResult:
        if study not in cache:
            cache[study] = rep.reproduce(study, progress=None)
        return cache[study]
    return get


def _check_params():
    for study, spec in SPECS.items():
        for check in spec.get("checks", []):
            reason = KNOWN_MISSES.get((study, check["name"]))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            yield pytest.param(study, check["name"], marks=marks, id=f"{study}: {check['name']}")


@pytest.mark.parametrize("study,name", list(_check_params()))
def test_trend_check(reproduced, study, name):
    check = next(c for c in reproduced(study).checks if c.name == name)
    assert check.passed, check.detail


def _kontur_params():
    for run in SPECS["kontur-2020"]["runs"]:
        reason = KONTUR_MISSES.get(run["id"])
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        yield pytest.param(run["id"], marks=marks, id=run["id"])


@pytest.mark.parametrize("run", list(_kontur_params()))
def test_kontur_throughput_within_15_percent(reproduced, run):
    row = reproduced("kontur-2020").row(run)
    assert abs(row.error()) <= 0.15, f"{run}: {row.predicted['records_per_sec']:.0f} vs " \
                                     f"{row.published['records_per_sec']:.0f} records/s ({row.error():+.1%})"


@pytest.mark.parametrize("study,run", [("vm-2core", "03"), ("vm-2core", "11"), ("localhost", "1"),
                                       ("kontur-2020", "I"), ("linkedin-2014", "1"), ("dcos-2018", "1")])
def test_calibration_runs_stay_calibrated(reproduced, study, run):
    """The runs a profile was set from must stay within 10 %: a model change that moves them needs a new profile."""
    row = reproduced(study).row(run)
    assert row.role == "calibration"
    assert abs(row.error()) <= 0.10, f"{study} {run}: {row.error():+.1%}"


@pytest.mark.parametrize("study", ["linkedin-2014", "dcos-2018"])
def test_multi_host_predictions_median_error_within_25_percent(reproduced, study):
    """The issue's target for a multi-host study predicted from its stated hardware: the median throughput error of
    the runs not calibrated on within 25 %."""
    errors = sorted(abs(r.error()) for r in reproduced(study).rows if r.role == "prediction")
    assert errors[len(errors) // 2] <= 0.25, errors


def test_linkedins_three_producers_share_their_nics(reproduced):
    """Three producers over 1 GbE come within 25 % only with the NICs shared per flow (first come, first served:
    −57 %)."""
    assert abs(reproduced("linkedin-2014").row("4").error()) <= 0.25


def test_each_study_compares_the_rate_its_source_states(reproduced):
    """The VM post prints perf-test's total line over each full run, start-up included, and its runs are simulated
    at that length: the model's total line is compared. Kontur's talk gives a long run's mean rate: the steady
    rate is."""
    assert SPECS["vm-2core"]["throughput"] == "perf-test" and SPECS["vm-2core"]["records"] == 0
    for row in reproduced("vm-2core").rows:
        assert row.predicted["records_per_sec"] == row.predicted["perf_test_records_per_sec"], row.id
    kontur = reproduced("kontur-2020").row("I").predicted
    assert kontur["records_per_sec"] != kontur["perf_test_records_per_sec"]


def test_a_study_with_an_unknown_throughput_is_one_line(monkeypatch, tmp_path):
    bad = (rep.PUBLISHED_DIR / "localhost.yaml").read_text() + "throughput: mean\n"
    (tmp_path / "localhost.yaml").write_text(bad)
    monkeypatch.setattr(rep, "PUBLISHED_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"^localhost: throughput 'mean': expected one of steady, perf-test$"):
        rep.load_study("localhost")


def test_calibration_runs_are_marked(reproduced):
    """The rows a profile drew on are labelled, so nobody reads them as independent predictions."""
    roles = {r.id: r.role for r in reproduced("localhost").rows}
    assert roles == {"1": "calibration", "2": "prediction", "3": "prediction"}


# --- the study files themselves -----------------------------------------------------------------------------------

@pytest.mark.parametrize("study", rep.STUDIES)
def test_every_run_has_its_example_with_the_published_figure(study):
    """Each run's example exists and quotes the throughput the study file holds (two transcriptions agree)."""
    for run in SPECS[study]["runs"]:
        text = (EXAMPLES / run["example"]).read_text()
        published = run["published"]["records_per_sec"]
        assert str(published) in text.replace(",", ""), (run["example"], published)


SEED_FILES = {"kontur-2020": "kontur-2020-producer-bottlenecks.yaml", "vm-2core": "vm-2core-batch-size.yaml",
              "localhost": "localhost-throughput-config.yaml"}


@pytest.mark.parametrize("study", SEED_FILES)
def test_published_figures_match_the_seed_data(study):
    """validation/published copies the seed data's throughput figures exactly (and all of them). (kip-794's come
    from the KIP's page itself: the test above checks them against its examples.)"""
    seed = yaml.safe_load((SEED_DATA / SEED_FILES[study]).read_text())
    if study == "kontur-2020":
        seeded = [e["throughput_rps"][0] for e in seed["experiments"]]
    else:
        seeded = [r["result"][0] for r in seed["runs"]]
    ours = [r["published"]["records_per_sec"] for r in SPECS[study]["runs"]]
    assert sorted(ours) == sorted(seeded)
    if study == "kontur-2020":      # and the spreads over the run, where the talk states them
        spreads = {e["throughput_rps"][0]: e["throughput_rps"][1] for e in seed["experiments"]}
        for run in SPECS[study]["runs"]:
            assert run["published"].get("spread") == spreads[run["published"]["records_per_sec"]], run["id"]


def test_kontur_sender_latency_is_the_talks_formula():
    """Where the talk states both producer metrics, its sender latency is record-queue-time-avg / 2 +
    request-latency-avg (the slide's definition), so the model's is computed the same way."""
    stated = [r["published"] for r in SPECS["kontur-2020"]["runs"]
              if isinstance(r["published"].get("record-queue-time-avg"), (int, float))]
    assert len(stated) == 2          # IV and V
    for pub in stated:
        formula = pub["record-queue-time-avg"] / 2 + pub["request-latency-avg"]
        assert formula == pytest.approx(pub["sender_latency_ms"], rel=0.01)
    result = SimpleNamespace(perf_test={**dict.fromkeys(("avg_latency_ms", "max_latency_ms", "p50_ms", "p95_ms",
                                                         "p99_ms", "p999_ms", "records_per_sec"), 1.0),
                                        "window_figures": []},
                             scenario={"producers": 1}, steady_records_per_sec=1.0, worker_latency_us=1.0,
                             verdict={"bottleneck": "none"},
                             metrics={"record-queue-time-avg": 30.0, "request-latency-avg": 12.0,
                                      "request-rate": 1.0, "batch-size-avg": 1.0})
    assert rep.prediction(result)["sender_latency_ms"] == 27.0


def test_the_windows_table_splits_a_published_mean_into_its_start_later_windows_and_rest():
    res = _fake({"a": (50_000.0, 50_000.0), "b": (60_000.0, 60_000.0)})
    a = res.row("a")
    a.length = 1000
    # 1000 records averaging 10 ms: 200 at 40 ms, then 300 at 1 and 300 at 2 ms: the other 200 average 5.5 ms
    a.published.update(avg_latency_ms=10.0, windows=[[200, 40.0, 40.0, 300.0], [300, 60.0, 1.0, 5.0],
                                                     [300, 60.0, 2.0, 9.0]])
    a.predicted.update(avg_latency_ms=0.5, windows=[[100, 50.0, 8.0, 20.0], [100, 50.0, 0.4, 1.0],
                                                    [100, 50.0, 0.3, 1.0]])
    head, body = rep._windows(res)
    assert len(body) == 1 and body[0][0] == "a"                # b has no window lines
    assert body[0][2:] == ["40 (300)", "1, 2", "200, 5.50", "1", "0.500", "8.00 (20.0)", "0.300", "0.30"]
    a.predicted["windows"] = []                                 # a run simulated shorter than 5 s has none
    assert rep._windows(res)[1][0][7:] == ["–", "–", "–"]


def test_the_vm_windows_fit_their_summary_lines():
    """The 5-s lines copied from the post add up with its summary line: fewer records, and a rest whose mean
    latency is not negative (within the lines' rounding to 0.1 ms)."""
    for run in SPECS["vm-2core"]["runs"]:
        pub = run["published"]
        length = rep.load_scenario(EXAMPLES / run["example"]).workload.records
        counted = sum(w[0] for w in pub["windows"])
        assert counted <= length, run["id"]
        assert pub["avg_latency_ms"] * length - sum(w[0] * w[2] for w in pub["windows"]) >= -0.05 * counted, run["id"]


def test_the_vm_windows_are_the_posts_own_lines():
    """The window lines in validation/published/vm-2core.yaml are the post's, in order (its original text)."""
    text = (SEED_DATA / "originals" / yaml.safe_load((SEED_DATA / SEED_FILES["vm-2core"]).read_text())["source_file"])
    line = re.compile(r"^(\d+) records sent, ([\d.]+) records/sec \([\d.]+ MB/sec\), ([\d.]+) ms avg latency, "
                      r"([\d.]+) ms max latency\.$")
    runs, current = [], []
    for ln in text.read_text().splitlines():
        if m := line.match(ln.strip()):
            current.append([int(m[1]), float(m[2]), float(m[3]), float(m[4])])
        elif "ms 99.9th" in ln:
            runs.append(current)
            current = []
    assert [r["published"]["windows"] for r in SPECS["vm-2core"]["runs"]] == [runs[i] for i in
                                                                             (0, 2, 1, 3, 4, 5, 6, 7, 8, 9, 10)]


# --- the checks can fail --------------------------------------------------------------------------------------------

def _fake(rows: dict[str, tuple[float, float]]) -> rep.StudyResult:
    res = rep.StudyResult("fake", "", "", "", "", "avg_latency_ms", 0.15)
    for rid, (pub, pred) in rows.items():
        res.rows.append(rep.Row(rid, rid, "prediction", {"records_per_sec": pub, "avg_latency_ms": pub},
                                {"records_per_sec": pred, "avg_latency_ms": pred, "verdict": "worker threads",
                                 "worker_latency_us": 1.0},
                                100.0, "worker threads"))
    return res


def test_order_check_fails_when_the_prediction_turns_the_other_way():
    res = _fake({"a": (10, 10), "b": (5, 5), "c": (8, 4)})
    assert rep.judge(res, {"name": "n", "kind": "order", "metric": "records_per_sec", "runs": ["a", "b"]}).passed
    assert not rep.judge(res, {"name": "n", "kind": "order", "metric": "records_per_sec",
                               "runs": ["a", "b", "c"]}).passed


def test_argmin_and_target_checks_can_fail():
    res = _fake({"a": (3, 1), "b": (1, 2)})
    assert not rep.judge(res, {"name": "n", "kind": "argmin", "metric": "avg_latency_ms", "runs": ["a", "b"]}).passed
    assert not rep.judge(res, {"name": "n", "kind": "meets_target", "run": "b"}).passed      # 2 of 100
    assert rep.judge(res, {"name": "n", "kind": "short_of_target", "run": "b", "fraction": 0.5}).passed
    assert not rep.judge(res, {"name": "n", "kind": "within", "run": "b", "fraction": 0.2}).passed   # +100 %
    assert res.within_tolerance(res.row("a")) is False and math.isclose(res.row("a").error(), -2 / 3)
    within = {"name": "n", "kind": "within", "metric": "avg_latency_ms"}
    assert rep.judge(res, {**within, "run": "a", "factor": 4}).passed                     # × 1/3
    assert not rep.judge(res, {**within, "run": "a", "factor": 2}).passed
    assert not rep.judge(res, {**within, "run": "b", "factor": 1.5}).passed               # × 2
    factor = {"name": "n", "kind": "factor", "metric": "avg_latency_ms", "runs": ["b", "a"]}
    assert rep.judge(res, {**factor, "at_least": 2}).passed                               # 2 ÷ 1
    assert not rep.judge(res, {**factor, "at_least": 10}).passed


def test_tables_show_the_published_spread_and_other_runs():
    """The noise the sources state sits beside the figures: Kontur's spread over each run, the VM post's other run."""
    res = _fake({"a": (100_000.0, 90_000.0), "b": (120_000.0, 130_000.0)})
    res.row("a").published.update(spread=7000.0, other_runs=[{"avg_latency_ms": 456.94}])
    _, body = rep._table(res)
    assert body[0][3] == "100,000 ± 7,000" and body[1][3] == "120,000"
    assert body[0][6] == "100,000 (another run: 456.9)" and body[1][6] == "120,000"
    check = rep.judge(res, {"name": "n", "kind": "order", "metric": "records_per_sec", "runs": ["a", "b"]})
    assert check.passed and "(published 100,000 ± 7,000 → 120,000)" in check.detail


# --- the command ----------------------------------------------------------------------------------------------------

def test_unknown_study_is_one_line_and_exit_2(capsys):
    assert main(["reproduce", "kontur"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "'kontur'" in err and "kontur-2020, vm-2core, localhost" in err


def test_bad_jobs_is_one_line_and_exit_2(capsys):
    assert main(["reproduce", "localhost", "--jobs", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--jobs=0" in err and "≥ 1" in err


def test_one_process_gives_the_same_figures_as_several():
    """The runs are seeded: simulating them side by side changes nothing."""
    alone, side_by_side = (rep.reproduce("localhost", 2000, progress=None, jobs=j) for j in (1, 2))
    assert [r.predicted for r in alone.rows] == [r.predicted for r in side_by_side.rows]


def test_reproduce_command_writes_table_json_and_plot(tmp_path, capsys):
    assert main(["reproduce", "localhost", "--records", "3000", "--format", "markdown", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert "| 3 | 100 KB, linger 10, acks=1 |" in out.out and "trend check" in out.out
    assert "predicting 3 runs (3000 records each)" in out.err and "2 done (2/3, 3000 records)" in out.err
    for suffix in ("png", "md", "json"):
        assert (tmp_path / f"localhost.{suffix}").stat().st_size > 0
    assert (tmp_path / "localhost.png").read_bytes()[:4] == b"\x89PNG"
