"""`kafkasim plan`: the cheapest cluster and producer configuration that takes a target rate, with headroom.

The question is inverted prediction: "3 million 1 KB records/s, RF 3, acks=all — how many brokers, partitions,
producers and threads, and which producer settings?" The planner answers it in two stages.

1. **Analytic bounds prune.** For every shape (brokers, producers, threads, partitions) and producer settings
   (batch.size, linger.ms, compression.type, max.in.flight) it computes upper bounds on throughput that hold
   whatever the queues do: worker threads ≤ threads / (time in send()), the producer-wide lock, the Sender
   thread's CPU, the in-flight window ≈ 1000 / request-latency × max.in.flight × brokers requests/s (with the least
   request latency the RTT, the follower round trip and the broker's work allow), client and broker NICs,
   broker disks and broker I/O threads. A candidate whose least bound is below the planned rate
   (target × (1 + headroom)) cannot meet it and is never simulated.
2. **The model decides.** Survivors are taken cheapest first — cost is (brokers, producer instances, worker
   threads, partitions), compared in that order, since brokers are the servers to buy — and simulated at the
   planned rate. A candidate passes when it keeps up (delivered rate ≥ 93 % of offered after the latency tail,
   no resource ≥ 95 % busy, no buffer waits, no expired records) and, if asked, its p99 is within --p99-ms.
   A failure that saturates the brokers on average raises the next broker count to the one that brings that
   utilisation under 100 %; a failure in the workers raises the producer count likewise (the model's own
   utilisation, scaled linearly).

Each evaluation simulates a short stretch of traffic (default 0.05 s, at least 40,000 records): enough for the
batches, request windows and broker queues to reach steady state at millions of records/s, not for rare tails,
and short enough that the planner's 20–40 model runs fit in two minutes on a small machine. The output says so.
"""
from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict
from typing import Any, Iterator

from kafkasim.app.plan_report import Evaluation, Plan, Request, Space
from kafkasim.app.sweep import Progress, run_scenarios
from kafkasim.model.bounds import SUSTAINED, Bounds, Settings, Shape, feasible, least, short
from kafkasim.model.scenario import Scenario, ScenarioError, from_flat

P99_PATIENCE = 24         # candidates failing on p99 alone without a lower p99 before the search stops
SATURATED = 0.95          # a resource this busy at the planned rate has no margin left
KEEP_UP = 0.93            # delivered / offered, after the latency tail, that counts as keeping up (short runs:
                          # perf-test's whole-ms elapsed time and the throttle's 2 ms bursts cost a few %)
CLIENT_SIDE = ("worker threads", "lock contention", "sender thread", "buffer memory")


class Planner:
    def __init__(self, req: Request, space: Space | None = None, jobs: int = 2, scheduler: str | None = None,
                 progress: bool = False):
        if req.target_rps <= 0:
            raise ScenarioError(f"--target-rps={short(req.target_rps)} is not allowed: expected a number > 0")
        if not 0 <= req.headroom <= 10:
            raise ScenarioError(f"--headroom={req.headroom} is not allowed: expected a number from 0 to 10")
        if req.p99_ms is not None and req.p99_ms <= 0:
            raise ScenarioError(f"--p99-ms={short(req.p99_ms)} is not allowed: expected a number > 0")
        self.req, self.space = req, space or Space()
        self.jobs, self.scheduler, self.progress = jobs, scheduler, progress
        self.base = self._base_scenario()
        self.bounds = Bounds(self.base, req.catch_up)
        # Every record waits at least one produce round trip, and perf-test reports whole milliseconds.
        self.floor_ms = self.bounds.request_latency_ms()
        if req.p99_ms is not None and req.p99_ms < math.floor(self.floor_ms):
            raise ScenarioError(f"--p99-ms={short(req.p99_ms)} is not reachable here: every record waits at least one "
                                f"produce round trip, ≥ {self.floor_ms:.2f} ms on profile {req.profile}"
                                f"{' with acks=all' if req.acks == 'all' and req.rf > 1 else ''}; perf-test counts "
                                f"whole milliseconds, so ask for {math.floor(self.floor_ms)} ms or more")
        self.gave_up = ""                        # why the search stopped before the space was exhausted
        self.evaluations: list[Evaluation] = []
        self.excluded: dict[int, str] = {}       # broker count -> why no configuration with it can work
        self.pruned = 0
        self.settings = self.space.settings()

    # -- scenarios
    def _base_scenario(self) -> Scenario:
        r = self.req
        flat = {"name": "plan", "client.library": "java", "client.version": r.client_version,
                "producer.acks": r.acks, "topic.replication.factor": r.rf,
                "topic.min.insync.replicas": min(2, r.rf), "workload.record_size": r.record_size,
                "workload.record_size_max": r.record_size_max, "workload.payload": r.payload,
                "hardware.profile": r.profile, "cluster.brokers": max(r.rf, 1),
                "consumers.groups": r.consumer_groups, "consumer.auto.offset.reset": "earliest",
                "cluster.broker.group.initial.rebalance.delay.ms": 0}
        flat.update(r.overrides)
        return from_flat(flat, source="plan")

    def sim_seconds(self) -> float:
        r = self.req
        t = r.sim_seconds if r.sim_seconds is not None else 0.05
        return max(t, r.min_records / r.planned_rps) if r.sim_seconds is None else t

    def scenario(self, shape: Shape, st: Settings) -> Scenario:
        rate = self.req.planned_rps / shape.producers
        records = max(500, math.ceil(rate * self.sim_seconds()))
        flat = {"cluster.brokers": shape.brokers, "producers": shape.producers, "threads": shape.threads,
                "topic.partitions": shape.partitions, "workload.throughput": rate,
                "workload.records": records, "workload.warmup_records": records // 4, **st.flat()}
        if self.req.acks == "all" and st.max_in_flight > 5:
            flat["producer.enable.idempotence"] = False
        return self.base.replace(**flat)

    # -- judging one model run
    def judge(self, ev: Evaluation) -> None:
        row = ev.row
        offered = self.req.planned_rps
        # What the run delivers: its acknowledgements a second over its middle (the steady rate), which a queue that
        # keeps growing holds below the offered rate however long its latency tail. (perf-test's own rate divides by
        # the time to the last callback; taking a latency tail out of that counted a growing queue as keeping up.)
        delivered = min(offered, row["steady_records_per_sec"]) if row["records_per_sec"] > 0 else 0.0
        util = {k: v for k, v in row["utilisation"].items() if k not in ("sender in-flight window",)}
        util["lock contention"] = util.get("lock contention", 0.0) + util.get("worker threads", 0.0)
        busiest = max(util, key=util.get)
        ev.busiest = busiest
        # A run that keeps up shows its spare capacity in the utilisations; one that does not, in what it delivers.
        ev.capacity = offered / max(util[busiest], 1e-9) if delivered >= KEEP_UP * offered else delivered
        row["offered_rps"], row["delivered_rps"], row["busiest_utilisation"] = offered, delivered, util[busiest]
        sustained = {k: v for k, v in self.bounds.all(ev.shape, ev.settings).items() if k in SUSTAINED}
        limit = min(sustained, key=sustained.get)
        if sustained[limit] < ev.capacity:
            ev.capacity, ev.busiest = sustained[limit], f"{limit} (sustained, analytic)"
        if ev.bound_name and 0 < ev.bound < ev.capacity:    # never above the tightest bound printed beside it
            ev.capacity, ev.busiest = ev.bound, f"{ev.bound_name} (analytic)"
        window = row["utilisation"].get("sender in-flight window", 0.0)
        problems = []
        if row["records_failed"]:
            problems.append(f"{row['records_failed']} records expired (delivery.timeout.ms)")
        if delivered < KEEP_UP * offered:
            problems.append(f"delivers {delivered:,.0f} of {offered:,.0f} records/s offered "
                            f"(bottleneck: {row['bottleneck']})")
        if sustained[limit] < offered:
            problems.append(f"{limit} sustains at most {sustained[limit]:,.0f} records/s (a short run's page cache "
                            f"and buffers hide it)")
        if util[busiest] >= SATURATED:
            problems.append(f"{busiest} {util[busiest]:.0%} busy")
        if window >= 0.9:
            ev.capacity = min(ev.capacity, offered)
            problems.append(f"the sender's in-flight window is full {window:.0%} of the time")
        if row["utilisation"].get("buffer memory", 0.0) > 0.01:
            problems.append("send() waits for buffer.memory")
        if self.req.p99_ms is not None and row["p99_ms"] > self.req.p99_ms:
            problems.append(f"p99 {row['p99_ms']} ms > {short(self.req.p99_ms)} ms")
        ev.passed = not problems
        ev.reason = "; ".join(problems) if problems else (
            f"keeps up with {offered:,.0f} records/s; busiest {busiest} {util[busiest]:.0%}")

    # -- the search
    def _settings_for(self, shape: Shape) -> list[tuple[Settings, str, float]]:
        """This shape's settings whose analytic bound reaches the planned rate, most promising first."""
        out = []
        for st in self.settings:
            ok, name, value = feasible(self.bounds.all(shape, st), self.req.planned_rps)
            if not ok:
                self.pruned += 1
                continue
            out.append((st, name, value))
        lat = self.req.p99_ms is not None

        def order(item):
            st, _, value = item
            comfort = min(value / self.req.planned_rps, 2.0)
            return (-round(comfort, 1), st.linger_ms if lat else abs(st.linger_ms - 5.0),
                    abs(math.log2(st.batch_size / 262144)), st.compression != "none", -st.max_in_flight)
        out.sort(key=order)
        return out

    def _broker_ok(self, brokers: int) -> tuple[bool, str]:
        """Can any partitions and settings with this many brokers pass the broker-side bounds?"""
        best_name, best = "", 0.0
        for ppb in self.space.partitions_per_broker:
            for st in self.settings:
                ok, name, value = feasible(self.bounds.broker(brokers, brokers * ppb, st), self.req.planned_rps)
                if ok:
                    return True, ""
                if value > best:
                    best_name, best = name, value
        if True:
            return False, (f"analytic bound: {best_name} allows at most {best:,.0f} records/s with {brokers} "
                           f"brokers (RF {self.req.rf})")
        return True, ""

    def _client_ok(self, producers: int, threads: int) -> bool:
        return any(feasible(self.bounds.client(producers, threads, st), self.req.planned_rps)[0]
                   for st in self.settings)

    def candidates(self) -> Iterator[Evaluation]:
        """Candidates cheapest first, reading self.min_brokers / self.min_producers, which model failures raise."""
        sp = self.space
        for brokers in sp.brokers:
            if brokers < self.req.rf or brokers < self.min_brokers:
                if brokers < self.req.rf:
                    self.excluded.setdefault(brokers, f"RF {self.req.rf} needs at least {self.req.rf} brokers")
                continue
            ok, why = self._broker_ok(brokers)
            if not ok:
                self.excluded[brokers] = why
                continue
            self.min_producers = 0
            for producers in sp.producers:
                for threads in sp.threads:
                    if brokers < self.min_brokers:
                        break
                    if producers * threads < self.min_workers or producers < self.min_producers:
                        continue
                    if not self._client_ok(producers, threads):
                        continue
                    for ppb in sp.partitions_per_broker:
                        if brokers < self.min_brokers or producers * threads < self.min_workers:
                            break
                        shape = Shape(brokers, producers, threads, brokers * ppb)
                        tries = self._settings_for(shape)[:sp.tries_per_shape]
                        for st, name, value in tries:
                            if brokers < self.min_brokers:
                                break
                            yield Evaluation(shape, st, name, value)
                if brokers < self.min_brokers:
                    break
            if brokers >= self.min_brokers and brokers not in self.excluded:
                self.excluded[brokers] = "every shape within the limits failed in the model"

    def learn(self, ev: Evaluation) -> None:
        """Raise the lower limits from a failed run. Brokers that saturate cannot be helped by more producers or
        partitions: the next broker count tried is the one that brings the average broker under SATURATED (the
        per-broker figures give the spread between the busiest and the average broker). Saturated workers need
        more of them, in proportion."""
        if ev.passed:
            return
        row, u = ev.row, ev.row["utilisation"]
        b, workers_now = ev.shape.brokers, ev.shape.producers * ev.shape.threads
        workers = u.get("worker threads", 0.0) + u.get("lock contention", 0.0)
        per = {"broker io-threads": "io-threads", "broker network-threads": "network-threads", "broker disk": "disk"}
        broker_keys = [k for k in per if k in u]
        busiest = max(broker_keys, key=u.get) if broker_keys else None
        delivered = row.get("delivered_rps") or 0.0
        offered = self.req.planned_rps
        behind = delivered < KEEP_UP * offered
        named = row["bottleneck"] if row["bottleneck"] in per else None
        # A run that falls behind while its workers are busy is held back by the producers, whatever the verdict
        # names (short runs can overstate the disk's busy time).
        if busiest and ((u[busiest] >= SATURATED and u[busiest] >= workers) or (behind and named and workers < 0.8)):
            busiest = named or busiest
            mean = row["broker_utilisation"].get(per[busiest], 0.0)
            top = row.get("broker_utilisation_max", {}).get(per[busiest], 0.0)
            balance = mean / top if top > 0 else 1.0
            # Busy fraction when it keeps up; when it falls behind, the shortfall itself says how much is missing.
            load = max(u[busiest] / SATURATED, offered / max(delivered, 1.0) if behind else 0.0) * balance
            need = max(b + 1, math.ceil(b * load))
            if need > self.min_brokers:
                for k in range(b, need):
                    self.excluded.setdefault(k, f"model: {busiest} saturated with {b} brokers at the planned rate "
                                                f"(delivers {delivered:,.0f} of {offered:,.0f} records/s, "
                                                f"busiest broker {u[busiest]:.0%}, average {u[busiest] * balance:.0%})")
                self.min_brokers = need
            return
        delivered = row.get("delivered_rps") or 0.0
        if workers >= SATURATED or row["bottleneck"] in ("worker threads", "lock contention") or behind:
            short = max(workers / SATURATED, self.req.planned_rps / max(delivered, 1.0))
            self.min_workers = max(self.min_workers, workers_now + 1, math.ceil(workers_now * short))

    def run(self, sensitivity: bool = True, runners_up: int = 2, extra_budget: int = 4) -> "Plan":
        start = time.perf_counter()
        self.min_brokers, self.min_producers, self.min_workers = 1, 0, 0
        gen = self.candidates()
        plan: Evaluation | None = None
        alternatives: list[Evaluation] = []
        bar = Progress(1, "plan", enabled=False)
        extra = 0
        exhausted = False
        lowest_p99, stale = math.inf, 0         # candidates since the lowest p99 last fell, all failing on p99
        while not exhausted:
            batch = []
            for ev in gen:
                if plan is not None and ev.shape == plan.shape:
                    continue
                batch.append(ev)
                if len(batch) >= max(1, self.jobs):
                    break
            else:
                exhausted = True
            if not batch:
                break
            rows = run_scenarios([self.scenario(e.shape, e.settings) for e in batch], jobs=self.jobs,
                                 scheduler=self.scheduler, progress=bar)
            for ev, row in zip(batch, rows):
                ev.row = row
                self.judge(ev)
                self.evaluations.append(ev)
                if self.progress:
                    mark = "meets" if ev.passed else "fails"
                    print(f"plan: {ev.shape.text()}; {ev.settings.text()}: {mark} — {ev.reason}", file=sys.stderr)
            for ev in batch:          # in cost order: the first that passes is the plan
                if plan is None:
                    if ev.passed:
                        plan = ev
                    else:
                        self.learn(ev)
                        stale = 0 if ev.row["p99_ms"] < lowest_p99 or "p99" not in ev.reason else stale + 1
                        lowest_p99 = min(lowest_p99, ev.row["p99_ms"])
                elif ev.passed and ev.shape != plan.shape and len(alternatives) < runners_up:
                    alternatives.append(ev)
            if plan is None and stale >= P99_PATIENCE:
                self.gave_up = (f"p99 ≤ {short(self.req.p99_ms)} ms not reached: the lowest p99 of "
                                f"{len(self.evaluations)} configurations simulated was {lowest_p99:g} ms, and the "
                                f"last {stale} bettered none (the round trip alone is {self.floor_ms:.2f} ms)")
                break
            if plan is not None:
                extra += len(batch)
                if len(alternatives) >= runners_up or extra > extra_budget:
                    break
        search_seconds = time.perf_counter() - start
        sens = self.sensitivity(plan) if (plan and sensitivity) else []
        return Plan(self.req, self.space, plan, alternatives, sens, self.evaluations, dict(sorted(self.excluded.items())),
                    self.pruned, search_seconds, time.perf_counter() - start, self.sim_seconds(), self.gave_up)

    def sensitivity(self, plan: Evaluation) -> list[dict[str, Any]]:
        """One step in each setting around the plan, simulated: how much capacity and p99 change."""
        sh, st = plan.shape, plan.settings
        variants: list[tuple[str, Shape, Settings]] = []

        def add(label, shape=sh, settings=st):
            try:
                self.scenario(shape, settings)
            except ScenarioError:
                return
            variants.append((label, shape, settings))

        add(f"batch.size {st.batch_size} → {st.batch_size // 2}", settings=_r(st, batch_size=max(1024, st.batch_size // 2)))
        add(f"linger.ms {short(st.linger_ms)} → {short(0 if st.linger_ms else 5)}",
            settings=_r(st, linger_ms=0.0 if st.linger_ms else 5.0))
        other = "lz4" if st.compression == "none" else "none"
        add(f"compression.type {st.compression} → {other}", settings=_r(st, compression=other))
        mif = 1 if st.max_in_flight > 1 else 5
        add(f"max.in.flight {st.max_in_flight} → {mif}", settings=_r(st, max_in_flight=mif))
        add(f"partitions {sh.partitions} → {sh.partitions * 2}", shape=_r(sh, partitions=sh.partitions * 2))
        if sh.threads > 1:
            add(f"threads {sh.threads} → {sh.threads - 1}", shape=_r(sh, threads=sh.threads - 1))
        if sh.producers > 1:
            add(f"producers {sh.producers} → {sh.producers - 1}", shape=_r(sh, producers=sh.producers - 1))
        rows = run_scenarios([self.scenario(s, t) for _, s, t in variants], jobs=self.jobs, scheduler=self.scheduler,
                             progress=self.progress, label="plan sensitivity")
        out = []
        for (label, shape, settings), row in zip(variants, rows):
            ev = Evaluation(shape, settings, *least(self.bounds.all(shape, settings)), row=row)
            self.judge(ev)
            d_cap = ev.capacity / plan.capacity - 1.0 if plan.capacity else 0.0
            out.append({"change": label, "estimated_capacity_rps": round(ev.capacity),
                        "capacity_change": d_cap, "p99_ms": row["p99_ms"],
                        "p99_change_ms": row["p99_ms"] - plan.row["p99_ms"], "meets_target": ev.passed,
                        "busiest_resource": ev.busiest, "reason": ev.reason})
        # Most sensitive first: losing the target, then the size of the capacity change, then of the p99 change.
        out.sort(key=lambda d: (d["meets_target"], -abs(d["capacity_change"]),
                                -abs(d["p99_change_ms"]) / max(1, plan.row["p99_ms"])))
        return out


def _r(obj, **kw):
    return type(obj)(**{**asdict(obj), **kw})


