"""Analytic upper bounds on a producer cluster's records/s, from the same hardware costs the simulator charges:
worker threads, the producer's locks, the Sender thread, the in-flight window, client and broker NICs, broker disks
and I/O threads. Each ignores queueing, so each is optimistic; `kafkasim plan` prunes with them before it simulates,
and tests/test_bounds.py holds them above the simulator's throughput over a grid."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kafkasim.model import codec_levels
from kafkasim.model.scenario import Scenario
from kafkasim.model.scenario_fields import LEVEL_KEYS

MBIT = 1e6 / 8
BOUND_SLACK = 0.9         # prune only candidates whose analytic bound is below 90 % of the planned rate


@dataclass(frozen=True)
class Shape:
    brokers: int
    producers: int
    threads: int
    partitions: int

    @property
    def cost(self) -> tuple[int, int, int, int]:
        return (self.brokers, self.producers, self.producers * self.threads, self.partitions)

    def text(self) -> str:
        return (f"{self.brokers} brokers, {self.partitions} partitions, {self.producers} producer"
                f"{'s' if self.producers > 1 else ''} × {self.threads} thread{'s' if self.threads > 1 else ''}")


@dataclass(frozen=True)
class Settings:
    batch_size: int
    linger_ms: float
    compression: str
    max_in_flight: int

    def flat(self) -> dict[str, Any]:
        return {"producer.batch.size": self.batch_size, "producer.linger.ms": self.linger_ms,
                "producer.compression.type": self.compression,
                "producer.max.in.flight.requests.per.connection": self.max_in_flight}

    def text(self) -> str:
        return (f"batch.size={self.batch_size} linger.ms={short(self.linger_ms)} compression.type={self.compression} "
                f"max.in.flight.requests.per.connection={self.max_in_flight}")


class Bounds:
    """Upper bounds on records/s from the hardware profile's costs; each ignores queueing, so each is optimistic."""

    def __init__(self, base: Scenario, catch_up: tuple[float, float] | None = None):
        f = base.flat()
        # one more group, `records` behind the producers, that must read them within `seconds` as they go on
        self.catch_up = catch_up
        self.hw = {k[len("hardware."):]: v for k, v in f.items() if k.startswith("hardware.")}
        self.levels = {codec: codec_levels.of(base, codec) for codec in LEVEL_KEYS}   # (cost, ratio) factors
        self.size = float(f["workload.record_size"])
        self.payload = f["workload.payload"]
        self.acks = f["producer.acks"]
        self.rf = f["topic.replication.factor"]
        self.consumer_groups = f["consumers.groups"]
        self.max_request = f["producer.max.request.size"]
        self.io_threads = f["cluster.broker.num.io.threads"]
        self.net_threads = f["cluster.broker.num.network.threads"]
        self.extra_rtt = f["network.rtt_ms"]
        self.cap_mbit = f["network.bandwidth_mbit"]
        self.colocated = self.hw["colocated_cores"] > 0

    def us(self, key: str) -> float:
        return self.hw[key] * 1e-6

    def ratio(self, codec: str) -> float:
        return 1.0 if codec == "none" else \
            self.hw[f"compression.{codec}.ratio.{self.payload}"] * self.levels.get(codec, (1.0, 1.0))[1]

    def wire(self, st: Settings) -> float:
        return self.size * self.ratio(st.compression)

    def per_batch(self, st: Settings) -> float:
        return max(1.0, st.batch_size / self.wire(st))

    def per_request(self, st: Settings, brokers: int, partitions: int) -> float:
        leaders = min(brokers, partitions)
        batches = min(math.ceil(partitions / leaders), max(1, self.max_request // st.batch_size))
        return self.per_batch(st) * batches

    def send_seconds(self, st: Settings) -> float:
        """One thread's time a record: its send() and the application's own work between sends."""
        h = self.hw
        t = (h["worker.record_us"] + h["worker.app_us"] + h["worker.lock_us"]
             + h["worker.metadata_lock_us"]) * 1e-6 + h["worker.byte_ns"] * 1e-9 * self.size
        if st.compression != "none":
            t += (h[f"compression.{st.compression}.byte_ns"] * self.levels.get(st.compression, (1.0, 1.0))[0]
                  * 1e-9 * self.size)                                              # Java compresses in send()
        return t + h["worker.batch_us"] * 1e-6 / self.per_batch(st)          # the batches it starts

    def client(self, producers: int, threads: int, st: Settings) -> dict[str, float]:
        """Bounds that depend on the producers alone."""
        h = self.hw
        out = {"worker threads": producers * threads / self.send_seconds(st)}
        if threads > 1:
            # The sticky partitioners send every thread to the same partition until its batch is full, so the
            # partition's deque lock serialises the producer's appends; the producer-wide lock always does.
            # Each append there follows another thread's, so it also pays the transfer of the batch's cache lines.
            deque = h["worker.lock_us"] + h["worker.transfer_us"] + h["worker.contention_us"] * (threads - 1)
            meta = h["worker.metadata_lock_us"] + h["worker.metadata_contention_us"] * (threads - 1)
            if deque > 0:
                out["partition deque lock"] = producers / (deque * 1e-6)
            if meta > 0:
                out["producer-wide lock"] = producers / (meta * 1e-6)
        sender = (h["sender.record_us"] * 1e-6 + h["sender.batch_us"] * 1e-6 / self.per_batch(st))
        out["sender thread"] = producers / sender if sender > 0 else math.inf
        out["client NIC"] = producers * h["nic_mbit"] * MBIT / self.wire(st)
        return out

    def request_latency_ms(self) -> float:
        """The least produce-request latency: a round trip, the follower's fetch round trip for acks=all, and the
        broker's own CPU per request."""
        rtt = self.hw["rtt_ms"] + self.extra_rtt
        replication = rtt if self.acks == "all" and self.rf > 1 else 0.0
        return max(1e-3, rtt + replication + (self.hw["broker.request_us"] + self.hw["broker.batch_us"]) / 1000.0)

    def window(self, shape: Shape, st: Settings) -> float:
        leaders = min(shape.brokers, shape.partitions)
        requests = 1000.0 / self.request_latency_ms() * st.max_in_flight * leaders * shape.producers
        return requests * self.per_request(st, shape.brokers, shape.partitions)

    def broker(self, brokers: int, partitions: int, st: Settings, producers: int | None = None) -> dict[str, float]:
        """Bounds that depend on the brokers (and on how many records a request carries); with `producers`, also on
        their connections (None: any number of producers)."""
        h = self.hw
        w = self.wire(st)
        nic = h["nic_mbit"] * MBIT
        out = {"broker NIC in": brokers * nic / (w * self.rf)}
        # every byte leaves the leader once per follower and once per consumer group; a group catching up reads the
        # producers' rate and its lag's on top
        behind, ahead = self.catch_up_rates(brokers, st)
        copies_out = self.rf - 1 + self.consumer_groups + (1 if self.catch_up else 0)
        if copies_out:
            out["broker NIC out"] = max(0.0, brokers * nic - w * (behind + ahead)) / (w * copies_out)
        # (a lag the page cache does not hold is read from disk: beside the writes, at the producers' rate and more)
        reads = 1 if ahead else 0
        out["broker disk"] = max(0.0, brokers * h["disk_mb_s"] * 1e6 - w * ahead) / (w * (self.rf + reads))
        per_record = (h["broker.request_us"] * 1e-6 / self.per_request(st, brokers, partitions)
                      + h["broker.batch_us"] * 1e-6 / self.per_batch(st) + h["broker.byte_ns"] * 1e-9 * w)
        threads = self.io_threads if self.colocated else min(self.io_threads, h["broker_cores"])
        if producers is not None:
            # A broker reads a connection's next request only once it has answered the last (the channel is muted
            # meanwhile): a producer's requests to one broker take one I/O thread at a time.
            threads = min(threads, producers)
        out["broker io-threads"] = brokers * threads / per_record
        if self.cap_mbit:
            out["network cap"] = self.cap_mbit * MBIT / w
        return out

    def catch_up_rates(self, brokers: int, st: Settings) -> tuple[float, float]:
        """Records/s the catching-up group reads beyond the producers' rate: (from the page cache, from disk). Its
        lag is spread over the brokers; it is read from disk where it exceeds what a broker's page cache holds."""
        if not self.catch_up:
            return 0.0, 0.0
        records, seconds = self.catch_up
        extra = records / seconds
        cached = records * self.wire(st) / brokers <= self.hw["page_cache_gib"] * 2**30
        return (extra, 0.0) if cached else (0.0, extra)

    def all(self, shape: Shape, st: Settings) -> dict[str, float]:
        out = self.client(shape.producers, shape.threads, st)
        out.update(self.broker(shape.brokers, shape.partitions, st, shape.producers))
        out["sender in-flight window"] = self.window(shape, st)
        return out


def least(bounds: dict[str, float]) -> tuple[str, float]:
    name = min(bounds, key=bounds.get)
    return name, bounds[name]


# Sustained bandwidths: a short simulation cannot see them (the page cache absorbs tens of ms of disk writes, a
# socket buffer some of the NIC's), so the planner holds candidates to these bounds exactly, not with slack.
SUSTAINED = ("broker disk", "broker NIC in", "broker NIC out", "client NIC", "network cap")


def feasible(bounds: dict[str, float], planned: float) -> tuple[bool, str, float]:
    """Whether no bound rules the planned rate out (CPU bounds with BOUND_SLACK, sustained ones exactly), and
    the binding bound: the violated one if any, else the least."""
    for name, value in sorted(bounds.items(), key=lambda kv: kv[1]):
        if value < planned * (1.0 if name in SUSTAINED else BOUND_SLACK):
            return False, name, value
    name, value = least(bounds)
    return True, name, value


def short(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"
