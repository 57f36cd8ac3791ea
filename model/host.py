"""Hosts and their cores, the locks threads contend on, and the client processes' machines.

Every CPU-consuming activity (worker threads, the Sender, broker network and I/O threads, replica fetchers)
runs its work with `Host.run`, which holds one of the host's cores for the duration, a slice at a time.
Threads beyond the core count queue for a core, so shared cores show up as waiting. A host with at least as many
cores as threads skips the queue (nothing can wait there), which keeps the common case at one event per piece of
work.
"""
from __future__ import annotations

import heapq
import math
from collections import deque
from typing import Generator

import simpy

from kafkasim.model.pipes import Pipe


class Slots:
    """`capacity` interchangeable units (cores, a GIL, a thread pool, a monitor) handed out first come, first served.
    A free unit is taken at once, without an event (a simpy.Resource schedules one for every grant); a waiter waits
    on an event, and a release hands its unit straight to the first waiter. `queue` holds the waiters' events, each
    with its `asked_at`."""

    __slots__ = ("env", "capacity", "users", "queue")

    def __init__(self, env: simpy.Environment, capacity: int):
        self.env = env
        self.capacity = capacity
        self.users = 0
        self.queue: deque[simpy.Event] = deque()

    def take(self, asked_at: float) -> simpy.Event | None:
        """A unit: None if it was free (taken now), else the event that grants it."""
        if self.users < self.capacity and (not self.queue or not GRANT_AT_ONCE):
            self.users += 1
            if GRANT_AT_ONCE:
                return None
            granted = simpy.Event(self.env)     # (as simpy.Resource grants: an event at this instant)
            granted.asked_at = asked_at
            return granted.succeed()
        waiting = simpy.Event(self.env)
        waiting.asked_at = asked_at
        self.queue.append(waiting)
        return waiting

    def give(self) -> None:
        """Release a unit: the first waiter gets it."""
        if self.queue:
            self.queue.popleft().succeed()
        else:
            self.users -= 1


# Take a free unit without an event (Slots.take); tests turn it off to compare with granting through an event.
GRANT_AT_ONCE = True


def wait_for(slots: Slots | None, asked_at: float) -> Generator:
    """Take a unit of `slots` (None: nothing to wait for), waiting if none is free."""
    if slots is not None:
        waiting = slots.take(asked_at)
        if waiting is not None:
            yield waiting


class Turn:
    """A thread's turn on a core: where it stands (its tag), since when, whom it preempted, who preempts it."""

    __slots__ = ("tag", "started", "victim", "borrower", "owed", "paused", "waiting_since", "resume")

    def __init__(self, tag: float, started: float, victim: "Turn | None" = None):
        self.tag, self.started, self.victim = tag, started, victim
        self.borrower: Turn | None = None
        self.owed = 0.0                 # seconds its work was pushed back by threads that preempted it
        self.paused = 0.0               # seconds it was preempted
        self.waiting_since = math.nan   # when its own work ended while it was preempted
        self.resume: simpy.Event | None = None


class Cores(Slots):
    """A crowded host's cores, shared as Linux's EEVDF scheduler shares them, simplified. Each thread has a tag,
    the CPU it has received: a thread that asks for a core is placed at the average tag of the threads running or
    waiting (a thread that slept claims no credit for its sleep; one ahead keeps its own tag). Waiting threads
    get free cores lowest tag first, and a thread whose tag is below the one a running thread started at preempts
    it at once (the preempted one finishes that much later). A thread woken for a short burst (the Sender, a
    broker's network or I/O thread: each hop of a request) thus goes ahead of threads that have run more (a worker
    appending flat out, the compilers); beside threads running in step it waits for the first of their slices to
    end, as Linux lets a thread keep a core until its deadline. (Linux preempts sooner than this; see
    docs/model.md for why the model does not.)"""

    __slots__ = ("virtual", "order", "running", "base", "preemptions")

    def __init__(self, env: simpy.Environment, capacity: int):
        super().__init__(env, capacity)
        self.virtual = 0.0      # the highest tag started: where a thread on an idle host starts
        self.order = 0          # (breaks ties first come, first served)
        self.queue: list = []
        self.running: dict = {}     # thread -> its Turn
        # Σ (tag − started − paused) over the running turns, plus Σ tag over the waiting: the tags' sum is this
        # plus now for each running turn (kept as it changes, not summed at each request)
        self.base = 0.0
        self.preemptions = 0

    def take(self, asked_at: float) -> simpy.Event | None:
        thread = self.env.active_process
        # at the average tag of the threads running (counting what they have run since) and waiting, or its own
        running, waiting = len(self.running), len(self.queue)
        tag = (self.base + running * self.env.now) / (running + waiting) if running + waiting else self.virtual
        own = getattr(thread, "core_tag", 0.0)
        if own > tag:
            tag = own
        if self.users < self.capacity and not waiting:
            self.users += 1
            self._start(thread, tag)
            return None
        victim = self._victim(tag)
        if victim is not None:
            self.preemptions += 1
            self._start(thread, tag, victim)
            return None
        waiting = simpy.Event(self.env)
        waiting.asked_at = asked_at
        self.order += 1
        self.base += tag
        heapq.heappush(self.queue, (tag, self.order, waiting, thread))
        return waiting

    def _victim(self, tag: float) -> Turn | None:
        """The running turn that started furthest ahead of `tag`, if any did (EEVDF: the running thread's deadline
        is later than the woken one's)."""
        best, ahead = None, tag
        for turn in self.running.values():
            if turn.borrower is None and math.isnan(turn.waiting_since) and turn.tag > ahead:
                best, ahead = turn, turn.tag
        return best

    def _start(self, thread, tag: float, victim: Turn | None = None) -> None:
        if tag > self.virtual:
            self.virtual = tag
        turn = Turn(tag, self.env.now, victim)
        self.base += tag - self.env.now
        if victim is not None:
            victim.borrower = turn
        self.running[thread] = turn
        thread.core_tag = tag

    def preempted(self) -> bool:
        """The running thread was preempted during its piece of work."""
        turn = self.running[self.env.active_process]
        return turn.borrower is not None or turn.owed > 0

    def settle(self) -> Generator:
        """The running thread's own work is done: first make up the time threads that preempted it took."""
        turn = self.running[self.env.active_process]
        while turn.borrower is not None or turn.owed > 0:
            if turn.borrower is not None:
                turn.waiting_since = self.env.now
                turn.resume = simpy.Event(self.env)
                yield turn.resume
            else:
                owed, turn.owed = turn.owed, 0.0
                yield self.env.timeout(owed)

    def give(self) -> None:
        thread = self.env.active_process
        turn = self.running.pop(thread)
        self.base -= turn.tag - turn.started - turn.paused
        thread.core_tag = turn.tag + (self.env.now - turn.started - turn.paused)
        victim = turn.victim
        if victim is not None:          # the core goes back to the thread it was taken from
            victim.borrower = None
            victim.paused += self.env.now - turn.started
            self.base -= self.env.now - turn.started
            if math.isnan(victim.waiting_since):
                victim.owed += self.env.now - turn.started
            else:                       # its work had ended: what was left of it when it was preempted
                victim.owed += victim.waiting_since - turn.started
                victim.waiting_since = math.nan
                victim.resume.succeed()
            return
        if self.queue:
            tag, _, waiting, waiter = heapq.heappop(self.queue)
            self.base -= tag
            self._start(waiter, tag)
            waiting.succeed()
        else:
            self.users -= 1


class Host:
    """A machine with `cores` cores (0 = one per thread, never contended). Tracks busy core-seconds."""

    STEADY_COUNTERS = ("busy_seconds", "wait_seconds", "throttled_seconds")

    def __init__(self, env: simpy.Environment, name: str, cores: int, limit: float = 0.0, period: float = 0.1):
        self.env = env
        self.name = name
        self.cores = cores
        self.limit = limit            # cores' worth of CPU its threads may use together (a CFS quota), 0: none
        self.period = period          # the quota's period
        self.period_start, self.quota_used = -1.0, 0.0
        self.throttled_seconds = 0.0  # thread-seconds spent waiting for the next period's quota
        self.threads = 0              # threads that run work here, counted while the run is wired
        self.passing = 0              # threads busy only for a while (JIT compilers): they contend, not crowd
        self.cpu: Cores | None = None
        self.busy_seconds = 0.0       # core-seconds of work done
        self.wait_seconds = 0.0       # thread-seconds spent waiting for a core
        self.parent: Host | None = None
        self.groups: list[Host] = []  # its processes under CPU limits of their own (group)

    def group(self, name: str, limit: float, period: float) -> Host:
        """Processes on this host under a CPU limit of their own (a container beside the brokers, a cgroup's
        quota): its cores and their queue, their own quota and counters."""
        child = Host(self.env, name, self.cores, limit, period)
        child.parent, child.cpu = self, self.cpu
        self.groups.append(child)
        return child

    @property
    def capacity(self) -> float:
        """The cores' worth of CPU its threads can use: its cores, or its CPU limit if that is less."""
        return min(self.cores, self.limit) if self.limit else self.cores

    @property
    def crowding(self) -> float:
        """Threads per core when the host is short of cores, else 1: how much longer a thread waits to be woken."""
        return self.threads / self.cores if 0 < self.cores < self.threads else 1.0

    def add_threads(self, n: int, passing: bool = False) -> None:
        if passing:
            self.passing += n
        else:
            self.threads += n
        if self.parent is not None:        # (a group's threads take the host's cores)
            self.parent.add_threads(n, passing)
        elif 0 < self.cores < self.threads + self.passing and self.cpu is None:
            self.cpu = Cores(self.env, self.cores)
            for child in self.groups:
                child.cpu = self.cpu

    def uncontended(self, gil: Slots | None = None) -> bool:
        """Nothing can make work here wait: the host has a core for every thread, no CPU limit and no GIL is in
        the way. Work is then a plain timeout (or owed arithmetic), the fast paths' common condition."""
        return self.cpu is None and gil is None and not self.limit

    def acquire(self, gil: Slots | None = None) -> Generator:
        """Wait for a core (and, for a Python client, its GIL); returns a token for release()."""
        held = []
        start = self.env.now
        for slots in (gil, self.cpu):
            if slots is not None:
                held.append(slots)
                yield from wait_for(slots, start)
        self.wait_seconds += self.env.now - start
        return held

    def release(self, held: list, busy: float) -> Generator:
        """Give back what acquire() took, `busy` seconds of work done; first wait out the time threads that
        preempted this one took (see Cores). Returns that wait."""
        cpu, waited = self.cpu, 0.0
        if cpu is not None and cpu in held and cpu.preempted():
            start = self.env.now
            yield from cpu.settle()
            waited = self.env.now - start
            self.wait_seconds += waited
        self.busy_seconds += busy
        for slots in reversed(held):
            slots.give()
        return waited

    def run(self, seconds: float, gil: Slots | None = None) -> Generator:
        """Do `seconds` of CPU work on one core; where the host is short of cores, one SLICE at a time, queueing
        again behind whoever waits after each (kafka-python's work, under the GIL, runs to its end: it is kept
        short of the GIL's switch interval anyway)."""
        if seconds <= 0:
            return
        if self.uncontended(gil):
            self.busy_seconds += seconds
            yield self.env.timeout(seconds)
            return
        if gil is None and not self.limit:     # (only the cores in the way: acquire, spend and release in one frame)
            env, cpu = self.env, self.cpu
            while seconds > 0:
                step = seconds if seconds < SLICE * 1.5 else SLICE
                start, waiting = env.now, cpu.take(env.now)
                if waiting is not None:
                    yield waiting
                self.wait_seconds += env.now - start
                yield env.timeout(step)
                if cpu.preempted():
                    start = env.now
                    yield from cpu.settle()
                    self.wait_seconds += env.now - start
                self.busy_seconds += step
                cpu.give()
                seconds -= step
            return
        while seconds > 0:
            step = seconds if gil is not None or seconds < SLICE * 1.5 else SLICE
            held = yield from self.acquire(gil)
            yield from self.spend(step)
            yield from self.release(held, step)
            seconds -= step

    def spend(self, seconds: float) -> Generator:
        """`seconds` of CPU on a core the thread holds. Under a CPU limit (Linux's CFS quota, a container's or a
        task's limit) the host's threads together get limit × period of CPU each period; once it is spent they
        wait for the next period (throttled). Returns that wait."""
        env, period, throttled = self.env, self.period, 0.0
        if not self.limit:
            yield env.timeout(seconds)
            return throttled
        while seconds > 1e-12:        # (what float sums leave over is no work)
            now = env.now
            start = math.floor(now / period + 1e-9) * period      # (a wait that ends on the boundary is past it)
            if start != self.period_start:
                self.period_start, self.quota_used = start, 0.0
            left = self.limit * period - self.quota_used
            if left <= 1e-12:
                throttled += start + period - now
                yield env.timeout(start + period - now)
                continue
            step = min(seconds, left, start + period - now)
            self.quota_used += step
            yield env.timeout(step)
            seconds -= step
        self.throttled_seconds += throttled
        return throttled


# A thread holds a crowded core for at most this much CPU before the threads waiting get their turn: Linux's base
# slice, 0.75 ms × (1 + log2 of the CPU count) on 2 CPUs. Without it a thread with long pieces of work takes more
# than its share: a cold Sender (≈ 2 ms a request) would drain a throttled run's start-up queue at 0.6-0.9 of a
# core, where Linux gave it 0.3-0.4 beside the compilers and the worker (64 KiB at 20k records/s, per 100 ms:
# python -m kafkasim.validation.jit --interval 0.1 on a cluster warmed by a first run), and that queue sets the
# run's p99. (A worker thread's chunk of appends alone on its producer, at most a batch's worth of records, is not
# cut: a thread with a lower tag preempts it, see Cores.)
SLICE = 0.0015


def slices(host: Host, cpu_seconds: float, duty: float = 1.0) -> Generator:
    """A passing thread's life: `cpu_seconds` of work (math.inf: until the run ends) in SLICE pieces, each
    followed by enough idle time to keep it busy a `duty` fraction of the time."""
    idle = SLICE * (1.0 - duty) / duty
    left = cpu_seconds
    while left > 0:
        step = min(SLICE, left)
        yield from host.run(step)
        left -= step
        if idle > 0:
            yield host.env.timeout(idle)


def add_background(host: Host, cores: float) -> Host:
    """Other processes' load on a host (a noisy neighbour, whatever else a shared machine runs): `cores` cores'
    worth of CPU for the whole run (none if 0), on ⌈cores⌉ threads that contend for the host's cores like the
    producer's own. Simplified: steady, where a real neighbour comes in bursts. Returns the host."""
    threads = math.ceil(cores)
    if threads:
        host.add_threads(threads, passing=True)
    for _ in range(threads):
        host.env.process(slices(host, math.inf, cores / threads))
    return host


def trigger_at(env: simpy.Environment, event: simpy.Event, when: float) -> None:
    """Succeed `event` at time `when` with one scheduled event (what simpy.Timeout does for its own event)."""
    event._ok = True
    event._value = None
    env.schedule(event, delay=max(0.0, when - env.now))


def call_at(env: simpy.Environment, when: float, callback) -> None:
    """Run callback(event) at exactly `when`, which may lie ahead of a later caller's now (env.timeout takes a
    delay from now, and now + (when − now) can round off `when`)."""
    event = simpy.Event(env)
    event._ok = True
    event._value = None
    event.callbacks.append(callback)
    heapq.heappush(env._queue, (when, simpy.events.NORMAL, next(env._eid), event))


def maybe_slots(env: simpy.Environment, capacity: int, users: int) -> Slots | None:
    """Slots only where users can outnumber the capacity; None means "never waits"."""
    return Slots(env, capacity) if users > capacity else None


def done(slots: Slots | None) -> None:
    if slots is not None:
        slots.give()


class ContendedLock:
    """A Java monitor: holders are serialised, and every extra waiter makes each hold slower
    (cache-line transfer and lock inflation), so throughput falls as threads are added (Kontur VII, XV).

    `transfer`: what a hold costs more when another thread held the lock last, waiting or not. A partition's
    appends run under `synchronized (dq)` (RecordAccumulator.append → tryAppend → ProducerBatch.tryAppend →
    MemoryRecordsBuilder.append), writing the open batch's buffer, its compression stream and its counters: after
    another thread's append those cache lines sit in that thread's core and must come over first (Kontur VI, VII:
    threads sharing the sticky partition). A thread alone on its deque (one thread, or partitions of its own)
    never pays it.
    """

    def __init__(self, env: simpy.Environment, hold_per_record: float, contention_per_record: float,
                 transfer_per_record: float = 0.0):
        self.env = env
        self.hold = hold_per_record
        self.contention = contention_per_record
        self.transfer = transfer_per_record
        self.holder = None            # the thread that held it last
        self.lock = Slots(env, 1)
        self.wait_seconds = 0.0
        self.held_seconds = 0.0

    def hold_for(self, records: int, on_acquire=None, holder=None, host: "Host | None" = None) -> Generator:
        """Hold the lock for `records` appends by thread `holder`; on_acquire(start, seconds_per_record) runs
        once it is held. With `host`, the holder runs on one of its cores meanwhile: it waits for the lock without
        one (a Java monitor parks its waiters), then for a core while holding the lock (a holder the host is short
        of cores for keeps the others waiting). Returns the seconds it waited for that core."""
        env, lock = self.env, self.lock
        start = env.now
        waiting = lock.take(start)
        if waiting is not None:
            yield waiting
        asked = env.now
        self.wait_seconds += asked - start
        # (a host with a core for every thread: nothing to wait for, the hold is counted as busy below)
        core = None if host is None or host.uncontended() else (yield from host.acquire())
        core_wait = env.now - asked
        per_record = self.hold + self.contention * len(lock.queue)
        if self.holder is not holder and self.holder is not None:
            # Every record of the hold pays it: threads contending for a deque interleave record by record in
            # Java. (A chunk that merely follows another thread's, uncontended, pays it too: a small overcharge.)
            per_record += self.transfer
        self.holder = holder
        if on_acquire is not None:
            on_acquire(env.now, per_record)
        held = records * per_record
        if host is not None:
            core_wait += yield from host.spend(held)        # (a CPU limit's wait holds the lock too)
        else:
            yield env.timeout(held)
        if self.contention and lock.queue:
            # Java locks per record: a thread that starts waiting during this chunk slows each record after
            # it arrived, not only the ones after the next acquisition (else chunks hide contention).
            end = env.now
            begun = end - held
            late = sum(end - max(begun, r.asked_at) for r in lock.queue if r.asked_at > begun)
            if late > 0:
                held += self.contention * late / per_record
                yield env.timeout(self.contention * late / per_record)
        self.held_seconds += held
        if core is not None:
            core_wait += yield from host.release(core, held)
        elif host is not None:
            host.busy_seconds += held
        self.lock.give()
        return core_wait


class ClientMachine:
    """A client process's host and its NIC, each way."""

    __slots__ = ("host", "nic_out", "nic_in")

    def __init__(self, host: Host, nic_out: Pipe, nic_in: Pipe):
        self.host, self.nic_out, self.nic_in = host, nic_out, nic_in


class ClientHosts:
    """Where the client processes run, in the order they ask (next): each on a host of its own, on the host shared
    with the brokers (co-located; under a CPU limit, all in one group of its cores), or on `count` client hosts
    taken in turn, whose cores and NIC their processes share (cluster.client_hosts)."""

    def __init__(self, env: simpy.Environment, count: int, cores: int, background: float, nic_bytes_per_second: float,
                 shared: Host | None, limit: float = 0.0, period: float = 0.1):
        self.env, self.count, self.cores, self.background = env, count, cores, background
        self.limit, self.period = limit, period     # each host's CPU limit (hardware.client_cpu_limit)
        self.rate = nic_bytes_per_second
        # beside the brokers, under a limit: the clients' own group of the shared host's cores
        self.shared = shared.group("clients", limit, period) if shared is not None and limit else shared
        self.machines: list[ClientMachine] = []
        self.asked = 0

    def next(self, name: str) -> ClientMachine:
        k, self.asked = self.asked, self.asked + 1
        if self.count and len(self.machines) == self.count:
            return self.machines[k % self.count]
        if self.count:
            name = f"client-host-{k}"
        host = self.shared or add_background(Host(self.env, name, self.cores, self.limit, self.period),
                                             self.background)
        machine = ClientMachine(host, Pipe(f"{name} NIC out", self.rate), Pipe(f"{name} NIC in", self.rate))
        if self.count:
            self.machines.append(machine)
        return machine
