"""What a consumer group's run shows: kafka-consumer-perf-test's line, the consumer's fetch metrics, end-to-end
latency, and what limits the group (docs/kafka-internals.md §10)."""
from __future__ import annotations

import time

import numpy as np

from kafkasim.model.verdict import SATURATED


CONSUMER_PERF_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def _clock(seconds: float) -> str:
    """A simulated instant as ConsumerPerformance prints one (yyyy-MM-dd HH:mm:ss:SSS), the run starting at the
    epoch."""
    ms = int(round(seconds * 1000))
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms // 1000)) + f":{ms % 1000:03d}"


def consumer_bottleneck(members, cluster, span: float, fetch_latency: float, fetch_rate: float,
                        behind: float | None = None) -> dict:
    """What limits a group: its busiest instance's poll loop, the NIC out of the brokers it reads from or the NIC in
    of its instances' hosts, the brokers' disks (data older than the page cache holds), or else the wait for
    fetches (round trips, fetch.max.wait.ms, the brokers' threads) — unless it tails producers and keeps up with
    them (`behind`: how long after the producers' last acknowledgement it read its last record)."""
    poll = max(c.busy_seconds for c in members) / span
    leaders = {b for c in members for b in c.leaders}
    nic = max((cluster.nic_out[b].busy_seconds / max(cluster.brokers[b].env.now, 1e-9) for b in leaders), default=0.0)
    if poll >= SATURATED:
        return {"name": "consumer poll loop", "utilisation": poll,
                "evidence": "the busiest instance's thread parses and hands out records all the time: more "
                            "instances (up to the partition count) or cheaper processing"}
    if nic >= SATURATED:
        return {"name": "broker NIC out", "utilisation": nic,
                "evidence": "the leaders' NICs carry every group's reads and the followers' fetches"}
    nic_in = max(c.machine.nic_in.busy_seconds for c in members) / span
    if nic_in >= SATURATED:
        return {"name": "consumer NIC in", "utilisation": min(1.0, nic_in),
                "evidence": "the busiest instance's host takes in all its NIC carries: instances on more hosts"}
    reads = max(cluster.brokers[b].page_cache.read_seconds / max(span, 1e-9) for b in leaders) if leaders else 0.0
    if reads >= SATURATED:
        return {"name": "broker disk reads", "utilisation": min(1.0, reads),
                "evidence": "the group reads data older than the leaders' page cache holds (hardware.page_cache_gib) "
                            "from their disks, on the network threads that also serve the producers"}
    if behind is not None and behind <= max(0.1, 0.05 * span):
        return {"name": "none: keeps up with the producers", "utilisation": poll,
                "evidence": f"it read the last record {max(0.0, behind) * 1000:.0f} ms after the producers' last "
                            f"acknowledgement; its poll loop is busy {poll:.0%} of the time, a fetch takes "
                            f"{fetch_latency:.2f} ms"}
    waiting = min(1.0, fetch_latency / 1000 * fetch_rate)
    return {"name": "fetch wait", "utilisation": waiting,
            "evidence": f"the poll loop is busy {poll:.0%} of the time and waits for fetch responses "
                        f"({fetch_latency:.2f} ms each): larger fetches (max.partition.fetch.bytes) or more "
                        f"partitions per broker keep more in flight"}


def consumer_report(s, consumers, send_start: np.ndarray, value_size: np.ndarray, cluster,
                    last_ack: float | None = None) -> list[dict]:
    """Per group: ConsumerPerformance's line (start at 0, the consumers' start; end at the last record; bytes are
    the values'), the consumer's fetch metrics over the group, the end-to-end latency of our producers' records
    sent after the group joined (send() to the poll() that returned them), and what limits the group."""
    out = []
    for g in range(s.consumers.groups):
        members = [c for c in consumers if c.group == g]
        records = sum(c.consumed for c in members)
        end = max((c.last_at for c in members if c.consumed), default=0.0)
        joined = min((c.assigned_at for c in members if c.partitions), default=0.0)
        fetches = [f for c in members for f in c.fetches]
        polled = [(t, batch) for c in members for t, batch in c.polled]
        prefilled = records - sum(batch.records for _, batch in polled)
        mb = (prefilled * s.workload.record_size + sum(int(value_size[batch.record_ids()].sum())
                                                       for _, batch in polled)) / 1048576.0
        elapsed_ms, rebalance_ms = int(end * 1000), int(joined * 1000)
        fetch_ms = max(1, elapsed_ms - rebalance_ms)
        seconds = max(elapsed_ms, 1) / 1000.0
        line = (f"{_clock(0.0)}, {_clock(end)}, {mb:.4f}, {mb / seconds:.4f}, {records}, {records / seconds:.4f}, "
                f"{rebalance_ms}, {fetch_ms}, {mb / (fetch_ms / 1000):.4f}, {records / (fetch_ms / 1000):.4f}")
        sent = np.array([f[0] for f in fetches]) if fetches else np.zeros(0)
        back = np.array([f[1] for f in fetches]) if fetches else np.zeros(0)
        nrec = sum(f[2] for f in fetches)
        nbytes = sum(f[3] for f in fetches)
        span = max(end - joined, 1e-9)
        metrics = {
            "fetch-latency-avg": float(np.mean(back - sent) * 1000) if fetches else 0.0,
            "fetch-rate": len(fetches) / span,
            "fetch-size-avg": nbytes / max(1, len(fetches)),
            "records-per-request-avg": nrec / max(1, len(fetches)),
            "bytes-consumed-rate": nbytes / span,
            "records-consumed-rate": records / span,
            "records-lag-max": max((c.lag_max for c in members), default=0),
        }
        # end to end, send() to poll(), of the records sent once the group reads: not the backlog of what was sent
        # while it joined
        sends = [send_start[batch.record_ids()] for _, batch in polled]
        lat = np.concatenate([(t - sent) * 1000.0 for (t, _), sent in zip(polled, sends)] + [np.zeros(0)])
        lat = lat[np.concatenate(sends + [np.zeros(0)]) >= joined]
        e2e = None
        if lat.size:
            e2e = {"avg": float(lat.mean()), "p50": float(np.percentile(lat, 50)),
                   "p99": float(np.percentile(lat, 99)), "p999": float(np.percentile(lat, 99.9)),
                   "max": float(lat.max())}
        bottleneck = consumer_bottleneck(members, cluster, span, metrics["fetch-latency-avg"],
                                         len(fetches) / span / max(1, len(members)),
                                         None if last_ack is None else end - last_ack)
        out.append({"group": g, "instances": len(members), "partitions": sum(len(c.partitions) for c in members),
                    "bottleneck": bottleneck,
                    "perf_test": {"line": line, "records": records, "mb": mb, "mb_per_sec": mb / seconds,
                                  "records_per_sec": records / seconds, "rebalance_ms": rebalance_ms,
                                  "fetch_ms": fetch_ms, "fetch_records_per_sec": records / (fetch_ms / 1000)},
                    "metrics": metrics, "end_to_end_ms": e2e})
    return out
