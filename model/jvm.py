"""A Java producer's JVM: its JIT warm-up (HotSpot tiered compilation) and its garbage collector.

A new JVM runs the producer's code interpreted, then as C1 code with profiling, and only after thousands of
runs through a method as C2 code, while its compiler threads (C1 and C2) take CPU from the client host's cores.
Both cost. On a small host shared with the brokers they decide perf-test's first seconds: measured here, a
10-second throttled run's p99 fell from ≈ 1 s to ≈ 30 ms with C2 turned off (-XX:TieredStopAtLevel=1).

Each path's code warms with its own use, not with time: HotSpot compiles a method once it has been invoked
often enough (Tier3InvocationThreshold 200, Tier4InvocationThreshold 5000). The worker's path runs once per
record and warms within its first records; the Sender's request path runs once per request, so it stays slow for
its first requests, which at 60 records per request carry many records; its completion paths run once per batch and
once per record (the callbacks), and warm with those. A throttled run's catch-up burst thus queues behind
a cold Sender (measured: record-queue-time-max within 30 ms of the p99 in every throttled run), not a cold worker.
Measured (python -m kafkasim.validation.jit, 2026-11-22): beyond its costs per request and per byte the Sender
took a fixed ≈ 0.65 CPU-s in runs of 343 to 13,334 requests, most of it in the first few hundred; with tiny
requests (1 record each, 2000/s) its CPU per request also kept a slow tail, 2.7× its final cost at 3000 requests
and 1.3× at 13,000 (C1 code until C2 takes over). The local-2core profile takes the first: cold 13, e-folding 300
requests (12 × 300 × ≈ 180 µs ≈ 0.65 CPU-s), and leaves the tail out.

Its collector (G1) works for what the producer allocates and keeps: each record sent allocates its objects
(the record, its future, the callback), and a young collection copies those still alive, so its CPU grows with the
records sent and with how many the producer holds and for how long. Measured here (`calibrate host`, the GC
threads' CPU of HostCosts runs; perf-test runs agree, environment.cpu_during_run.client_threads.gc): ≈ 0.2 us a
record plus ≈ 1.7 us a second for each record held, 0.004-0.19 cores on runs of 10k-350k records/s.

Measured since (`calibrate host`'s cold run and four sessions' transfer runs, validation/reports/
cold-sender-2026-11-27-s22/): the Sender's extra CPU follows wall time, not its own invocations, a·(1 − e^(−t/τ))
by time t (a 1.3–1.7 CPU-s, τ ≈ 4 s here), as much in a throttled run as in a flat-out one: where a profile has it
(jvm.sender_cold_cpu_ms) the Sender is charged that as it completes responses, and its paths take no cold factor.

Simplified: one slowdown for all of a thread's Java code, falling exponentially with that thread's count of
records (worker) or the Sender's requests, batches and callbacks, each counted on its own: 1 + (cold − 1)·exp(−n /
jvm.warm_invocations). Native work (the codecs'
JNI code, the kernel's socket writes) and the worker's bulk copies of a value's bytes (intrinsics) are not slowed:
the cold factor is measured on the Sender's per-request, batch and record paths. The compilers are two passing
threads that spend jvm.jit_cpu_ms between them, each busy half the time.
"""
from __future__ import annotations

import math
from typing import Generator

import simpy

from kafkasim.model.host import Host, slices

C1_SHARE = 0.3      # of the compile CPU, on the C1 thread (measured 1.2 of 4.2 CPU-s; the rest is C2's)
# Compilation is not one burst: methods turn hot as the run goes, and each compiler thread works about half the
# time. Measured here (python -m kafkasim.validation.jit, 64 KiB batches, 1 and 6 partitions, 2026-11-22): C2 took
# 0.4-0.6 cores in every second of the first 8-15 s, C1 0.2-0.45 cores in its first 3 s.
DUTY = 0.5
# How often the collector's owed CPU is charged. Simplified: G1's young collections stop the Java threads while its
# workers copy; the model runs the same CPU as one more thread beside them, in pieces of this period's worth.
GC_TICK = 0.01
SENDER_PATHS = ("sender", "drain", "completion", "callback")


class Jvm:
    """One producer JVM, started at time 0: how warm each path's code is, its compiler threads, and its collector."""

    def __init__(self, env: simpy.Environment, host: Host, jit_seconds: float, cold_factor: float,
                 warm_invocations: float, gc_record: float = 0.0, gc_held: float = 0.0,
                 sender_cold: float = 0.0, sender_cold_s: float = 4.3):
        self.env = env
        self.host = host
        self.cold = cold_factor
        self.warm = warm_invocations
        # the Sender's extra CPU as its code warms, by wall time (sender_owed), where measured: its paths then
        # take no cold factor
        self.sender_cold, self.sender_cold_s, self.sender_at = sender_cold, sender_cold_s, 0.0
        # runs through each path so far: records sent, requests built, batches drained into them, batches
        # completed, records' callbacks
        self.runs = {"worker": 0, "sender": 0, "drain": 0, "completion": 0, "callback": 0}
        self.decay = dict.fromkeys(self.runs, 1.0)     # each path's e^(−runs / warm), kept from its last call
        self.compilers = []
        if jit_seconds > 0:
            host.add_threads(2, passing=True)
            self.compilers = [env.process(slices(host, share * jit_seconds, DUTY))
                              for share in (C1_SHARE, 1 - C1_SHARE)]
        if gc_record > 0 or gc_held > 0:
            host.add_threads(1, passing=True)
            env.process(self._collect(gc_record, gc_held))

    def factor(self, path: str, count: int = 1) -> float:
        """How many times its warm CPU cost the next `count` runs through `path` ("worker": records, "sender":
        requests, "drain": batches drained, "completion": batches completed, "callback": records completed) take,
        on average; counts them as run."""
        n, w = self.runs[path], self.warm
        self.runs[path] = n + count
        if self.cold == 1.0 or w <= 0 or (self.sender_cold > 0 and path in SENDER_PATHS):
            return 1.0
        # exp(-k / w) at k = n, or its mean over k = n .. n + count, as an integral
        before = self.decay[path]
        if count == 0:
            cold = before
        else:
            self.decay[path] = after = math.exp(-(n + count) / w)
            cold = w / count * (before - after)
        return 1.0 + (self.cold - 1.0) * cold

    def sender_owed(self, now: float) -> float:
        """The Sender's extra CPU (jvm.sender_cold_cpu_ms) come due between its last call and `now`, from its
        first response on: a·(e^(−t₀/τ) − e^(−t/τ)) over the response's interval."""
        if self.sender_cold <= 0 or now <= self.sender_at:
            return 0.0
        if self.sender_at == 0.0:          # (from its first response on)
            self.sender_at = now
            return 0.0
        last, self.sender_at = self.sender_at, now
        tau = self.sender_cold_s
        return self.sender_cold * (math.exp(-last / tau) - math.exp(-now / tau))

    def settled(self, now: float, within: float = 0.01) -> bool:
        """Whether the warm-up has stopped changing what the threads cost (to `within`): the compilers are done,
        each path's cold factor is within 1 + within of 1, and the Sender's extra CPU still coming due keeps it
        busy for at most that share of its time."""
        if any(p.is_alive for p in self.compilers):
            return False
        paths = ("worker",) if self.sender_cold > 0 else tuple(self.runs)
        if self.cold > 1 and self.warm > 0 and any((self.cold - 1) * math.exp(-self.runs[p] / self.warm) > within
                                                   for p in paths):
            return False
        tau = self.sender_cold_s
        return self.sender_cold <= 0 or self.sender_cold / tau * math.exp(-now / tau) <= within

    @property
    def held(self) -> int:
        """Records sent and not yet completed: what the producer keeps alive in its accumulator and in flight."""
        return self.runs["worker"] - self.runs["callback"]

    def _collect(self, per_record: float, per_held_second: float) -> Generator:
        """The collector's CPU, owed each GC_TICK for what the tick did: `per_record` for each record sent (its
        allocations fill the young generation) and `per_held_second` for each record held for a second (a young
        collection copies what is still alive)."""
        sent = 0
        while True:
            start = self.env.now
            now_sent = self.runs["worker"]
            yield from self.host.run(per_record * (now_sent - sent) + per_held_second * self.held * GC_TICK)
            sent = now_sent
            left = start + GC_TICK - self.env.now
            if left > 0:
                yield self.env.timeout(left)
