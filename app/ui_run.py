"""Running the model from the app: the whole scenario by default, as `kafkasim predict` runs it (an optional record
cap for a quicker, rougher look), with progress on a long run, and a cache keyed on the resolved scenario (its flat
`values` tuple), so moving a widget back and forth never simulates twice."""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import streamlit as st

from kafkasim.model.results import Result
from kafkasim.model.scenario import Scenario, from_flat
from kafkasim.model.simulate import simulate

# Records per producer the app simulates by default (0: all of them, as predict does: a capped run is mostly its cold
# start, and its figures differ), and, under a cap, the simulated seconds it aims for when throttled.
DEFAULT_CAP = 0
DEFAULT_SIM_SECONDS = 3.0
MIN_RECORDS = 2_000


@dataclass(frozen=True)
class Run:
    result: Result
    scenario: Scenario           # what was simulated (capped)
    seconds: float               # wall time of this call (≈ 0 from the cache)
    cached: bool
    note: str | None             # why fewer records than the scenario asks for


def capped(s: Scenario, cap: int, sim_seconds: float = DEFAULT_SIM_SECONDS) -> tuple[Scenario, str | None]:
    """The scenario with at most `cap` records per producer (and, if throttled, about `sim_seconds` of run);
    warm-up shrinks in proportion. cap <= 0 means no cap."""
    w = s.workload
    if cap <= 0 or w.records == 0:
        return s, None
    limit = cap
    if w.throughput > 0 and sim_seconds > 0:
        limit = min(limit, max(MIN_RECORDS, int(w.throughput * sim_seconds)))
    if w.records <= limit:
        return s, None
    short = s.shortened(limit)
    note = (f"Simulating {limit:,} of the scenario's {w.records:,} records per producer (warm-up "
            f"{short.workload.warmup_records:,}): quicker, but mostly the run's start, not what `kafkasim predict` "
            f"gives; set the record cap to 0 for the full run.")
    return short, note


# Results by the resolved flat values (hashable, and equal for equal scenarios), most recent last; results are
# read-only. One cache for every session. Not st.cache_resource: it would record the progress bar's updates and
# replay them on a hit, into a bar the calling page may not have.
_CACHE: OrderedDict[tuple, Result] = OrderedDict()
_CACHE_ENTRIES = 64
_CACHE_LOCK = threading.Lock()


def _simulate(values: tuple, progress=None) -> Result:
    with _CACHE_LOCK:
        if values in _CACHE:
            _CACHE.move_to_end(values)
            return _CACHE[values]
    result = simulate(from_flat(dict(values), source="app"), progress=progress)
    with _CACHE_LOCK:
        _CACHE[values] = result
        while len(_CACHE) > _CACHE_ENTRIES:
            _CACHE.popitem(last=False)
    return result


def progress_bar(label: str):
    """A progress bar that a long simulation fills (simulate reports after a few seconds), and its callback."""
    bar = st.empty()

    def report(p: dict) -> None:
        share = p["records"] / p["of"] if p["of"] else 0.0
        eta = f", about {p['eta_seconds']:.0f} s to go" if p.get("eta_seconds") is not None else ""
        bar.progress(min(1.0, share), text=f"{label}: {p['records']:,} of {p['of']:,} records, "
                                           f"{p['simulated_seconds']:.2f} simulated s{eta}")
    return bar, report


def run(s: Scenario, cap: int = DEFAULT_CAP, progress=None) -> Run:
    """Simulate s (under the record cap, if any); progress(dict) hears how far a long run is."""
    sim, note = capped(s, cap)
    start = time.perf_counter()
    result = _simulate(sim.values, progress)
    seconds = time.perf_counter() - start
    return Run(result, sim, seconds, cached=seconds < 0.5 * max(result.runtime_seconds, 1e-3), note=note)
