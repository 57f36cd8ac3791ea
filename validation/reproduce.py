"""`kafkasim reproduce`: predict every run of the published studies and compare with what their sources state.

Each study is a YAML file under validation/published/: the figures its source states (copied from
shared/reference/seed-data, so a clone works on its own), the example scenario of each run, and the trends the
model must show. A run's scenario is examples/<example> with fewer records (the study's `records`, or the run's
own); every figure is a prediction of the model with the study's profile.

Check kinds, each judged on the prediction (the published figures show every trend by construction):
  order            the metric rises and falls between consecutive runs as the published one does
  argmin           the metric is lowest at the same run as the published one
  verdict          the bottleneck verdict is the run's `verdict`
  meets_target     throughput ≥ fraction (default 0.97) × the run's --throughput target
  short_of_target  throughput < fraction × the target
  within           |predicted / published − 1| ≤ fraction for the run's throughput (or its `metric`); or, with
                   `factor`, predicted / published between 1 / factor and factor
  factor           the first run's metric is at least `at_least` × the second's
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from kafkasim.calibration.fit import job_count, simulator
from kafkasim.model.scenario import load_scenario

PUBLISHED_DIR = Path(__file__).parent / "published"
EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "examples"
STUDIES = ("kontur-2020", "vm-2core", "localhost", "kip-794", "linkedin-2014", "dcos-2018")
MET = 0.97                   # the verdict's own "target met" mark (model/verdict.py)
FORMATS = ("text", "json", "markdown")
# What a study's published rates are compared with: the model's steady rate (a source's mean rate over a long run),
# or perf-test's total line, start-up included (a source that prints it, its runs simulated at their own length).
THROUGHPUT = ("steady", "perf-test")


@dataclass
class Row:
    id: str
    label: str
    role: str                # "prediction" or "calibration" (the profile drew on this run's figures)
    published: dict
    predicted: dict
    target: float | None     # the run's --throughput, None when unthrottled
    expected_verdict: str | None
    x: Any = None
    length: int | None = None  # records in the published run (the example's own)

    def error(self, metric: str = "records_per_sec") -> float | None:
        p, m = self.predicted.get(metric), self.published.get(metric)
        return p / m - 1 if p is not None and m else None


@dataclass
class Check:
    name: str
    kind: str
    passed: bool
    detail: str


@dataclass
class StudyResult:
    study: str
    title: str
    source: str
    profile: str
    calibration: str
    latency: str
    tolerance: float | None
    rows: list[Row] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    def row(self, run_id: str) -> Row:
        return next(r for r in self.rows if r.id == run_id)

    def within_tolerance(self, row: Row) -> bool | None:
        err = row.error()
        return None if self.tolerance is None or err is None else abs(err) <= self.tolerance


def load_study(study: str) -> dict:
    if study not in STUDIES:
        raise ValueError(f"unknown study {study!r}: expected one of {', '.join(STUDIES)}")
    spec = yaml.safe_load((PUBLISHED_DIR / f"{study}.yaml").read_text())
    if spec.get("throughput", "steady") not in THROUGHPUT:
        raise ValueError(f"{study}: throughput {spec['throughput']!r}: expected one of {', '.join(THROUGHPUT)}")
    return spec


def scenario_of(spec: dict, run: dict, records: int | None = None) -> tuple[Any, int]:
    """The run's example scenario with the study's (or the run's) number of simulated records (records=0 keeps
    the example's own), and the example's own: the published run's."""
    path = EXAMPLES_DIR / run["example"]
    if not path.is_file():
        raise ValueError(f"example {run['example']!r} of study {spec['study']!r} not found under {EXAMPLES_DIR} "
                         f"(reproduce needs the repository's examples/)")
    s = load_scenario(path)
    length = s.length
    n = run.get("records", spec.get("records", 0)) if records is None else records
    if n and n < length:
        s = s.shortened(n)
    return s, length


def prediction(result, throughput: str = "steady") -> dict:
    """The figures a study can state, from one simulation; its rate as `throughput` (THROUGHPUT) says."""
    if not result.scenario.get("producers", 1):
        return consumed(result, throughput)
    perf = result.perf_test
    out = {k: perf[k] for k in ("avg_latency_ms", "max_latency_ms", "p50_ms", "p95_ms", "p99_ms", "p999_ms")}
    # The published rates are means over long runs; the simulated runs are mostly shorter, so their start and their
    # last records' latency would weigh more in perf-test's total line than in the published one. (A study whose
    # runs are simulated at their published length compares the total line instead: THROUGHPUT.)
    out["records_per_sec"] = perf["records_per_sec"] if throughput == "perf-test" else result.steady_records_per_sec
    out["perf_test_records_per_sec"] = perf["records_per_sec"]
    out["windows"] = perf["window_figures"]
    # Kontur's "sender latency" is the talk's own formula on two producer metrics (its slide: Sender Latency =
    # record-queue-time-avg / 2 + request-latency-avg; IV 963 / 2 + 11 ≈ 492 and V 34.5 / 2 + 11.8 ≈ 29.0 ms, as
    # published), not a latency measured record by record: the model's is taken the same way.
    metrics = result.metrics
    out["sender_latency_ms"] = metrics["record-queue-time-avg"] / 2 + metrics["request-latency-avg"]
    out["worker_latency_us"] = result.worker_latency_us
    for k in ("request-latency-avg", "request-rate", "batch-size-avg", "record-queue-time-avg"):
        out[k] = result.metrics[k]
    out["verdict"] = result.verdict["bottleneck"]
    return out


def consumed(result, throughput: str = "steady") -> dict:
    """A consumers-only run's figures: kafka-consumer-perf-test's rate, every group's together; steady, its rate
    while fetching (fetch.nMsg.sec: the group's join left out, as a long run's mean leaves it), or with all."""
    groups = result.consumers
    total = sum(g["perf_test"]["records_per_sec"] for g in groups)
    fetching = sum(g["perf_test"]["fetch_records_per_sec"] for g in groups)
    return {"records_per_sec": total if throughput == "perf-test" else fetching, "perf_test_records_per_sec": total,
            "worker_latency_us": None, "verdict": "consumer: " + groups[0]["bottleneck"]["name"]}


def reproduce(study: str, records: int | None = None, progress: Any = "stderr",
              jobs: int | None = None) -> StudyResult:
    """Predict every run of `study` (on `jobs` processes, default one per core) and judge its checks; progress lines
    go to `progress` (a file, the current stderr by default, None for none)."""
    spec = load_study(study)
    progress = sys.stderr if progress == "stderr" else progress
    out = StudyResult(study, spec["title"], spec["source"], spec["profile"], " ".join(spec["calibration"].split()),
                      spec.get("latency", "avg_latency_ms"), spec.get("tolerance"))
    runs = spec["runs"]
    scenarios, lengths = zip(*(scenario_of(spec, run, records) for run in runs))
    jobs = min(job_count(jobs), len(runs))
    if progress:
        sizes = sorted({s.length for s in scenarios})
        span = f"{sizes[0]}–{sizes[-1]}" if len(sizes) > 1 else f"{sizes[0]}"
        print(f"kafkasim: {study}: predicting {len(runs)} runs ({span} records each) on {jobs} "
              f"process{'es' if jobs > 1 else ''}...", file=progress, flush=True)
    with simulator(jobs, partial(prediction, throughput=spec.get("throughput", "steady"))) as run_all:
        for i, (run, s, length, predicted) in enumerate(zip(runs, scenarios, lengths, run_all(scenarios)), 1):
            if progress:
                print(f"kafkasim: {study}: {run['id']} done ({i}/{len(runs)}, {s.length} records)",
                      file=progress, flush=True)
            target = float(s.workload.throughput * s.producers) if s.workload.throughput > 0 else None
            out.rows.append(Row(str(run["id"]), run["label"], run.get("role", "prediction"), run["published"],
                                predicted, target, run.get("verdict"), run.get("x"), length))
    out.checks = [judge(out, c) for c in spec.get("checks", [])]
    return out


def _fmt(v: float | None) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:#.3g}" if abs(v) < 10 else f"{v:.1f}"


def judge(res: StudyResult, check: dict) -> Check:
    kind, name = check["kind"], check["name"]
    if kind == "order":
        metric, rows = check["metric"], [res.row(str(r)) for r in check["runs"]]
        # Each step must go the published way (a published tie counts as a rise).
        way = lambda a, b: math.copysign(1, b.published[metric] - a.published[metric])
        ok = all((b.predicted[metric] - a.predicted[metric]) * way(a, b) > 0 for a, b in zip(rows, rows[1:]))
        parts = [f"{r.id} {_fmt(r.predicted[metric])}" for r in rows]
        # (with each run's spread over time where the source states one: a step smaller than it is a weak trend)
        pub_parts = [_published(r, metric) for r in rows]
        return Check(name, kind, ok, f"{metric} predicted {' → '.join(parts)} (published {' → '.join(pub_parts)})")
    if kind == "argmin":
        metric, rows = check["metric"], [res.row(str(r)) for r in check["runs"]]
        pub = min(rows, key=lambda r: r.published[metric])
        pred = min(rows, key=lambda r: r.predicted[metric])
        values = ", ".join(f"{r.id} {_fmt(r.predicted[metric])}" for r in rows)
        return Check(name, kind, pub.id == pred.id,
                     f"lowest {metric} predicted at {pred.id} ({values}); published at {pub.id}")
    if kind == "factor":
        metric, (a, b) = check["metric"], [res.row(str(r)) for r in check["runs"]]
        ratio = a.predicted[metric] / b.predicted[metric]
        return Check(name, kind, ratio >= check["at_least"],
                     f"{metric} {a.id} ÷ {b.id} predicted {ratio:.1f}× (needs ≥ {check['at_least']}×; published "
                     f"{a.published[metric] / b.published[metric]:.1f}×)")
    row = res.row(str(check["run"]))
    rate = row.predicted["records_per_sec"]
    if kind == "verdict":
        return Check(name, kind, row.predicted["verdict"] == row.expected_verdict,
                     f"{row.id}: predicted {row.predicted['verdict']!r}, stated {row.expected_verdict!r}")
    if kind in ("meets_target", "short_of_target"):
        fraction = check.get("fraction", MET)
        share = rate / row.target
        ok = share >= fraction if kind == "meets_target" else share < fraction
        sign = "≥" if kind == "meets_target" else "<"
        return Check(name, kind, ok, f"{row.id}: {_fmt(rate)} records/s = {share:.0%} of the {_fmt(row.target)} "
                                     f"target (needs {sign} {fraction:.0%}; published "
                                     f"{row.published['records_per_sec'] / row.target:.0%})")
    if kind == "within":
        metric = check.get("metric", "records_per_sec")
        err = row.error(metric)
        if "factor" in check:
            f = check["factor"]
            return Check(name, kind, 1 / f <= 1 + err <= f,
                         f"{row.id}: {metric} {_fmt(row.predicted[metric])} vs {_fmt(row.published[metric])} "
                         f"(×{1 + err:.2f}, needs ×{1 / f:.2g}–{f:g})")
        return Check(name, kind, abs(err) <= check["fraction"],
                     f"{row.id}: {metric} {_fmt(row.predicted[metric])} vs {_fmt(row.published[metric])} "
                     f"({err:+.1%}, needs ±{check['fraction']:.0%})")
    raise ValueError(f"study {res.study}: unknown check kind {kind!r}")


# --- output -------------------------------------------------------------------------------------------------------

def _table(res: StudyResult) -> tuple[list[str], list[list[str]]]:
    lat = res.latency
    head = ["run", "settings", "role", "published rec/s (± over the run)", "predicted rec/s", "error",
            f"published {lat}", f"predicted {lat}", "published us in send()", "predicted us in send()",
            "predicted verdict"]
    body = []
    for r in res.rows:
        err = r.error()
        mark = ""
        ok = res.within_tolerance(r)
        if ok is not None:
            mark = " ✓" if ok else " ✗"
        verdict = r.predicted["verdict"]
        if r.expected_verdict:
            verdict += " ✓" if verdict == r.expected_verdict else f" ✗ (stated: {r.expected_verdict})"
        body.append([r.id, r.label, r.role, _published(r, "records_per_sec"),
                     _fmt(r.predicted["records_per_sec"]), (f"{err:+.1%}" if err is not None else "–") + mark,
                     _with_other_runs(r, lat), _fmt(r.predicted.get(lat)),
                     _fmt(r.published.get("worker_latency_us")), _fmt(r.predicted["worker_latency_us"]), verdict])
    return head, body


def _spread(row: Row, metric: str) -> float:
    """The run's spread over time where the source states one (throughput only), else 0."""
    return row.published.get("spread", 0.0) if metric == "records_per_sec" else 0.0


def _published(row: Row, metric: str) -> str:
    """The published figure, with the run's spread over time where the source states one."""
    spread = _spread(row, metric)
    return _fmt(row.published.get(metric)) + (f" ± {_fmt(spread)}" if spread else "")


def _with_other_runs(row: Row, metric: str) -> str:
    """The published figure, and the same settings' other published runs where the source gives them."""
    others = [_fmt(o[metric]) for o in row.published.get("other_runs", []) if metric in o]
    return _published(row, metric) + (f" (another run: {', '.join(others)})" if others else "")


def _windows(res: StudyResult) -> tuple[list[str], list[list[str]]] | None:
    """Where each published mean latency comes from, by perf-test's 5-s window lines (where the study has them):
    the first window (the start), the later ones, the records after the last line, and the calmest later window;
    beside them the model's own first and calmest later window, from its perf-test lines."""
    rows = [r for r in res.rows if r.published.get("windows")]
    if not rows:
        return None
    lat = res.latency
    head = ["run", f"published {lat}", "first 5 s: avg (max)", "later 5-s windows: avg", "the rest: records, avg",
            "calmest later window", f"predicted {lat}", "predicted first 5 s: avg (max)",
            "predicted calmest later window", "predicted / published calmest"]
    body = []
    for r in rows:
        windows = r.published["windows"]
        counted = sum(w[0] for w in windows)
        rest = (r.length or 0) - counted
        rest_text = "–"
        if r.length and rest >= 0.05 * r.length:
            rest_avg = (r.published[lat] * r.length - sum(w[0] * w[2] for w in windows)) / rest
            rest_text = f"{rest:,}, {_fmt(rest_avg)}"
        calmest = _calmest(windows)
        model = r.predicted.get("windows") or []
        model_calmest = _calmest(model)
        body.append([r.id, _fmt(r.published[lat]), f"{windows[0][2]:g} ({windows[0][3]:g})",  # (as printed)
                     ", ".join(f"{w[2]:g}" for w in windows[1:]) or "–", rest_text,
                     f"{calmest:g}" if calmest is not None else "–", _fmt(r.predicted.get(lat)),
                     f"{_fmt(model[0][2])} ({_fmt(model[0][3])})" if model else "–", _fmt(model_calmest),
                     f"{model_calmest / calmest:.2f}" if calmest and model_calmest is not None else "–"])
    return head, body


def _calmest(windows: list) -> float | None:
    """The lowest mean latency of a run's 5-s windows after the first ([records, records/s, avg, max] each)."""
    return min((w[2] for w in windows[1:]), default=None)


WINDOWS_TITLE = "where the published mean latencies come from (perf-test's 5-s lines)"


def summary_line(res: StudyResult) -> str:
    passed = sum(c.passed for c in res.checks)
    errs = [abs(r.error()) for r in res.rows if r.error() is not None]
    median = sorted(errs)[len(errs) // 2] if errs else math.nan
    line = f"{passed}/{len(res.checks)} trend checks pass; median |throughput error| {median:.1%}"
    if res.tolerance is not None:
        inside = sum(bool(res.within_tolerance(r)) for r in res.rows)
        line += f"; {inside}/{len(res.rows)} runs within ±{res.tolerance:.0%}"
    return line


def _text_table(head: list[str], body: list[list[str]]) -> list[str]:
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    return ["  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in [head, *body]]


def _markdown_table(head: list[str], body: list[list[str]]) -> list[str]:
    return (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
            + ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body])


def text(results: list[StudyResult]) -> str:
    out = []
    for res in results:
        out.append(f"== {res.study}: {res.title}")
        out.append(f"   profile {res.profile}: {res.calibration}")
        out.extend(_text_table(*_table(res)))
        out.append("trend checks:")
        out.extend(f"  {'PASS' if c.passed else 'FAIL'}  {c.name}: {c.detail}" for c in res.checks)
        windows = _windows(res)
        if windows:
            out.append(WINDOWS_TITLE + ":")
            out.extend(_text_table(*windows))
        out.append(summary_line(res))
        out.append("")
    return "\n".join(out)


def markdown(results: list[StudyResult], plots: dict[str, str] | None = None) -> str:
    out = []
    for res in results:
        out.append(f"## {res.study}: {res.title}\n")
        out.append(f"Source: {res.source}. Profile `{res.profile}`: {res.calibration}\n")
        out.extend(_markdown_table(*_table(res)))
        out.append("\n| trend check | result | detail |\n|---|---|---|")
        out.extend(f"| {c.name} | {'pass' if c.passed else '**fail**'} | {c.detail} |" for c in res.checks)
        windows = _windows(res)
        if windows:
            out.append(f"\n{WINDOWS_TITLE.capitalize()}:\n")
            out.extend(_markdown_table(*windows))
        out.append(f"\n{summary_line(res)}.\n")
        if plots and res.study in plots:
            out.append(f"![{res.study}: published vs predicted]({plots[res.study]})\n")
    return "\n".join(out)


def as_json(results: list[StudyResult]) -> str:
    def row(r: Row) -> dict:
        return {"id": r.id, "label": r.label, "role": r.role, "target": r.target, "published": r.published,
                "predicted": r.predicted, "throughput_error": r.error(), "expected_verdict": r.expected_verdict}
    return json.dumps([{"study": res.study, "title": res.title, "profile": res.profile,
                        "calibration": res.calibration, "tolerance": res.tolerance,
                        "rows": [row(r) for r in res.rows],
                        "checks": [c.__dict__ for c in res.checks], "summary": summary_line(res)}
                       for res in results], indent=1, default=float)


def plot(res: StudyResult, path: Path) -> Path:
    """Published vs predicted throughput and latency on the study's own axis (its runs in order, or batch.size)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.8))
    rows = res.rows
    on_axis = [r for r in rows if r.x is not None]
    panels = [("records_per_sec", "throughput, records/s", False), (res.latency, f"{res.latency} (log)", True)]
    for ax, (metric, label, log) in zip(axes, panels):
        if on_axis and metric != "records_per_sec":
            # The study's own axis: batch.size at a fixed rate (the U-shape).
            xs = [r.x for r in on_axis]
            ax.plot(xs, [r.published.get(metric) for r in on_axis], "o-", label="published")
            ax.plot(xs, [r.predicted.get(metric) for r in on_axis], "s--", label="predicted")
            ax.set_xlabel("batch.size, KiB (50k records/s)")
        else:
            xs = range(len(rows))
            pub = [r.published.get(metric, math.nan) for r in rows]
            spread = [_spread(r, metric) for r in rows]
            if any(spread):      # the source's "mean ± spread over the run"
                ax.errorbar(xs, pub, yerr=spread, fmt="o-", capsize=3, label="published (± over the run)")
            else:
                ax.plot(xs, pub, "o-", label="published")
            ax.plot(xs, [r.predicted.get(metric) for r in rows], "s--", label="predicted")
            calibration = [(i, p) for i, (r, p) in enumerate(zip(rows, pub)) if r.role == "calibration"]
            if calibration:
                ax.plot(*zip(*calibration), "o", mfc="none", mec="k", ms=12, label="profile drew on it")
            if metric == "records_per_sec" and res.tolerance:
                lo = [p * (1 - res.tolerance) if p == p else math.nan for p in pub]
                hi = [p * (1 + res.tolerance) if p == p else math.nan for p in pub]
                ax.fill_between(xs, lo, hi, alpha=0.15, label=f"±{res.tolerance:.0%}")
            ax.set_xticks(list(xs))
            ax.set_xticklabels([r.id for r in rows])
            ax.set_xlabel(f"{'experiment' if res.study == 'kontur-2020' else 'run'} (see the table)")
        if log:
            ax.set_yscale("log")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(f"{res.study}: published vs predicted (profile {res.profile})")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def write_reports(results: list[StudyResult], out_dir: Path) -> list[Path]:
    """<study>.png, <study>.md and <study>.json for each study."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for res in results:
        png = plot(res, out_dir / f"{res.study}.png")
        md = out_dir / f"{res.study}.md"
        md.write_text("# Published study reproduced by `kafkasim reproduce`\n\n"
                      + markdown([res], {res.study: png.name}))
        js = out_dir / f"{res.study}.json"
        js.write_text(as_json([res]) + "\n")
        written += [png, md, js]
    return written
