"""A freshly started Java producer's JIT warm-up (HotSpot tiered compilation).

A new JVM runs the producer's code interpreted and then as C1 code with profiling, while its compiler threads
(C1 and C2) compile the hot methods. Both cost: the compiler threads take CPU from the client host's cores for
the first seconds, and until compilation is done the producer's own code runs slower. On a small host shared
with the brokers this decides perf-test's first seconds: measured here, a 10-second throttled run's p99 fell
from ≈ 1 s to ≈ 30 ms with C2 turned off (-XX:TieredStopAtLevel=1), and its compiler threads used ≈ 4 CPU-s
(`python -m kafkasim.validation.jit`). Simplified: the work is one amount of CPU shared by a C1 and a C2 thread
in fixed proportion, and the slowdown falls linearly with the compilation done.
"""
from __future__ import annotations

import simpy

from kafkasim.model.host import Host, slices

C1_SHARE = 0.3      # of the compile CPU, on the C1 thread (measured 1.2 of 4.2 CPU-s; the rest is C2's)
# Compilation is not one burst: methods turn hot as the run goes, and each compiler thread works about half the
# time. Measured here (python -m kafkasim.validation.jit, 64 KiB batches, 1 and 6 partitions, 2026-11-22): C2 took
# 0.4-0.6 cores in every second of the first 8-15 s, C1 0.2-0.45 cores in its first 3 s.
DUTY = 0.5


class JitCompiler:
    """The compiler threads of one producer JVM, started with it at time 0."""

    def __init__(self, env: simpy.Environment, host: Host, cpu_seconds: float, cold_factor: float):
        self.total = cpu_seconds
        self.done = 0.0
        self.cold = cold_factor
        host.add_threads(2, passing=True)
        for share in (C1_SHARE, 1 - C1_SHARE):
            env.process(slices(host, share * cpu_seconds, DUTY, done=self._compiled))

    def factor(self) -> float:
        """How many times its warm CPU cost the producer's Java code takes now."""
        return 1.0 + (self.cold - 1.0) * (1.0 - self.done / self.total)

    def _compiled(self, seconds: float) -> None:
        self.done += seconds
