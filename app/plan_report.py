"""What the planner is asked (Request, Space), each candidate it judges (Evaluation), and its answer (Plan: the
plan, its alternatives and sensitivity, as text and as JSON)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Sequence

from kafkasim.model.bounds import Settings, Shape, short


@dataclass
class Space:
    """What the planner may choose from."""
    brokers: Sequence[int] = tuple(range(1, 41))
    producers: Sequence[int] = tuple(range(1, 65))
    threads: Sequence[int] = (1, 2)
    partitions_per_broker: Sequence[int] = (1, 2, 4, 8)
    batch_sizes: Sequence[int] = (16384, 65536, 262144, 1048576)
    linger_ms: Sequence[float] = (0.0, 5.0, 20.0)
    compressions: Sequence[str] = ("none", "lz4", "zstd")
    max_in_flights: Sequence[int] = (1, 5)
    tries_per_shape: int = 1      # settings simulated per shape (most promising first) before it fails

    def settings(self) -> list[Settings]:
        return [Settings(b, l, c, m) for b, l, c, m in
                itertools.product(self.batch_sizes, self.linger_ms, self.compressions, self.max_in_flights)]

    def size(self) -> int:
        return (len(self.brokers) * len(self.producers) * len(self.threads) * len(self.partitions_per_broker)
                * len(self.settings()))


@dataclass
class Request:
    target_rps: float
    record_size: int
    record_size_max: int = 0
    acks: str = "all"
    rf: int = 3
    p99_ms: float | None = None
    headroom: float = 0.30
    profile: str = "generic-server"
    client_version: str = "3.9"
    payload: str = "random-letters"
    overrides: dict = field(default_factory=dict)
    sim_seconds: float | None = None
    min_records: int = 40_000
    consumer_groups: int = 0          # groups reading every record beside the producers (tailing)
    catch_up: tuple[float, float] | None = None   # one more group: (records behind, seconds to catch up)

    @property
    def planned_rps(self) -> float:
        return self.target_rps * (1.0 + self.headroom)


# ---------------------------------------------------------------------------------------------------------------
# Candidates, evaluation and the verdict on one candidate

@dataclass
class Evaluation:
    shape: Shape
    settings: Settings
    bound_name: str
    bound: float
    row: dict | None = None
    passed: bool = False
    reason: str = ""
    capacity: float = 0.0
    busiest: str = ""

    def summary(self) -> dict[str, Any]:
        r = self.row or {}
        return {"brokers": self.shape.brokers, "partitions": self.shape.partitions,
                "producers": self.shape.producers, "threads": self.shape.threads,
                "settings": self.settings.flat(), "meets_target": self.passed, "reason": self.reason,
                "analytic_bound_rps": round(self.bound), "analytic_bound": self.bound_name,
                "offered_rps": r.get("offered_rps"), "delivered_rps": r.get("delivered_rps"),
                "records_per_sec": r.get("records_per_sec"), "avg_latency_ms": r.get("avg_latency_ms"),
                "p50_ms": r.get("p50_ms"), "p99_ms": r.get("p99_ms"),
                "estimated_capacity_rps": round(self.capacity), "busiest_resource": self.busiest,
                "busiest_utilisation": r.get("busiest_utilisation"),
                "bottleneck": r.get("bottleneck"), "bottleneck_utilisation": r.get("bottleneck_utilisation")}


@dataclass
class Plan:
    req: Request
    space: Space
    best: Evaluation | None
    alternatives: list[Evaluation]
    sensitivity: list[dict]
    evaluations: list[Evaluation]
    excluded: dict[int, str]
    pruned: int
    search_seconds: float
    wall_seconds: float
    sim_seconds: float
    gave_up: str = ""

    def to_json(self) -> dict[str, Any]:
        r = self.req
        return {
            "target_rps": r.target_rps, "planned_rps": r.planned_rps, "headroom": r.headroom,
            "record_size": r.record_size, "record_size_max": r.record_size_max, "acks": r.acks,
            "replication_factor": r.rf, "p99_ms": r.p99_ms, "profile": r.profile,
            "consumer_groups": r.consumer_groups,
            "catch_up": {"records": r.catch_up[0], "seconds": r.catch_up[1]} if r.catch_up else None,
            "simulated_seconds_per_evaluation": self.sim_seconds,
            "plan": self.best.summary() if self.best else None,
            "alternatives": [a.summary() for a in self.alternatives],
            "sensitivity": self.sensitivity,
            "fewer_brokers_excluded": {str(k): v for k, v in self.excluded.items()
                                       if self.best is None or k < self.best.shape.brokers},
            "search": {"evaluations": len(self.evaluations), "pruned_analytically": self.pruned,
                       "stopped": self.gave_up or None,
                       "search_seconds": self.search_seconds, "wall_seconds": self.wall_seconds,
                       "evaluated": [e.summary() for e in self.evaluations]},
        }

    def header(self) -> str:
        """What was asked: target, record size, acks, RF, p99 limit, payload, the profile and its provenance."""
        r = self.req
        size = f"{r.record_size} B" if not r.record_size_max else \
            f"{2 * r.record_size - r.record_size_max}–{r.record_size_max} B (mean {r.record_size} B)"
        return (f"{r.target_rps:,.0f} records/s of {size}, acks={r.acks}, RF {r.rf}"
                + (f", p99 ≤ {short(r.p99_ms)} ms" if r.p99_ms else "") + f", payload {r.payload}"
                + (f"; {r.consumer_groups} consumer group{'s' * (r.consumer_groups > 1)} tailing"
                   if r.consumer_groups else "")
                + (f"; a group {r.catch_up[0]:,.0f} records behind catching up in {short(r.catch_up[1])} s "
                   f"(held to the NIC and disk bounds: a short simulation cannot run it)" if r.catch_up else "")
                + f"; hardware profile {r.profile} ({_provenance(r.profile)})"
                + "".join(f"; {k}={v}" for k, v in r.overrides.items()))

    def text(self) -> str:
        r = self.req
        lines = ["kafkasim plan: " + self.header(),
                 f"planned for {r.planned_rps:,.0f} records/s ({r.headroom:.0%} headroom). Each configuration was "
                 f"simulated for {self.sim_seconds:.2f} s of traffic ({r.planned_rps * self.sim_seconds:,.0f} records, "
                 f"a quarter of them warm-up):",
                 "  enough for batches, request windows and broker queues to reach steady state, not for rare "
                 "latency tails (GC, page-cache stalls).", ""]
        if self.best is None:
            lines.append("NO PLAN: no configuration within the limits meets the target in the model"
                         + (f"; stopped: {self.gave_up}." if self.gave_up else "."))
            lines += self._why()
            lines.append(self._footer())
            return "\n".join(lines)
        b = self.best
        lines += ["PLAN   " + b.shape.text(), "       " + b.settings.text()]
        lines += self._predicted(b, "       ")
        lines.append("")
        lines.append("why not smaller:")
        lines += self._why()
        if self.alternatives:
            lines.append("")
            lines.append("runner-up alternatives (also meet the target, cost more):")
            for i, a in enumerate(self.alternatives, 1):
                lines.append(f"  {i}. {a.shape.text()}; {a.settings.text()}")
                lines += self._predicted(a, "     ")
        if self.sensitivity:
            lines.append("")
            lines.append("most sensitive to (one step from the plan, simulated at the planned rate):")
            for d in self.sensitivity[:5]:
                verdict = "still meets the target" if d["meets_target"] else f"FAILS: {d['reason']}"
                lines.append(f"  {d['change']:34} capacity {d['capacity_change']:+.0%}, p99 {d['p99_ms']} ms "
                             f"({d['p99_change_ms']:+d}); {verdict}")
        lines.append("")
        lines.append(self._footer())
        return "\n".join(lines)

    def _predicted(self, e: Evaluation, pad: str) -> list[str]:
        row = e.row
        return [f"{pad}predicted at {row['offered_rps']:,.0f} records/s offered: delivers {row['delivered_rps']:,.0f}, "
                f"avg latency {row['avg_latency_ms']:.1f} ms, p50 {row['p50_ms']} ms, p99 {row['p99_ms']} ms",
                f"{pad}estimated capacity ≈ {e.capacity:,.0f} records/s ({e.capacity / self.req.target_rps:.2f} × "
                f"target), limited by {e.busiest}" + ("" if "analytic" in e.busiest else
                f", {row['busiest_utilisation']:.0%} busy at the planned rate") + " — the bottleneck when pushed further",
                f"{pad}tightest analytic bound: {e.bound_name} ≤ {e.bound:,.0f} records/s"]

    def _why(self) -> list[str]:
        out = []
        top = self.best.shape.brokers if self.best else None
        for k, why in self.excluded.items():
            if top is None or k < top:
                out.append(f"  {k:3d} brokers: {why}")
        if len(out) > 8:
            out = out[:3] + [f"  … ({len(out) - 6} more)"] + out[-3:]
        failed = [e for e in self.evaluations if not e.passed and self.best and e.shape.cost < self.best.shape.cost]
        if failed:
            out.append(f"  {len(failed)} cheaper candidates simulated and failed, e.g.:")
            for e in failed[-3:]:
                out.append(f"    {e.shape.text()}; {e.settings.text()}: {e.reason}")
        return out or ["  (none cheaper within the limits)"]

    def _footer(self) -> str:
        return (f"search: {self.space.size():,} candidates in the space, {self.pruned:,} pruned by analytic bounds "
                f"on the way, {len(self.evaluations) + len(self.sensitivity)} simulated; "
                f"{self.search_seconds:.1f} s search, {self.wall_seconds:.1f} s in all")


def _provenance(profile: str) -> str:
    """Where a profile's costs come from, in a few words: measured on a host, fitted to runs, or set by hand."""
    from kafkasim.model.hardware import load_profile
    try:
        data = load_profile(profile)
    except ValueError:
        return "unreadable"
    if data.get("host"):
        return f"measured by calibrate host on {data['host'].get('cpu', '?')}"
    if isinstance(data.get("provenance"), dict):
        return "fitted to one host's runs"
    return "hand-set or derived from published figures, not measured"
