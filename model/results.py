"""What one simulated run shows: perf-test's lines, the producer's JMX metrics, utilisations and the verdict.

Definitions follow docs/kafka-internals.md §8: perf-test latency runs from just before send() to the callback, in whole
milliseconds; percentiles are sorted samples at (int)(p·n) over at most 500000 samples; MB is 1048576 bytes;
record-queue-time is per batch; request-latency runs from request creation to its response.
"""
from __future__ import annotations

import itertools
import math
import operator
from dataclasses import asdict, dataclass, field

import numpy as np

import kafkasim
from kafkasim.model.network import REQUEST_METRICS, RequestTimes
from kafkasim.model.consumer_report import CONSUMER_PERF_HEADER, consumer_report
from kafkasim.model.verdict import verdict
from kafkasim.model.worker import application_seconds

MAX_SAMPLES = 500_000


@dataclass
class Result:
    scenario: dict
    seed: int
    model_version: str
    runtime_seconds: float
    simulated_seconds: float
    perf_test: dict
    metrics: dict
    worker_latency_us: float
    utilisation: dict
    brokers: list
    verdict: dict
    records_sent: int
    records_acked: int
    records_failed: int
    steady_records_per_sec: float    # acknowledgements a second over the run's middle (steady_rate)
    timeline: dict = field(repr=False)
    latencies_ms: np.ndarray = field(repr=False)
    consumers: list = field(default_factory=list)    # one entry a consumer group (consumer_report)
    steady_from: float | None = None    # simulated event by event to here, then its steady state repeated

    @property
    def cut_short(self) -> str | None:
        """A line saying the run hit model.max_sim_seconds before its records were done, or None."""
        limit = float(self.scenario.get("model.max_sim_seconds", float("inf")))
        expected = int(self.scenario.get("workload.records", 0)) * int(self.scenario.get("producers", 1))
        done = self.records_acked + self.records_failed
        if self.simulated_seconds < 0.999 * limit or not expected or done >= expected:
            return None
        return (f"warning: the run reached model.max_sim_seconds={limit:g} before its records were done ({done:,} "
                f"of {expected:,} completed): the figures describe its first {limit:g} s only; raise "
                f"model.max_sim_seconds or send fewer records")

    def to_json(self, timeline: bool = False) -> dict:
        out = asdict(self)
        out["cut_short"] = self.cut_short
        out.pop("latencies_ms")
        if not timeline:
            out.pop("timeline")
        return out

    def text(self) -> str:
        if not self.scenario.get("producers", 1):      # consumers only
            return "\n".join(self._consumer_lines()[1:] + self._footer())
        lines = list(self.perf_test["windows"]) + [self.perf_test["total"], ""]
        lines.append(f"{'steady rate (acks, middle 80 % of the run)':42} {self.steady_records_per_sec:12.1f} records/s")
        lines.append(f"{'worker latency (time in send())':42} {self.worker_latency_us:12.2f} us")
        for name, value in self.metrics.items():
            lines.append(f"{'producer-metrics:' + name:42} {_num(value):>12}")
        lines.append("")
        lines.append("utilisation: " + ", ".join(f"{k} {v:.0%}" for k, v in self.utilisation.items()))
        for b in self.brokers:
            if b["offline"]:
                lines.append(f"broker {b['id']}: offline")
                continue
            util = ", ".join(f"{k} {v:.0%}" for k, v in b["utilisation"].items())
            times = ", ".join(f"{k} {v:.2f}" for k, v in b["request_time_ms"].items())
            own = "".join(f", {k}={_num(v)}" for k, v in b.get("own_hardware", {}).items())
            share = b["bytes_in"] / max(1, sum(x["bytes_in"] for x in self.brokers))
            lag = b.get("follower_lag_bytes", 0) / 2**20
            behind = f"; as a follower {lag:,.0f} MiB behind its leaders at the end" if lag >= 1 else ""
            lines.append(f"broker {b['id']}{own}: leads {b['leader_partitions']} partitions, takes {share:.0%} of the "
                         f"bytes in; {util}{behind}")
            if times:
                lines.append(f"  Produce {times}")
        lines += self._consumer_lines()
        lines.append("")
        v = self.verdict
        lines.append(f"bottleneck: {v['bottleneck']} ({v['utilisation']:.0%}) — {v['evidence']}")
        return "\n".join(lines + self._footer())

    def _consumer_lines(self) -> list[str]:
        lines = []
        for group in self.consumers:
            lines += ["", f"consumer group {group['group']} ({group['instances']} instances, "
                          f"{group['partitions']} partitions), as kafka-consumer-perf-test prints it:",
                      CONSUMER_PERF_HEADER, group["perf_test"]["line"]]
            for name, value in group["metrics"].items():
                lines.append(f"{'consumer-fetch-manager-metrics:' + name:54} {_num(value):>12}")
            e2e = group["end_to_end_ms"]
            if e2e:
                lines.append(f"end-to-end latency (send() to poll()), ms: avg {e2e['avg']:.1f}, p50 {e2e['p50']:.1f}, "
                             f"p99 {e2e['p99']:.1f}, p99.9 {e2e['p999']:.1f}, max {e2e['max']:.1f}")
            v = group["bottleneck"]
            lines.append(f"consumer bottleneck: {v['name']} ({v['utilisation']:.0%}) — {v['evidence']}")
        return lines

    def _footer(self) -> list[str]:
        steady = (f"; events to {self.steady_from:.2f} s, then that steady state repeated (model.fast_forward)"
                  if self.steady_from is not None else "")
        lines = [f"[model {self.model_version}, seed {self.seed}, {self.simulated_seconds:.2f} s simulated "
                 f"in {self.runtime_seconds:.2f} s{steady}]"]
        if self.cut_short:
            lines.append(self.cut_short)
        return lines


def _num(value: float) -> str:
    if isinstance(value, (int, np.integer)) or float(value).is_integer():
        return f"{int(value)}"
    return f"{value:.4g}" if abs(value) < 1e5 else f"{value:.1f}"


def perf_test_latency_ms(send_start: np.ndarray, completed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Latency as perf-test measures it: the difference of two System.currentTimeMillis() readings, so an
    integer; the clock's phase is uniform, which makes it unbiased on average."""
    phase = rng.random(len(completed))
    start = send_start * 1000.0        # floor(completed·1000 + phase) − floor(send_start·1000 + phase), in place
    start += phase
    np.floor(start, out=start)
    end = completed * 1000.0
    end += phase
    np.floor(end, out=end)
    # (the difference, cast to integers as it is written, into the phases' memory: no more arrays of a million)
    return np.subtract(end, start, out=phase.view(np.int64), casting="unsafe")


def perf_test_output(start: float, send_start: np.ndarray, completed: np.ndarray, latency: np.ndarray,
                     record_size: float, interval: float = 5.0) -> dict:
    """ProducerPerformance's window lines (also as figures: records, records/s, avg and max ms), one every
    `interval` seconds, and total line from per-record completion times and latencies."""
    order = _stable_order(completed)
    done, lat = (completed, latency) if order is None else (completed[order], latency[order])
    mb = record_size / 1048576.0
    windows, figures, window_start, i = [], [], start, 0
    while i < len(done):
        # A window closes at the first callback at least `interval` after it opened, counting that callback.
        j = int(np.searchsorted(done, window_start + interval, "left"))
        if j >= len(done):
            break
        seg = lat[i:j + 1]
        elapsed = done[j] - window_start
        rate = len(seg) / elapsed
        figures.append([len(seg), rate, float(seg.mean()), float(seg.max())])
        windows.append(f"{len(seg)} records sent, {rate:.1f} records/sec ({rate * mb:.2f} MB/sec), "
                       f"{figures[-1][2]:.1f} ms avg latency, {figures[-1][3]:.1f} ms max latency.")
        window_start, i = done[j], j + 1
    n = len(done)
    elapsed_ms = max(1.0, math.floor((done[-1] - start) * 1000.0)) if n else 1.0
    rate = 1000.0 * n / elapsed_ms
    sampling = max(1, n // min(n, MAX_SAMPLES)) if n else 1
    # perf-test samples by send order (iteration % sampling == 0), not by completion order.
    order = _stable_order(send_start)
    by_send = (latency if order is None else latency[order])[::sampling]
    ranks = {p: int(p * len(by_send)) for p in (0.5, 0.95, 0.99, 0.999)}
    pct = dict(zip(ranks, _ranked(by_send, list(ranks.values())))) if len(by_send) else dict.fromkeys(ranks, 0)
    avg = _int_mean(latency) if n else 0.0
    mx = float(latency.max()) if n else 0.0
    total = (f"{n} records sent, {rate:f} records/sec ({rate * mb:.2f} MB/sec), {avg:.2f} ms avg latency, "
             f"{mx:.2f} ms max latency, {pct[0.5]} ms 50th, {pct[0.95]} ms 95th, {pct[0.99]} ms 99th, "
             f"{pct[0.999]} ms 99.9th.")
    return {"windows": windows, "window_figures": figures, "total": total, "records": n, "records_per_sec": rate,
            "mb_per_sec": rate * mb, "avg_latency_ms": avg, "max_latency_ms": mx, "p50_ms": pct[0.5],
            "p95_ms": pct[0.95], "p99_ms": pct[0.99], "p999_ms": pct[0.999]}


def _ranked(values: np.ndarray, ranks: list[int]) -> list[int]:
    """The integers `values` sorted, at `ranks` (what np.partition finds). Latencies in ms are small non-negative
    integers: counting them is much quicker than partitioning."""
    if values.min() >= 0 and values.max() <= len(values) + (1 << 20):
        at_most = np.cumsum(np.bincount(values))          # how many values are <= v, by v
        return [int(np.searchsorted(at_most, rank, "right")) for rank in ranks]
    part = np.partition(values, sorted(set(ranks)))
    return [int(part[rank]) for rank in ranks]


def steady_rate(completed: np.ndarray) -> float:
    """Records acknowledged a second between the 10th and the 90th percentile of the acknowledgement times: what
    a long run's mean rate comes to. perf-test's total line runs from the first send to the last acknowledgement, so
    a short run's start and its last records' latency lower it (Kontur V over 150k records: 307.5k records/s
    against 319.5k here; over a million, 319.3k against 320.8k)."""
    n = len(completed)
    if n < 10:
        return n / max(float(completed.max() - completed.min()), 1e-9) if n > 1 else 0.0
    lo, hi = int(0.1 * (n - 1)), int(0.9 * (n - 1))
    first, last = np.partition(completed, (lo, hi))[[lo, hi]]
    return (hi - lo) / max(float(last - first), 1e-9)


def _int_mean(values: np.ndarray) -> float:
    """ndarray.mean() of integers, from their integer sum: the same float while sums stay below 2**53 (where
    mean's float partial sums are exact), without converting every element."""
    return int(values.sum()) / len(values)


def _stable_order(key: np.ndarray) -> np.ndarray | None:
    """np.argsort(key, kind="stable"), or None where key is already in order (as times usually are)."""
    if (key[1:] >= key[:-1]).all():
        return None
    return np.argsort(key, kind="stable")


def _mean(xs) -> float:
    return float(np.mean(xs)) if len(xs) else 0.0


def _max(xs) -> float:
    return float(np.max(xs)) if len(xs) else 0.0


def columns(objects: list, names: tuple[str, ...], key: str, start: float) -> tuple[dict[str, np.ndarray], list]:
    """The objects whose `key` attribute is at or after `start`, and their attributes `names` (key among them) as
    float arrays by name: one pass through the objects in C, not one per figure (integers below 2**53 stay exact)."""
    flat = np.fromiter(itertools.chain.from_iterable(map(operator.attrgetter(*names), objects)), float,
                       len(objects) * len(names))
    table = flat.reshape(len(objects), len(names)).T
    steady = table[names.index(key)] >= start
    if not steady.all():
        table, objects = table[:, steady], list(itertools.compress(objects, steady))
    return dict(zip(names, table.copy())), objects


BATCH_COLUMNS = ("created", "drained", "size_on_wire", "records", "compression_ratio")
REQUEST_COLUMNS = ("created", "completed", "size")


def producer_metrics(batches: dict[str, np.ndarray], requests: dict[str, np.ndarray], elapsed: float,
                     pool_wait: float, sender_busy: float, errors: int, in_flight_seconds: float) -> dict:
    """From the batches' BATCH_COLUMNS and the requests' REQUEST_COLUMNS."""
    queue_ms = (batches["drained"] - batches["created"]) * 1000.0
    sizes = batches["size_on_wire"]
    completed = requests["completed"]
    done = ~np.isnan(completed)
    latency_ms = (completed[done] - requests["created"][done]) * 1000.0
    drained_records = int(batches["records"].sum())
    count = len(completed)
    return {
        "batch-size-avg": _mean(sizes),
        "batch-size-max": _max(sizes),
        "record-queue-time-avg": _mean(queue_ms),
        "record-queue-time-max": _max(queue_ms),
        "request-latency-avg": _mean(latency_ms),
        "request-latency-max": _max(latency_ms),
        "records-per-request-avg": drained_records / count if count else 0.0,
        "record-send-rate": drained_records / elapsed,
        "request-rate": len(latency_ms) / elapsed,
        "request-size-avg": _mean(requests["size"]),
        "outgoing-byte-rate": int(requests["size"].sum()) / elapsed,
        "compression-rate-avg": _mean(batches["compression_ratio"]),
        "bufferpool-wait-ratio": pool_wait / elapsed,
        "io-wait-ratio": max(0.0, 1.0 - sender_busy / elapsed),
        "requests-in-flight": in_flight_seconds / elapsed,
        "record-error-rate": errors / elapsed,
        "record-error-total": errors,
        "produce-throttle-time-avg": 0.0,
    }


def timeline(batches: dict[str, np.ndarray], requests: dict[str, np.ndarray], end: float, points: int = 200) -> dict:
    """Accumulator backlog (batches created, not yet drained) and requests in flight, sampled on a grid."""
    grid = np.linspace(0.0, end, points)
    created, drained = np.sort(batches["created"]), np.sort(batches["drained"])
    completed = requests["completed"]
    sent, answered = np.sort(requests["created"]), np.sort(completed[~np.isnan(completed)])
    return {
        "time_s": grid.tolist(),
        "queued_batches": (np.searchsorted(created, grid, "right") - np.searchsorted(drained, grid, "right")).tolist(),
        "requests_in_flight": (np.searchsorted(sent, grid, "right") - np.searchsorted(answered, grid, "right")).tolist(),
    }


def build_result(s, env, records, producers, cluster, shared_host, runtime: float, consumers=(),
                 extension=None) -> Result:
    """The run's figures; `extension` (steady.Extension) adds the batches and requests of a fast-forwarded end."""
    senders, accumulators = [p.sender for p in producers], [p.accumulator for p in producers]
    send_start, completed = records.send_start, records.completed
    sent_mask = ~np.isnan(send_start)
    w = s.workload
    # Warm-up records — each producer's first sends, whichever thread made them — are left out of every figure,
    # as perf-test's --warmup-records does.
    steady = sent_mask.copy()
    for k in range(s.producers if w.warmup_records else 0):
        ids = np.arange(k * w.records, (k + 1) * w.records)
        first = ids[np.argsort(send_start[ids], kind="stable")[:w.warmup_records]]
        steady[first] = False
    ok = steady & ~np.isnan(completed) & ~records.failed
    start = float((send_start if steady.all() else send_start[steady]).min()) if steady.any() else 0.0
    if not ok.all():
        send_start, completed = send_start[ok], completed[ok]
    end = float(completed.max()) if len(completed) else env.now
    elapsed = max(end - start, 1e-9)
    rng = np.random.default_rng(np.random.SeedSequence(s.seed).spawn(65)[-1])
    latency = perf_test_latency_ms(send_start, completed, rng)
    perf = perf_test_output(start, send_start, completed, latency,
                            _int_mean(records.value_size) if len(records) else 0.0,
                            s.workload.reporting_interval_ms / 1000)

    # The metrics cover the steady part of the run, like the throughput: batches and requests from its start.
    batches, _ = columns([b for sender in senders for b in sender.batches], BATCH_COLUMNS, "drained", start)
    requests, steady_requests = columns([r for sender in senders for r in sender.requests], REQUEST_COLUMNS,
                                        "created", start)
    if extension is not None:
        batches, requests = ({k: np.concatenate((mine[k], more[k])) for k in mine}
                             for mine, more in ((batches, extension.batches), (requests, extension.requests)))
        steady_requests = steady_requests + extension.request_objects
    answered = requests["completed"]
    # (summed by Python's sum, in request order, as the figure always was)
    in_flight = sum((np.where(np.isnan(answered), end, np.minimum(answered, end)) - requests["created"]).tolist())
    pool_wait = sum(acc.pool.wait_seconds for acc in accumulators)
    sender_busy = sum(sender.busy_seconds for sender in senders) / max(1, s.producers)
    failed = int((records.failed & steady).sum())
    metrics = producer_metrics(batches, requests, elapsed, pool_wait / max(1, s.producers), sender_busy, failed,
                               in_flight / max(1, s.producers))
    workers = [wk for producer in producers for wk in producer.workers]
    sent = int(sent_mask.sum())
    worker_latency = sum(wk.send_seconds for wk in workers) / max(1, sent) * 1e6

    # Utilisations cover the whole run (busy counters include the warm-up).
    util, evidence = utilisation(s, env, producers, cluster, shared_host, max(env.now, 1e-9), metrics, workers)
    brokers = broker_report(s, cluster, steady_requests, max(env.now, 1e-9))
    target = w.throughput * s.producers if w.throughput > 0 else None
    # The page cache hides a busy disk until it is full of dirty pages: only then does the disk limit anything.
    stalled = {"broker disk"} if not any(b.disk_wait_seconds for b in cluster.brokers) else set()
    v = verdict(util, evidence, perf["records_per_sec"], target, not_limiting=stalled)
    return Result(
        scenario=s.flat(), seed=s.seed, model_version=kafkasim.__version__, runtime_seconds=runtime,
        simulated_seconds=env.now, perf_test=perf, metrics=metrics, worker_latency_us=worker_latency,
        utilisation=util, brokers=brokers, verdict=v, records_sent=int(steady.sum()), records_acked=int(ok.sum()),
        records_failed=failed, steady_records_per_sec=steady_rate(completed),
        timeline=timeline(batches, requests, env.now),
        latencies_ms=latency,
        consumers=consumer_report(s, consumers, records.send_start, records.value_size, cluster,
                                  float(np.nanmax(completed)) if s.producers and ok.any() else None)
        if consumers else [],
        steady_from=None if extension is None else extension.start,
    )


def utilisation(s, env, producers, cluster, shared_host, elapsed, metrics, workers) -> tuple[dict, dict]:
    """Busy fractions of every resource that can limit throughput, and the facts behind each."""
    senders, accumulators = [p.sender for p in producers], [p.accumulator for p in producers]
    threads = max(1, len(workers))
    conns = [c for sender in senders for c in sender.connections.values()]
    now = env.now
    # The in-flight window is judged per connection that carries traffic: one slow broker's full window limits
    # the partitions it leads while the others' are idle.
    used = {id(r.connection) for sender in senders for r in sender.requests}
    window_full = {c: c.window_full_seconds + (now - c._full_since if len(c.in_flight) == c.max_in_flight else 0.0)
                   for c in conns if id(c) in used}
    fullest = max(window_full, key=window_full.get, default=None)
    lock_wait = sum(wk.lock_wait_seconds for wk in workers)
    pool_wait = sum(acc.pool.wait_seconds for acc in accumulators)
    worker_busy = application_seconds(workers, [acc.pool for acc in accumulators])
    util = {
        "worker threads": worker_busy / (elapsed * threads),
        "lock contention": lock_wait / (elapsed * threads),
        "buffer memory": pool_wait / (elapsed * threads),
        # (at most all of the run: a fast-forward shares the connections' growth out as since its windows began)
        "sender in-flight window": min(1.0, window_full[fullest] / elapsed) if fullest else 0.0,
        "sender thread": sum(sender.busy_seconds for sender in senders) / (elapsed * max(1, len(producers))),
    }
    pipes = [p for c in conns for p in c.out_pipes + c.back_pipes]
    busiest = max(pipes, key=lambda p: p.busy_seconds) if pipes else None
    if busiest:
        util["network"] = busiest.busy_seconds / elapsed
    for b in cluster.brokers:
        for k, v in b.utilisation(elapsed).items():
            key = f"broker {k}"
            util[key] = max(util.get(key, 0.0), v)
    hosts = {id(h): h for h in [shared_host] if h} or {}
    if not hosts:
        hosts = {id(h): h for h in (producer.host for producer in producers)}
        hosts.update({id(h): h for h in cluster.hosts})
    cpu = [(h.busy_seconds + sum(g.busy_seconds for g in h.groups)) / (elapsed * h.capacity)
           for h in hosts.values() if h.cores > 0]
    if cpu:
        util["shared cpu" if shared_host else "host cpu"] = max(cpu)
    if shared_host and shared_host.groups:      # the clients' CPU limit beside the brokers
        util["host cpu"] = max(g.busy_seconds / (elapsed * g.capacity) for g in shared_host.groups)
    lat = metrics["request-latency-avg"]
    count = max(1, sum(wk.count for wk in workers))
    per_send = sum(wk.send_seconds for wk in workers) / count
    per_app = sum(wk.app_seconds for wk in workers) / count
    leading = len(set(cluster.leaders))     # the brokers the Sender sends to
    mean_window = _mean(list(window_full.values())) / elapsed if window_full else 0.0
    evidence = {
        "sender in-flight window": (
            f"max request rate 1000/{lat:.1f} ms × {s.producer.max_in_flight} in flight × {leading} "
            f"broker{'s' if leading > 1 else ''} ≈ "
            f"{1000.0 / max(lat, 1e-9) * s.producer.max_in_flight * leading * s.producers:.0f}/s reached "
            f"(request-rate {metrics['request-rate']:.0f}/s, batch-size-avg {metrics['batch-size-avg']:.0f} B)"
            + (f"; broker {fullest.broker.id}'s connection is full {util['sender in-flight window']:.0%} of the "
               f"time, the average {mean_window:.0%}"
               if fullest and util["sender in-flight window"] > 1.25 * mean_window else "")),
        "worker threads": (
            f"each send() takes {per_send * 1e6:.2f} us"
            + (f" and the application {per_app * 1e6:.2f} us between sends" if per_app else "")
            + f", so {threads} thread{'s' if threads > 1 else ''} cap at "
            f"≈ {threads / max(1e-12, per_send + per_app):.0f} records/s"),
        "lock contention": (
            f"{threads} threads wait {util['lock contention']:.0%} of their time for the partition deque and "
            f"producer locks ({s.topic.partitions} partitions)"),
        "buffer memory": (
            f"send() waits for buffer.memory ({s.producer.buffer_memory} B) "
            f"{metrics['bufferpool-wait-ratio']:.0%} of the time"),
        "sender thread": f"the Sender thread is busy {util['sender thread']:.0%} of the time",
        "network": f"the busiest link ({busiest.name if busiest else 'none'}) is busy "
                   f"{util.get('network', 0):.0%} of the time",
        "broker io-threads": "the brokers' request handler threads are saturated",
        "broker network-threads": "the brokers' network processor threads are saturated",
        "broker disk": "the brokers' disks cannot keep up with the page cache",
        "shared cpu": f"{shared_host.cores if shared_host else 0} cores shared by clients and brokers are busy",
        "host cpu": "a host's cores (or its client_cpu_limit) are all busy",
    }
    return util, evidence


def broker_report(s, cluster, requests, elapsed) -> list[dict]:
    out = []
    for b in cluster.brokers:
        mine = [r.times for r in requests if r.times is not None and r.connection.broker is b]
        # (the metrics of every answered request at once, a column of times per stage)
        columns = np.fromiter(itertools.chain.from_iterable(mine), float, len(mine) * len(RequestTimes._fields))
        times = ({k: float(np.mean(v)) for k, v in
                  zip(REQUEST_METRICS, RequestTimes(*columns.reshape(len(mine), -1).T).metrics_ms())} if mine else {})
        util = b.utilisation(elapsed)
        host = b.host
        if host.cores > 0:
            util["cpu"] = host.busy_seconds / (elapsed * host.cores)
        util["nic-in"] = cluster.nic_in[b.id].busy_seconds / elapsed
        util["nic-out"] = cluster.nic_out[b.id].busy_seconds / elapsed
        out.append({"id": b.id, "leader_partitions": cluster.leaders.count(b.id), "utilisation": util,
                    "request_time_ms": times, "bytes_in": b.bytes_in, "offline": b.id in cluster.offline,
                    "own_hardware": s.hardware.own(b.id), "follower_lag_bytes": cluster.replication.lag(b.id)})
    return out
