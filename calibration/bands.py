"""Prediction bands: re-run a scenario with its profile's fitted parameters drawn from their uncertainty."""
from __future__ import annotations

import numpy as np

from kafkasim.calibration.fit import MAX_SIGMA
from kafkasim.calibration.profile import fit_record, machine
from kafkasim.model.hardware import load_profile, profile_names
from kafkasim.model.scenario import Scenario
from kafkasim.model.simulate import simulate

FIGURES = ("records_per_sec", "p50_ms", "p99_ms")


def uncertainty(scenario: Scenario) -> dict[str, float]:
    """σ of log(value) per fitted parameter, for the scenario's client, or {} if its profile has none."""
    profile = load_profile(scenario.hardware.profile)
    sigma = (profile.get("uncertainty") or {}).get(scenario.client.library) or {}
    return {k: min(float(s), MAX_SIGMA) for k, s in sigma.items()}


def held_out_line(scenario: Scenario) -> str | None:
    """How the scenario's profile did on held-out runs for its client, as a line to show under a prediction
    (`kafkasim validate` records it in the profile), or None."""
    record = fit_record(scenario.hardware.profile, scenario.client.library)
    checked = record.get("held_out")
    if not checked:
        return None
    session = f", another session's {100 * checked['another_session']:.1f} %" if "another_session" in checked else ""
    # The figures hold for the machine the profile was fitted on; a profile of "this machine" may meet another.
    fitted_on = (record.get("machine") or {}).get("cpu")
    here = machine()["cpu"]
    elsewhere = ""
    if fitted_on and fitted_on != here:
        elsewhere = f"; fitted on {fitted_on}, not on this machine's {here}"
        mine = [name for name in profile_names() if (fit_record(name, scenario.client.library).get("machine")
                                                    or {}).get("cpu") == here]
        elsewhere += f": {', '.join(mine)} {'was' if len(mine) == 1 else 'were'} fitted on it" if mine else ""
    return (f"profile {scenario.hardware.profile} on {checked['configs']} held-out configurations: throughput a "
            f"median {100 * checked['throughput_mdape']:.1f} % off (repeats {100 * checked['noise_floor']:.1f} % "
            f"apart{session}; {checked['report']}{elsewhere})")


def band(scenario: Scenario, point: dict | None = None, draws: int = 8, level: float = 0.9,
         max_records: int = 50_000) -> dict | None:
    """Low and high of throughput, p50 and p99 over `draws` parameter sets drawn from the fit's log-normal
    uncertainty (central `level` of the draws); None when the profile carries no uncertainty.

    A run longer than `max_records` is drawn at that length, and each draw is scaled by the full-length
    prediction (`point`: its perf_test figures) over the same short run's: a cold producer's first records are
    slower than the whole run, and the band is about the parameters, not about the run's length."""
    sigma = uncertainty(scenario)
    if not sigma:
        return None
    rng = np.random.default_rng(np.random.SeedSequence(scenario.seed).spawn(66)[-1])
    records = min(scenario.workload.records, max_records)
    base = scenario.shortened(records) if records < scenario.workload.records else scenario
    scale = dict.fromkeys(FIGURES, 1.0)
    if point is not None and base.workload.records < scenario.workload.records:
        short = simulate(base).perf_test
        scale = {f: point[f] / short[f] if short[f] > 0 else 1.0 for f in FIGURES}
    values = {f: [] for f in FIGURES}
    for _ in range(draws):
        changed = {f"hardware.{k}": float(scenario.hardware[k] * np.exp(rng.normal(0.0, s)))
                   for k, s in sigma.items()}
        perf = simulate(base.replace(**changed)).perf_test
        drawn = {f: perf[f] * scale[f] for f in FIGURES}
        # one draw is one whole result: its percentiles stay in order after each is scaled
        if "p50_ms" in drawn and "p99_ms" in drawn:
            drawn["p99_ms"] = max(drawn["p99_ms"], drawn["p50_ms"])
        for f in FIGURES:
            values[f].append(drawn[f])
    tail = (1 - level) / 2 * 100
    ends = {f: (float(np.percentile(v, tail)), float(np.percentile(v, 100 - tail))) for f, v in values.items()}
    if point is not None:          # the point prediction always inside its band
        ends = {f: (min(lo, point[f]), max(hi, point[f])) for f, (lo, hi) in ends.items()}
    return ends | {"draws": draws, "level": level}
