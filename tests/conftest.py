"""Shared helpers for the model's tests.

`scenario(...)` builds a frozen Scenario from flat Kafka-named keys on top of a small base (few records, so every
test is fast); `run(...)` simulates one; `capture(...)` simulates and also hands back the model's internal objects
(the Sender's batches and requests, the accumulators, the cluster), so event-level tests can look inside without
re-wiring the components.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest


from kafkasim.model.records import RangeSegment
from kafkasim.model.scenario import Scenario, from_flat, load_scenario
from kafkasim.model.simulate import Simulation, simulate

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SEED_DATA = Path(__file__).resolve().parent / "data" / "seed-data"   # the studies' seed data, as given

# Small by default: a test that needs more records says so.
BASE: dict[str, Any] = {"workload.records": 2000, "seed": 1}


def scenario(flat: dict[str, Any] | None = None, **overrides: Any):
    """A Scenario from flat keys: scenario({"producer.batch.size": 65536}) or scenario(**{"topic.partitions": 3}).
    Keys not given take BASE, then the model's own defaults."""
    return from_flat({**BASE, **(flat or {}), **overrides}, source="test")


def run(flat=None, **overrides: Any):
    """simulate() a scenario given as flat keys (on top of BASE) or as a Scenario (with flat overrides)."""
    if isinstance(flat, Scenario):
        return simulate(flat.replace(**overrides) if overrides else flat)
    return simulate(scenario(flat, **overrides))


_CACHE: dict = {}


def cached(s):
    """simulate(s), once per session for equal scenarios (direction tests share their reference runs)."""
    key = tuple(sorted(s.flat().items()))
    if key not in _CACHE:
        _CACHE[key] = simulate(s)
    return _CACHE[key]


def example(path: str, **overrides: Any):
    """An example scenario file with flat overrides (e.g. fewer records)."""
    s = load_scenario(EXAMPLES / path)
    return s.replace(**overrides) if overrides else s


@dataclass
class Run:
    """A result together with the model objects it was built from."""
    result: Any
    env: Any
    records: Any            # kafkasim.model.records.Records: per-record send_start / completed / failed
    producers: list         # [(RecordAccumulator, Sender, [WorkerThread], Host)]
    cluster: Any            # kafkasim.model.simulate.Cluster
    consumers: list = ()    # [kafkasim.model.consumer.KafkaConsumer]

    @property
    def senders(self):
        return [producer.sender for producer in self.producers]

    @property
    def batches(self):
        return [b for snd in self.senders for b in snd.batches]

    @property
    def requests(self):
        return [r for snd in self.senders for r in snd.requests]


def capture(s, **overrides: Any) -> Run:
    """simulate(s), keeping the run's components (s: a Scenario or flat keys on top of BASE)."""
    if not isinstance(s, Scenario):
        s = scenario(s, **overrides)
    elif overrides:
        s = s.replace(**overrides)
    sim = Simulation(s)
    result = sim.run()
    return Run(result, sim.env, sim.records, sim.producers, sim.cluster, sim.consumers)


def max_in_flight_per_connection(requests) -> dict[int, int]:
    """The most requests outstanding at once on each connection, from request creation to its handling by the
    Sender (the window InFlightRequests enforces). A response handled at the same instant a new request is created
    frees its slot first, as Sender.runOnce handles responses before it drains."""
    out: dict[int, int] = {}
    by_conn: dict[int, list] = {}
    for r in requests:
        by_conn.setdefault(r.connection.index, []).append(r)
    for index, rs in by_conn.items():
        events = []
        for r in rs:
            events.append((r.created, 1))
            end = r.completed if not math.isnan(r.completed) else math.inf
            events.append((end, -1))
        events.sort(key=lambda e: (e[0], e[1]))      # at equal times, completions (-1) first
        level = peak = 0
        for _, d in events:
            level += d
            peak = max(peak, level)
        out[index] = peak
    return out


def batch_records(batch) -> tuple[np.ndarray, np.ndarray]:
    """A ProducerBatch's record ids and append times, in append order, whichever way the batch stores them
    (segments of id ranges at even spacing or of id/time arrays; or plain lists of arrays)."""
    if hasattr(batch, "segments"):
        ids, times = [], []
        for seg in batch.segments:
            if isinstance(seg, RangeSegment):
                ids.append(np.arange(seg.first_id, seg.first_id + seg.count))
                times.append(seg.first_append + seg.spacing * np.arange(seg.count))
            else:
                ids.append(np.asarray(seg.ids))
                times.append(np.asarray(seg.appends, dtype=float))
    else:
        ids, times = list(batch.ids), list(batch.appends)
    if not ids:
        return np.array([], dtype=np.int64), np.array([])
    return np.concatenate(ids), np.concatenate(times)


def relative(a: float, b: float) -> float:
    """|a − b| relative to b."""
    return abs(a - b) / abs(b)


@pytest.fixture
def tiny_store(tmp_path) -> Path:
    """A run store of four Java runs from the reference data set, whatever it holds now: two repeats of an
    unthrottled configuration marked calibration, one of another marked held-out, one of a throttled one held-out."""
    runs = [r for r in map(json.loads, (ROOT / "validation" / "data" / "local-quiet.jsonl").read_text().splitlines())
            if r.get("ok", True) and r.get("result") and r["client"]["library"] == "java"]
    by_config: dict[str, list[dict]] = {}
    for r in runs:
        by_config.setdefault(r["config_id"], []).append(r)
    throttled = sorted(c for c, rs in by_config.items() if float(rs[0]["scenario"]["workload.throughput"]) > 0)
    repeated = sorted(c for c, rs in by_config.items() if c not in throttled and len(rs) >= 2)
    other = sorted(c for c in by_config if c not in throttled and c != repeated[0])
    picks = [(repeated[0], "calibration", 2), (other[0], "held-out", 1), (throttled[0], "held-out", 1)]
    path = tmp_path / "tiny.jsonl"
    path.write_text("".join(json.dumps({**r, "role": role}) + "\n"
                            for config, role, n in picks for r in by_config[config][:n]))
    return path


@pytest.fixture
def tmp_scenario(tmp_path):
    """Write a scenario file and return its path: tmp_scenario("producer: {acks: 1}\\n")."""
    def write(text: str, name: str = "s.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path
    return write


__all__ = ["scenario", "run", "capture", "cached", "example", "Run", "max_in_flight_per_connection", "batch_records",
           "relative", "np",
           "BASE", "ROOT", "EXAMPLES", "SEED_DATA"]
