"""Running the model from the app: a record cap so a prediction refreshes in about a second, and a cache keyed on
the resolved scenario (its flat `values` tuple), so moving a widget back and forth never simulates twice."""
from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from kafkasim.model.results import Result
from kafkasim.model.scenario import Scenario, from_flat
from kafkasim.model.simulate import simulate

# Records per producer the app simulates by default, and the simulated seconds it aims for when throttled: the
# model's cost grows with both (a throttled run at 2k records/s spends most of its events sleeping).
DEFAULT_CAP = 20_000
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
    warmup = w.warmup_records * limit // w.records
    note = (f"Simulating {limit:,} of the scenario's {w.records:,} records per producer (warm-up {warmup:,}) so the "
            f"prediction refreshes quickly; set the record cap to 0 in the sidebar for the full run.")
    return s.replace(**{"workload.records": limit, "workload.warmup_records": warmup}), note


@st.cache_resource(max_entries=64, show_spinner=False)
def _simulate(values: tuple) -> Result:
    # Cached on the resolved flat values (hashable, and equal for equal scenarios); results are read-only.
    return simulate(from_flat(dict(values), source="app"))


def run(s: Scenario, cap: int = DEFAULT_CAP) -> Run:
    sim, note = capped(s, cap)
    start = time.perf_counter()
    result = _simulate(sim.values)
    seconds = time.perf_counter() - start
    return Run(result, sim, seconds, cached=seconds < 0.5 * max(result.runtime_seconds, 1e-3), note=note)
