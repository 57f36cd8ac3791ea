"""`kafkasim validate`: fit on the calibration configurations, predict the held-out ones, and report the error
beside the run-to-run noise of the same measurements (Markdown + PNG plots)."""
from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Callable, TextIO

import numpy as np

from kafkasim.calibration.fit import QUIET_CORES, Fit, fit, job_count, scenario_for, simulated_records, simulator
from kafkasim.calibration.profile import fit_record, machine, profile_from_fit, write_profile
from kafkasim.calibration.runs import Observation, load_observations
from kafkasim.model.hardware import load_profile

# The factors the matrix varies, as (label, scenario key, how to show a value).
FACTORS = [
    ("batch.size", "producer.batch.size", lambda v: f"{int(v) // 1024} KiB"),
    ("linger.ms", "producer.linger.ms", lambda v: f"{float(v):g}"),
    ("compression", "producer.compression.type", str),
    ("acks", "producer.acks", str),
    ("partitions", "topic.partitions", str),
    ("brokers", "cluster.brokers", str),
    ("added RTT ms", "network.rtt_ms", lambda v: f"{float(v):g}"),
    ("bandwidth cap Mbit", "network.bandwidth_mbit", lambda v: f"{float(v):g}" if float(v) else "none"),
    ("throttled", "workload.throughput", lambda v: "yes" if float(v) > 0 else "no"),
]


@dataclass
class Row:
    obs: Observation
    role: str
    pred: dict

    def ratio(self, target: str) -> float | None:
        m, p = self.obs.measured.get(target), self.pred.get(target)
        return p / m if m and p is not None and m > 0 else None


def roles_from_matrix(path: str | Path | None) -> dict[tuple[str, str], str]:
    """(config id, client) -> role, as the matrix file splits them; {} without a matrix."""
    if not path:
        return {}
    from kafkasim.validation.matrix import Matrix
    return {(c.config_id, c.client): c.role for c in Matrix(Path(path)).configs}


def role_of(obs: Observation, roles: dict[tuple[str, str], str]) -> str:
    """The matrix's role for this configuration and client, else the role recorded with the runs."""
    return roles.get((obs.config_id, obs.library), obs.role)


def predict_all(observations: list[Observation], profile: str, max_records: int | None,
                progress: TextIO | Callable[[int, int, Observation], None] | None = None,
                jobs: int | None = None) -> list[dict]:
    """The model's figures for each configuration, `jobs` at a time. `progress` is a text stream (a line per
    configuration; standard error by default) or a callable(done, total, observation) called before each lot of
    predictions."""
    step = progress if callable(progress) else partial(_print_step, progress or sys.stderr)
    jobs = job_count(jobs)
    out = []
    with simulator(jobs) as run:
        for i in range(0, len(observations), jobs):
            lot = observations[i:i + jobs]
            for j, obs in enumerate(lot):
                step(i + j, len(observations), obs)
            out.extend(run([scenario_for(obs, profile, {}, max_records) for obs in lot]))
    return out


def _print_step(stream: TextIO, done: int, total: int, obs: Observation) -> None:
    print(f"  predicting {done + 1}/{total}: {obs.config_id} ({obs.library})", file=stream, flush=True)


def run_noise(obs: Observation) -> float:
    """Mean |run − median| / median over a configuration's repeats: how far single runs stray from the figure a
    perfect model would predict."""
    values = [r["result"]["records_per_sec"] for r in obs.runs if r.get("result")]
    median = float(np.median(values))
    return float(np.mean([abs(v - median) / median for v in values]))


def setup(obs: Observation) -> str:
    """Which kind of set-up a configuration ran on: the model fits them differently well."""
    sc = obs.scenario
    if int(sc.get("cluster.brokers", 1)) > 1:
        return "3 brokers on the same 2 cores"
    if obs.emulated:
        return "emulated network (proxy)"
    return "1 broker, loopback"


def _mdape(rows: list[Row]) -> float:
    ape = [abs(r.ratio("records_per_sec") - 1) for r in rows if r.ratio("records_per_sec") is not None]
    return float(np.median(ape)) if ape else math.nan


def summarise(rows: list[Row]) -> dict:
    held = [r for r in rows if r.role == "held-out"]
    noise = [run_noise(r.obs) for r in held]
    spread = [r.obs.spread.get("records_per_sec", 0.0) for r in held]
    throttled = [r for r in held if r.obs.throttled]
    # A throttled run sits at its target by design: its throughput says nothing, its latency does.
    free = [r for r in held if not r.obs.throttled]
    free_errors = [r.ratio("records_per_sec") - 1 for r in free if r.ratio("records_per_sec") is not None]
    worst = max(free_errors, key=abs) if free_errors else math.nan
    return {
        "unthrottled_configs": len(free),
        "unthrottled_mdape": _mdape(free),
        "unthrottled_worst": float(worst),
        "unthrottled_worst_config": next((r.obs.config_id for r in free
                                          if r.ratio("records_per_sec") is not None
                                          and r.ratio("records_per_sec") - 1 == worst), None),
        "unthrottled_noise_floor": float(np.median([run_noise(r.obs) for r in free])) if free else math.nan,
        "held_out_configs": len(held),
        "calibration_configs": len(rows) - len(held),
        "throughput_mdape": _mdape(held),
        "throughput_mdape_by_setup": {k: (_mdape([r for r in held if setup(r.obs) == k]),
                                          sum(setup(r.obs) == k for r in held))
                                      for k in sorted({setup(r.obs) for r in held})},
        "noise_floor_mdape": float(np.median(noise)) if noise else math.nan,
        "noise_median_range": float(np.median(spread)) if spread else math.nan,
        "p50_ratio_median": _median_ratio(held, "p50_ms"),
        "p99_ratio_median": _median_ratio(held, "p99_ms"),
        # where a consumer tailed the producer: its end-to-end latency
        "e2e_p50_ratio_median": _median_ratio(held, "e2e_p50_ms"),
        "e2e_p99_ratio_median": _median_ratio(held, "e2e_p99_ms"),
        # where the store has it (Java runs measured since 2026-11-22): the Sender thread's CPU, every configuration
        "sender_cpu_ratio_median": _median_ratio(rows, "sender_cpu_s"),
        # ... and the worker's inside perf-test's window (runs measured since 2026-11-27)
        "worker_cpu_ratio_median": _median_ratio(rows, "worker_cpu_s"),
        "throttled_p99_ratios": [round(r.ratio("p99_ms"), 3) for r in throttled if r.ratio("p99_ms") is not None],
        # the same figure for each single run against its configuration's median: how far p99 itself repeats
        "throttled_p99_run_ratios": [_run_ratios(r.obs, "p99_ms") for r in throttled
                                     if r.ratio("p99_ms") is not None],
    }


def shortened(observations: list[Observation], max_records: int | None) -> dict:
    """The configurations measured with more records than the model simulates of them (scenario_for's cap): a shorter
    run, more of it the JVM's warm-up, so their predictions run slower than the measured run would."""
    cut = [o for o in observations if simulated_records(o, max_records) < int(o.scenario.get("workload.records", 0))]
    if not cut:
        return {}
    return {"shortened_configs": [o.config_id for o in cut],
            "records_simulated": simulated_records(cut[0], max_records)}


def shortened_line(summary: dict) -> str:
    """What shortened() found, in a line; "" if every run was simulated whole."""
    ids, n = summary.get("shortened_configs"), summary.get("records_simulated", 0)
    return "" if not ids else (f"{len(ids)} configuration(s) measured with more than {n:,} records were simulated "
                               f"with {n:,} (a shorter run, more of it the JVM's warm-up): {', '.join(ids)}; "
                               f"--max-records simulates them whole.")


def remeasured(rows: list[Row], again: list[Observation]) -> dict:
    """The held-out configurations measured again in another session (another run store, hours or days later):
    how far that session's figure lies from the reference one, which is noise a model fitted to one session
    cannot beat, and the model's error against that session."""
    by_id = {o.config_id: o for o in again if o.measured.get("records_per_sec")}
    pairs = [(r, by_id[r.obs.config_id]) for r in rows if r.role == "held-out" and r.obs.config_id in by_id
             and r.obs.measured.get("records_per_sec") and r.pred.get("records_per_sec")]
    if not pairs:
        return {}
    drift = [abs(o.measured["records_per_sec"] / r.obs.measured["records_per_sec"] - 1) for r, o in pairs]
    error = [abs(r.pred["records_per_sec"] / o.measured["records_per_sec"] - 1) for r, o in pairs]
    return {"remeasured_configs": len(pairs), "session_noise_mdape": float(np.median(drift)),
            "throughput_mdape_remeasured": float(np.median(error)),
            "remeasured_rate": {r.obs.config_id: o.measured["records_per_sec"] for r, o in pairs}}


def _run_ratios(obs, target: str) -> tuple[float, float]:
    """The lowest and highest single run's `target` over the median of the runs."""
    values, median = obs.run_values(target), obs.measured[target]
    return round(min(values) / median, 3), round(max(values) / median, 3)


def _median_ratio(rows: list[Row], target: str) -> float:
    ratios = [r.ratio(target) for r in rows if r.ratio(target) is not None]
    return float(np.median(ratios)) if ratios else math.nan


def plots(rows: list[Row], out_dir: Path, stem: str) -> list[str]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = []
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8))
    for ax, target, label in ((axes[0], "records_per_sec", "throughput, records/s"),
                              (axes[1], "p99_ms", "p99 latency, ms")):
        for role, marker in (("calibration", "o"), ("held-out", "^")):
            pts = [(r.obs.measured[target], r.pred[target]) for r in rows
                   if r.role == role and r.obs.measured.get(target) and r.pred.get(target)]
            if pts:
                m, p = zip(*pts)
                ax.scatter(m, p, marker=marker, label=role, alpha=0.8)
        lo = min([v for r in rows for v in (r.obs.measured.get(target), r.pred.get(target)) if v] or [1])
        hi = max([v for r in rows for v in (r.obs.measured.get(target), r.pred.get(target)) if v] or [10])
        ax.plot([lo, hi], [lo, hi], "k--", lw=1, label="y = x")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(f"measured {label}")
        ax.set_ylabel(f"predicted {label}")
        ax.legend()
    names.append(_save(fig, out_dir, f"{stem}-predicted-vs-measured.png",
                       f"{stem}: predicted vs measured (median of repeats)"))

    fig, axes = plt.subplots(3, 3, figsize=(12, 9))
    for ax, (label, groups) in zip(axes.flat, error_by_factor(rows).items()):
        keys = list(groups)
        if not keys:               # no held-out run varies this factor
            ax.set_axis_off()
            continue
        ax.boxplot([groups[k] for k in keys], tick_labels=keys)
        ax.axhline(0, color="k", lw=0.8)
        ax.set_title(label)
        ax.set_ylabel("throughput error %")
    names.append(_save(fig, out_dir, f"{stem}-error-by-factor.png", f"{stem}: held-out throughput error by factor"))
    return names


def error_by_factor(rows: list[Row]) -> dict[str, dict[str, list[float]]]:
    """Held-out throughput error in % (predicted / measured − 1), per factor of FACTORS and per value it takes,
    the values in numeric order where they start with a number (16 KiB, 64 KiB, 256 KiB)."""
    held = [r for r in rows if r.role == "held-out" and r.ratio("records_per_sec") is not None]
    out: dict[str, dict[str, list[float]]] = {}
    for label, key, show in FACTORS:
        groups: dict[str, list[float]] = {}
        for r in held:
            groups.setdefault(show(r.obs.scenario.get(key, 0)), []).append(100 * (r.ratio("records_per_sec") - 1))
        out[label] = {value: groups[value] for value in sorted(groups, key=_value_order)}
    return out


def _value_order(value: str) -> tuple:
    head = value.split()[0] if value.split() else value
    try:
        return (0, float(head), value)
    except ValueError:
        return (1, 0.0, value)


def _save(fig, out_dir: Path, name: str, title: str) -> str:
    import matplotlib.pyplot as plt

    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name


def _origin(profile: str, client: str) -> str:
    """Where a profile's costs come from: the host `calibrate host` measured them on, or the machine a fit ran on."""
    data = load_profile(profile)
    host = data.get("host") or {}
    if host.get("speed_score"):
        when = (fit_record(profile, client).get("measured_at") or "")[:16].replace("T", " ")
        return (f"measured by `kafkasim calibrate host` on {host.get('cpu', 'an unnamed CPU')}, speed "
                f"{float(host['speed_score']):.0f}{f', {when}' if when else ''}")
    return f"fitted on {(fit_record(profile, client).get('machine') or {}).get('cpu') or 'an unrecorded machine'}"


def markdown(stem: str, runs: str, fitted: Fit | None, summary: dict, rows: list[Row], images: list[str],
             again: dict | None = None, again_runs: str | None = None, client: str = "java",
             profile: str = "", max_records: int | None = None) -> str:
    """The report; `fitted` None: a profile checked as it is (`kafkasim validate --no-fit`), every run held out."""
    s, again = summary, again or {}
    again_rate = again.get("remeasured_rate", {})
    origin = None if fitted else _origin(profile, client)
    how = (f"Fitted on {s['calibration_configs']} calibration configurations ({fitted.evaluations} model evaluations, "
           f"{fitted.seconds:.0f} s), checked on {s['held_out_configs']} held-out configurations. Regenerate with "
           f"`kafkasim validate`." if fitted else
           f"Profile `{profile}` as it is ({origin}), not fitted to these runs: "
           f"checked on all {s['held_out_configs']} configurations (this machine: {machine()['cpu']}). "
           f"Regenerate with `kafkasim validate {runs} --client {client} --no-fit --base-profile {profile}"
           f"{f' --max-records {max_records}' if max_records else ''}`.")
    lines = [
        f"# Fidelity report: {stem}",
        "",
        f"Run store `{runs}`, client {client}. {how} {shortened_line(s)}".rstrip(),
        "",
        "| figure | value |",
        "|---|---|",
        f"| held-out throughput, median absolute % error | {100 * s['throughput_mdape']:.1f} % |",
        *[f"| … on {kind} ({n} configs) | {100 * err:.1f} % |"
          for kind, (err, n) in s["throughput_mdape_by_setup"].items()],
        f"| noise floor: runs' mean absolute deviation from their config's median (median over held-out configs) | "
        f"{100 * s['noise_floor_mdape']:.1f} % |",
        f"| run-to-run range (max − min) / median, median over held-out configs | "
        f"{100 * s['noise_median_range']:.1f} % |",
        *([f"| another session (`{again_runs}`, {again['remeasured_configs']} held-out configs measured again): "
           f"its rec/s against the reference median, median absolute % difference | "
           f"{100 * again['session_noise_mdape']:.1f} % |",
           f"| … and the model's held-out throughput error against that session | "
           f"{100 * again['throughput_mdape_remeasured']:.1f} % |"] if again else []),
        f"| held-out p50 latency, median predicted / measured | {s['p50_ratio_median']:.2f} |",
        f"| held-out p99 latency, median predicted / measured | {s['p99_ratio_median']:.2f} |",
        f"| throttled held-out runs, p99 predicted / measured | "
        f"{', '.join(str(x) for x in s['throttled_p99_ratios']) or '—'} |",
        f"| … the same runs' own p99, lowest – highest single run / their median | "
        f"{', '.join(f'{lo}–{hi}' for lo, hi in s['throttled_p99_run_ratios']) or '—'} |",
        *([f"| Sender thread's CPU-seconds, median predicted / measured (all configs) | "
            f"{s['sender_cpu_ratio_median']:.2f} |"] if not math.isnan(s["sender_cpu_ratio_median"]) else []),
        *([f"| worker thread's CPU-seconds in perf-test's window, median predicted / measured (all configs) | "
            f"{s['worker_cpu_ratio_median']:.2f} |"] if not math.isnan(s.get("worker_cpu_ratio_median", math.nan))
          else []),
    ]
    if fitted:
        lines += ["", "Fitted parameters (× / ÷ is one standard deviation):", "",
                  "| parameter | value | × / ÷ |", "|---|---|---|"]
        lines += [f"| {k} | {v:.4g} | {math.exp(fitted.sigma_log[k]):.2f} |" for k, v in fitted.values.items()]
        lines += [f"| {k} (measured directly) | {v:.3g} | |" for k, v in fitted.fixed.items()]
    lines += ["", "Other load is the CPU other processes took during the runs (median, cores; – where not recorded): "
              "predictions include it when it is at least " + f"{QUIET_CORES} cores.",
              "", "| config | role | measured rec/s | predicted | error | run range | measured p50 | predicted p50 "
              "| measured p99 | predicted p99 | other load |" + (" another session's rec/s |" if again_rate else ""),
              "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if again_rate else "")]
    for r in rows:
        m, p = r.obs.measured.get("records_per_sec", 0), r.pred.get("records_per_sec", 0)
        other = "–" if r.obs.background_cores is None else f"{r.obs.background_cores:.2f}"
        lines.append(f"| {r.obs.config_id} | {r.role} | {m:,.0f} | {p:,.0f} | {100 * (p / m - 1):+.0f} % | "
                     f"{100 * r.obs.spread.get('records_per_sec', 0):.0f} % | {r.obs.measured.get('p50_ms', 0):,.0f} | "
                     f"{r.pred.get('p50_ms', 0):,.0f} | {r.obs.measured.get('p99_ms', 0):,.0f} | "
                     f"{r.pred.get('p99_ms', 0):,.0f} | {other} |"
                     + (f" {again_rate[r.obs.config_id]:,.0f} |" if r.obs.config_id in again_rate
                        else " |" if again_rate else ""))
    timed = [r for r in rows if "worker_latency_us" in r.obs.measured]
    if timed:
        lines += ["", "The worker threads' mean time inside send() (µs), where the runs measured it:", "",
                  "| config | measured (runs' range) | predicted |", "|---|---|---|"]
        lines += [f"| {r.obs.config_id} | {r.obs.measured['worker_latency_us']:.2f} "
                  f"({100 * r.obs.spread.get('worker_latency_us', 0):.0f} %) | {r.pred['worker_latency_us']:.2f} |"
                  for r in timed]
    tailed = [r for r in rows if "e2e_p50_ms" in r.obs.measured]
    if tailed:
        lines += ["", "End-to-end latency of a consumer tailing the producer (ms, poll() less the record's CreateTime; "
                  f"median ratios p50 {s['e2e_p50_ratio_median']:.2f}, p99 {s['e2e_p99_ratio_median']:.2f}):", "",
                  "| config | measured p50 | predicted p50 | measured p99 | predicted p99 |", "|---|---|---|---|---|"]
        lines += [f"| {r.obs.config_id} | {r.obs.measured['e2e_p50_ms']:,.0f} | {r.pred.get('e2e_p50_ms', 0):,.1f} | "
                  f"{r.obs.measured['e2e_p99_ms']:,.0f} | {r.pred.get('e2e_p99_ms', 0):,.1f} |" for r in tailed]
    lines += [""] + [f"![{name}]({name})" for name in images] + [""]
    return "\n".join(lines)


def validate(runs: str, matrix: str | None, client: str, base_profile: str, out_dir: str | Path,
             profile_out: str | Path | None, max_records: int | None, max_evaluations: int, progress=None,
             jobs: int | None = None, remeasured_runs: str | None = None, fit_first: bool = True,
             parameters: list[str] | None = None) -> dict:
    """Fit `base_profile` on the calibration runs and check it on the held-out ones; or, without `fit_first`,
    check `base_profile` as it is on every run."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    observations = load_observations(runs, library=client)
    if not observations:
        raise ValueError(f"no {client} runs in {runs}")
    again_obs = load_observations(remeasured_runs, library=client) if remeasured_runs else []
    roles = roles_from_matrix(matrix) if fit_first else {}
    # (a profile checked as it is: the report is about that profile, beside any fit of these runs)
    stem = f"{Path(runs).stem}-{client}" + ("" if fit_first else f"-{Path(base_profile).stem}")
    report = out_dir / f"{stem}.md"
    if fit_first:
        calibration = [o for o in observations if role_of(o, roles) == "calibration"]
        if not calibration:
            raise ValueError(f"no calibration configurations for {client} in {runs}")
        fitted = fit(calibration, base_profile, parameters, max_records=max_records, max_evaluations=max_evaluations,
                     progress=progress, jobs=jobs)
        profile_path = Path(profile_out) if profile_out else out_dir / f"{stem}-profile.yaml"
        fitted_profile = profile_from_fit(fitted, profile_path.stem, str(runs), [o.config_id for o in calibration])
        write_profile(fitted_profile, profile_path)
        checked = str(profile_path)
    else:
        fitted, checked = None, base_profile
    preds = predict_all(observations, checked, max_records, progress, jobs)
    rows = [Row(o, role_of(o, roles) if fit_first else "held-out", p) for o, p in zip(observations, preds)]
    summary = {**summarise(rows), **shortened(observations, max_records)}
    again = remeasured(rows, again_obs)
    if fitted:
        # The profile carries how it did, so that `kafkasim predict` can say how far to trust it.
        fitted_profile["provenance"][client]["held_out"] = {
            "configs": summary["held_out_configs"], "report": str(report),
            "throughput_mdape": round(summary["throughput_mdape"], 4),
            "noise_floor": round(summary["noise_floor_mdape"], 4),
            **({"another_session": round(again["session_noise_mdape"], 4)} if again else {})}
        write_profile(fitted_profile, profile_path)
    images = plots(rows, out_dir, stem)
    report.write_text(markdown(stem, str(runs), fitted, summary, rows, images, again, remeasured_runs, client,
                               base_profile, max_records))
    return {"report": str(report), "profile": checked, **summary,
            **{k: v for k, v in again.items() if k != "remeasured_rate"}}

