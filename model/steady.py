"""Fast-forward through a run's steady state (model.fast_forward).

A run that has settled only repeats itself: each stretch of it sends and acknowledges as many records, holds as
many in hand, and every kind of counter (CPU, waits, bytes) grows as much. A watcher cuts the run into windows;
once a stretch of them agrees, from as long before it as its records took to be acknowledged up to now, and nothing
that changes with time is still to come (the JVM warm, no throttle catching up, no disk falling behind its page
cache before the end), the rest of the run is that stretch again and again: each thread's remaining records take
the send and callback times of the stretch's records shifted by its length, its batches and requests repeat, and
every counter grows at its rate; a page cache whose writeback is still to start is extended in closed form. A queue
that grows at a steady rate (more sent than acknowledged each window, everything else level) repeats the same way,
each repeat's acknowledgements coming sent ÷ acknowledged stretches after its sends, while its batches leave full
and its buffer has room for it to the last send. Consumers reading along repeat their polls and fetches with it.
tests/test_model_steady.py holds shipped examples' figures near those of the run simulated to its end.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from kafkasim.model.host import Host
from kafkasim.model.results import BATCH_COLUMNS, REQUEST_COLUMNS, columns
from kafkasim.model.steady_consumers import repeat_consumers
from kafkasim.model.worker import application_seconds

WINDOWS = 6               # windows that must agree at least; the stretch repeated is five of them or more
NOISE = 0.01              # ... or as many as its mean wait needs to be known to within this (its standard error)
SPREAD_WINDOWS = 20       # windows (at most) the waits' spread is taken over
MIN_RECORDS = 2000        # acknowledgements a window needs to be judged by (windows are sized for twice this)
MIN_REQUESTS = 25         # ... and requests (the five windows repeated hold over 100)
MIN_FETCHES = 10          # ... and consumers' fetches (each a few ms of every partition's records)
SPREAD = 0.05             # each window's rates within this of their mean
DRIFT = 0.02              # and the later windows' mean within this of the earlier ones'
COUNTER_DRIFT = 0.05      # ... for every kind of counter (waits and window-full times move a lot from window to window)
FIRST_WINDOW = 0.002      # seconds
MAX_MARKS = 128           # windows looked back over for a stretch whose records are all acknowledged


class Mark(NamedTuple):
    """The run at a window's boundary."""
    time: float
    sent: int
    acked: int
    behind: int                   # records the throttles have let go, not yet sent
    batches: tuple[int, ...]      # each Sender's batches drained and requests sent so far
    requests: tuple[int, ...]
    counters: np.ndarray          # every holder's STEADY_COUNTERS, in order
    clocks: np.ndarray            # ... and STEADY_CLOCKS
    used: tuple[int, ...]         # each producer's buffer memory in use
    consumed: int                 # records the consumers have polled
    fetches: int                  # ... and the fetches they have had back


class Extension(NamedTuple):
    """What the settled stretch adds to the run's batches and requests: their columns, tiled, and the requests
    themselves as often (their broker times are differences: the same at any shift); where it starts repeating."""
    start: float
    batches: dict[str, np.ndarray]
    requests: dict[str, np.ndarray]
    request_objects: list


def _holders(sim) -> list:
    """Every object whose counters the results read, once each."""
    objects = [wk for p in sim.producers for wk in p.workers]
    objects += [p.accumulator.pool for p in sim.producers] + [p.sender for p in sim.producers]
    conns = [c for p in sim.producers for c in p.sender.connections.values()]
    objects += conns + [pipe for c in conns for pipe in c.out_pipes + c.back_pipes]
    cluster = sim.cluster
    objects += cluster.brokers + [b.disk for b in cluster.brokers] + [b.page_cache for b in cluster.brokers]
    objects += cluster.nic_in + cluster.nic_out + cluster.replication.pipes + cluster.hosts
    objects += [p.host for p in sim.producers]
    for c in sim.consumers:      # (each consumer, its host and NICs, and its connections' flows through them)
        objects += [c, c.host, c.machine.nic_in, c.machine.nic_out]
        objects += [pipe for out, back in c.paths.values() for pipe in out + back]
    seen, out = set(), []
    for o in objects:
        if id(o) not in seen and (getattr(o, "STEADY_COUNTERS", ()) or getattr(o, "STEADY_CLOCKS", ())):
            seen.add(id(o))
            out.append(o)
    return out


def _level(values: np.ndarray, spread: float | None = SPREAD, drift: float = DRIFT, slack: float = 0.0) -> bool:
    """Whether a series (one figure a window) is level: each within `spread` of the mean (None: not judged), the
    second half's mean within `drift` of the first's (plus `slack`, in the series' units)."""
    mean = float(values.mean())
    half = len(values) // 2
    if spread is not None and np.abs(values - mean).max() > spread * abs(mean) + slack:
        return False
    return abs(float(values[half:].mean() - values[:half].mean())) <= drift * abs(mean) + slack


def _detrended(values: np.ndarray) -> np.ndarray:
    """A series less its straight-line trend, about its mean: what is left to judge of a queue's growing waits."""
    x = np.arange(len(values))
    slope, intercept = np.polyfit(x, values, 1) if len(values) > 1 else (0.0, float(values.mean()))
    return values - (intercept + slope * x) + values.mean()


def _spread(values: np.ndarray) -> float:
    """A series' standard deviation as a share of its mean."""
    return float(values.std() / max(values.mean(), 1e-9))


def _merged(values: np.ndarray) -> np.ndarray:
    """A long series' windows merged in runs of k to 2·WINDOWS or more (the latest), each their mean: a long
    stretch of lumpy windows (a full buffer's sends and acknowledgements, a response's worth at a time) is judged
    as one of longer windows, not by its most extreme window."""
    k = len(values) // (2 * WINDOWS)
    if k < 2:
        return values
    n = len(values) // k
    return values[len(values) - k * n:].reshape(n, k).mean(axis=1)


class SteadyState:
    """Watches a Simulation's run for its steady state; `found` fires when it starts, and fast_forward() then
    completes the run from it."""

    def __init__(self, sim):
        self.env, self.records = sim.env, sim.records
        self.workers = [wk for p in sim.producers for wk in p.workers]
        self.producers = sim.producers
        self.consumers = sim.consumers
        self.senders = [p.sender for p in sim.producers]
        self.jvms = [o.jvm for o in sim.producers + sim.consumers if o.jvm is not None]
        self.caches = [b.page_cache for b in sim.cluster.brokers]
        self.horizon = sim.scenario.max_sim_seconds
        self.holders = _holders(sim)
        # (a CPU limit's quota is spent and waited for period by period: windows are whole periods from a start)
        self.period = max((o.period for o in self.holders if isinstance(o, Host) and o.limit), default=0.0)
        self.fields = [(o, name) for o in self.holders for name in getattr(o, "STEADY_COUNTERS", ())]
        self.clock_fields = [(o, name) for o in self.holders for name in getattr(o, "STEADY_CLOCKS", ())]
        self.field_index = {(id(o), name): i for i, (o, name) in enumerate(self.fields)}
        self.clock_index = {(id(o), name): i for i, (o, name) in enumerate(self.clock_fields)}
        kinds = sorted({(type(o).__name__, name) for o, name in self.fields})
        self.kinds = np.array([[kinds.index((type(o).__name__, name)) == k for k in range(len(kinds))]
                               for o, name in self.fields], float)     # field → its kind, for the sums
        self.found = self.env.event()
        self.base: tuple[Mark, Mark] | None = None
        self.growing = False               # the stretch's queue grows: more sent than acknowledged a window
        self.since: Mark | None = None     # where the windows took their length and all has been settled
        self.waited: dict[tuple[float, float], float] = {}     # each window's mean wait, once all acknowledged
        self.env.process(self._watch())

    def _mark(self) -> Mark:
        now = self.env.now
        return Mark(now, sum(wk.sent for wk in self.workers), len(self.records) - self.records.outstanding,
                    sum(wk.behind(now) for wk in self.workers),
                    tuple(len(s.batches) for s in self.senders), tuple(len(s.requests) for s in self.senders),
                    np.array([getattr(o, name) for o, name in self.fields], float),
                    np.array([getattr(o, name) for o, name in self.clock_fields], float),
                    tuple(p.accumulator.pool.total - p.accumulator.pool.available for p in self.producers),
                    sum(c.consumed for c in self.consumers), sum(len(c.fetches) for c in self.consumers))

    def _watch(self):
        length, marks = self._whole(FIRST_WINDOW, math.ceil), [self._mark()]
        self.since = marks[0]
        while True:
            yield self.env.timeout(self._until(length))
            marks.append(self._mark())
            last, before = marks[-1], marks[-2]
            # windows of about twice the records and requests needed to judge one by, and long enough for the
            # records in hand (a full buffer's queue) to take a quarter of the marks kept to be acknowledged: a new
            # length starts afresh
            need = max(MIN_RECORDS / max(1, last.acked - before.acked),
                       MIN_REQUESTS / max(1, sum(last.requests) - sum(before.requests)),
                       MIN_FETCHES / (last.fetches - before.fetches) if last.fetches > before.fetches else 0.0)
            queue = (last.sent - last.acked) / max(1, last.acked - before.acked) / (MAX_MARKS / 4)
            if need > 1:
                scale = min(8.0, 2 * need)
            elif queue > 3:
                scale = queue
            else:      # (shorter where windows hold over 4× what they need, but not so short the queue outgrows them)
                scale = max(2 * need, queue / 3) if need < 0.25 else 1.0
            if scale > 1 or scale < 0.5:
                new = self._whole(length * scale, math.ceil if scale > 1 else math.floor)
                if new != length:
                    length, marks = new, [last]
                    self.since = last                 # (windows of this length from here)
                    continue
            marks = marks[-MAX_MARKS:]
            if not self._settled(marks[-WINDOWS - 1:]):
                self.since, marks = last, [last]          # (settled, if at all, from here)
                continue
            # the stretch: the latest windows whose records are all acknowledged by now, WINDOWS − 1 of them or as
            # many more as the windows' mean waits need for their mean to be known to within NOISE (a queue that
            # swings over many windows needs many); every window alike from as long before it as its records took
            # to be acknowledged (what they met on the way: batches queued behind earlier ones) to now
            end = max((i for i, m in enumerate(marks) if m.sent <= last.acked), default=0)
            lag = len(marks) - 1 - end
            if end < WINDOWS - 1:
                continue
            # (a queue that grows at a steady rate, more sent than acknowledged each window: its waits grow
            # along a straight line, and what is judged is their spread about it)
            recent = marks[max(0, end - SPREAD_WINDOWS):end + 1]
            growing = recent[-1].sent - recent[0].sent > (1 + SPREAD) * (recent[-1].acked - recent[0].acked)
            waits = self._waits(recent)
            # (... and its acknowledgements' rate, which sets how far each repeat's come after its sends, to NOISE)
            spread = (max(_spread(_detrended(waits)), _spread(np.diff([m.acked for m in recent]).astype(float)))
                      if growing else _spread(waits))
            size = max(WINDOWS - 1, math.ceil((spread / NOISE) ** 2))
            start = min(end - size - lag, len(marks) - 1 - WINDOWS)
            if start < 0 or not self._alike(marks[start:], growing):
                continue
            # (records are acknowledged partition by partition, not in the order sent: a window or two earlier)
            end = next((e for e in range(end, max(end - 3, start + size - 1), -1)
                        if self._acked(marks[e - size], marks[e])), None)
            if end is None:
                continue
            waits = self._waits(marks[end - size:end + 1])
            if (_level(_detrended(waits) if growing else waits, None, COUNTER_DRIFT)
                    and (not growing or self._room(marks[end - size], marks[end], last))):
                self.base, self.growing = (marks[end - size], marks[end]), growing
                self.found.succeed()
                return

    def _whole(self, length: float, rounding) -> float:
        """A window's length, in whole CFS periods (rounded as `rounding` says, one at least) where one applies."""
        return self.period * max(1, rounding(round(length / self.period, 6))) if self.period else length

    def _until(self, length: float) -> float:
        """How long the next window lasts: `length`, ending on a CFS period's boundary where one applies."""
        now = self.env.now
        return (round((now + length) / self.period) * self.period - now) if self.period else length

    def _alike(self, marks: list[Mark], growing: bool = False) -> bool:
        """Records sent and acknowledged a window, records in hand (or, `growing`, what they grow by a window) and
        every counter's growth level."""
        sent, acked = (np.diff([getattr(m, k) for m in marks]).astype(float) for k in ("sent", "acked"))
        held = np.array([m.sent - m.acked for m in marks], float)
        per_request = acked.sum() / max(1, sum(marks[-1].requests) - sum(marks[0].requests))
        # (acknowledgements come a request's records at a time)
        held_level = (_level(_merged(np.diff(held)), slack=2 * per_request) if growing
                      else _level(held, None, slack=2 * per_request))
        if not (_level(_merged(sent)) and _level(_merged(acked), slack=per_request) and held_level):
            return False
        if self.consumers:        # (each group reads along with the producers, as many records a window, in as
            consumed, fetches = (np.diff([getattr(m, k) for m in marks]).astype(float)       # many fetches)
                                 for k in ("consumed", "fetches"))
            groups = len({c.group for c in self.consumers})
            if growing or not (_level(_merged(consumed), slack=groups * per_request)
                               and _level(_merged(fetches), slack=2.0)       # (a fetch or two a window)
                               and abs(consumed.mean() - groups * acked.mean())
                               <= SPREAD * groups * acked.mean() + per_request):
                return False
        # Each kind of counter summed over its holders (one connection's or pipe's share moves from window to
        # window where a sticky partitioner moves between brokers; their sum is what must be level), to 5 % of its
        # growth or of its holders' time (a count of seconds that comes in lumps: waits, a full in-flight window)
        growth = np.diff(np.array([m.counters for m in marks]), axis=0) @ self.kinds
        window = marks[1].time - marks[0].time
        floor = 0.005 * window                  # (counters that barely move are not judged)
        slack = floor + COUNTER_DRIFT * window * self.kinds.sum(axis=0)
        return all(_level(g, None, COUNTER_DRIFT, s) for g, s in zip(growth.T, slack) if abs(g.mean()) > floor)

    def _settled(self, marks: list[Mark]) -> bool:
        """Nothing still to change with time: each JVM warm, no throttled producer catching up to end before the
        run does, and each page cache's backlog on its disk kept below the dirty limit (where appends would start
        to wait) to the run's likely end, whether writeback started before these windows or starts on the way."""
        now = self.env.now
        span = marks[-1].time - marks[0].time
        if not all(jvm.settled(now) for jvm in self.jvms):
            return False
        if any(c.cold_left > 0 or (c.partitions and not c.assigned_at < marks[0].time) for c in self.consumers):
            return False           # (a consumer still joining or running cold code)
        acked = marks[-1].acked - marks[0].acked
        end = now + self.records.outstanding * span / acked if acked else np.inf
        if end > self.horizon:               # (the run would be cut short first)
            return False
        # A throttled producer catching up on its schedule sends faster than it will once it has (unless its
        # schedule has let every record go: then it sends at its own pace to the end).
        behind, before = marks[-1].behind, marks[0].behind
        if (DRIFT * (marks[-1].sent - marks[0].sent) < behind < before and now + behind * span / (before - behind) < end
                and any(wk.release is not None and wk.release[-1] > now for wk in self.workers)):
            return False
        for cache in self.caches:
            limit = (1 - DRIFT) * cache.dirty_limit           # (bytes queued on the disk)
            if cache.flushing:       # (the backlog's trend, as the fast-forward extends it)
                if marks[0].counters[self._counter(cache, "pending")] != cache.pending:
                    return False     # (writeback began within these windows: they straddle two regimes)
                backlog = [max(0.0, m.clocks[self._clock(cache.disk)] - m.time) * cache.disk.rate for m in marks]
                if max(backlog[-1], backlog[-1] + (backlog[-1] - backlog[0]) * (end - now) / span) >= limit:
                    return False
            elif cache.peak_backlog(now, end, self._rate(marks, cache, "pending")) >= limit:
                return False
        return True

    def _room(self, m0: Mark, m1: Mark, now: Mark) -> bool:
        """A growing queue keeps to the stretch's pace until the last send: its batches leave full (else a longer
        queue would fill them further, and the brokers acknowledge more a request), each producer's buffer memory
        in use, growing as in the stretch, stays below buffer.memory (else sends start to wait for it: a regime of
        its own), and its last record's wait, growing as its records' waits grow, below delivery.timeout.ms."""
        period = m1.time - m0.time
        drained = [b for s, b0, b1 in zip(self.senders, m0.batches, m1.batches) for b in s.batches[b0:b1]]
        if sum(b.full_at < np.inf for b in drained) < (1 - SPREAD) * len(drained):
            return False
        for p, used0, used1, used in zip(self.producers, m0.used, m1.used, now.used):
            left = sum(wk.count - wk.sent for wk in p.workers)
            sent, acked = self._counts(p, m0, m1)
            if left <= 0:
                continue
            if not acked:          # (a producer none of whose records came back in the stretch)
                return False
            sending = left * period / max(sent, 1)          # (seconds of sending still to come)
            pool, accumulator = p.accumulator.pool, p.accumulator
            if pool.total and used + (used1 - used0) / period * sending >= (1 - DRIFT) * pool.total:
                return False
            wait = self._wait(m0, m1) + (sent / acked - 1) * (now.time - m1.time + sending)
            if wait >= (1 - DRIFT) * accumulator.delivery_timeout:
                return False
        return True

    def _counts(self, producer, m0: Mark, m1: Mark) -> tuple[int, int]:
        """A producer's records sent from m0 to m1, and its records acknowledged in that time."""
        done, sent, acked = self.records.completed, 0, 0
        for wk in producer.workers:
            a, e = self._sent_between(wk, m0.time, m1.time)
            mine = done[wk.first_id:wk.first_id + wk.count]
            sent, acked = sent + e - a, acked + int(np.count_nonzero((mine >= m0.time) & (mine < m1.time)))
        return sent, acked

    def _rate(self, marks: list[Mark], o, name: str) -> float:
        """How fast a counter grew over the marks, a second."""
        i = self._counter(o, name)
        return (marks[-1].counters[i] - marks[0].counters[i]) / (marks[-1].time - marks[0].time)

    def _counter(self, o, name: str) -> int:
        return self.field_index[id(o), name]

    def _clock(self, o) -> int:
        return self.clock_index[id(o), "free_at"]

    def _acked(self, m0: Mark, m1: Mark) -> bool:
        """Every record the stretch from m0 to m1 sent acknowledged, and each thread still sending sent in it."""
        done = self.records.completed
        for wk in self.workers:
            a, e = self._sent_between(wk, m0.time, m1.time)
            if (e == a and e < wk.first_id + wk.count) or np.isnan(done[a:e]).any():
                return False
        return True

    def _sent_between(self, wk, first: float, last: float) -> tuple[int, int]:
        """The ids [a, e) of a thread's records whose send() began from `first` to before `last`."""
        lo = wk.first_id
        a, e = np.searchsorted(self.records.send_start[lo:lo + wk.count], (first, last))
        return lo + int(a), lo + int(e)

    def _waits(self, marks: list[Mark]) -> np.ndarray:
        """Each window's mean time from send to acknowledgement, over its records acknowledged by now."""
        return np.array([self._wait(m0, m1) for m0, m1 in zip(marks, marks[1:])])

    def _wait(self, m0: Mark, m1: Mark) -> float:
        """The mean wait of the records sent from m0 to m1 (kept once all are acknowledged)."""
        if (m0.time, m1.time) in self.waited:
            return self.waited[m0.time, m1.time]
        send, done = self.records.send_start, self.records.completed
        total, count, known = 0.0, 0, 0
        for wk in self.workers:
            a, e = self._sent_between(wk, m0.time, m1.time)
            took = done[a:e] - send[a:e]
            total, count, known = total + np.nansum(took), count + e - a, known + np.count_nonzero(~np.isnan(took))
        mean = float(total / max(known, 1))
        if known == count:         # (all acknowledged: it stays so)
            self.waited[m0.time, m1.time] = mean
        return mean

    def fast_forward(self) -> Extension:
        """Complete the run from the settled stretch: every thread's remaining records, the counters and the
        clocks as that stretch repeats; the batches and requests it adds. The Environment's clock ends at the last
        acknowledgement. A growing queue (self.growing) acknowledges a stretch's records over `ratio` times the
        stretch (each producer's records sent ÷ acknowledged in it), so each repeat's acknowledgements come that
        much later, and the batches drained in a stretch were filled over 1 / ratio of it."""
        (m0, m1), records = self.base, self.records
        period = m1.time - m0.time
        send, done, failed = records.send_start, records.completed, records.failed
        spans = [self._sent_between(wk, m0.time, m1.time) for wk in self.workers]     # (each thread's stretch)
        ratios = {p: 1.0 for p in self.producers}
        if self.growing:     # (a producer done sending before the stretch has nothing to repeat: 1)
            for p in self.producers:
                sent, acked = self._counts(p, m0, m1)
                ratios[p] = sent / acked if acked else 1.0
        for wk, (a, e), ratio in zip(self.workers, spans, [ratios[p] for p in self.producers for _ in p.workers]):
            lo = wk.first_id
            if e == lo + wk.count:            # (all sent before the stretch ended)
                continue
            rest, tile = wk.count - (e - lo), e - a
            shift = np.repeat(period * np.arange(1, -(-rest // tile) + 1), tile)[:rest]
            send[e:lo + wk.count] = np.resize(send[a:e], rest) + shift
            done[e:lo + wk.count] = np.resize(done[a:e], rest) + shift * ratio
            failed[e:lo + wk.count] = np.resize(failed[a:e], rest)
        end = float(np.nanmax(done))
        sizes = np.array([e - a for a, e in spans])
        end = max(end, repeat_consumers(self.consumers, records, self.workers, sizes, m0.time, m1.time))
        grown = (end - m1.time) / period
        # (what the application's threads do — send() and its waits for buffer memory — stops with the last send)
        sending = np.array([getattr(o, "STEADY_SENDING", False) for o, _ in self.fields])
        growth = np.where(sending, (float(np.nanmax(send)) - m1.time) / period, grown)
        # Each kind of counter grows at its stretch's rate, shared among its holders as since the windows began
        # (a noisy stretch would favour whichever connection a sticky partitioner stayed on in it).
        since, own = m1.counters - self.since.counters, m1.counters - m0.counters
        kind_since, kind_own = ((since @ self.kinds) @ self.kinds.T, (own @ self.kinds) @ self.kinds.T)
        share = np.clip(np.divide(since, kind_since, out=np.zeros_like(since), where=kind_since > 0), 0.0, 1.0)
        final = m1.counters + np.where(kind_since > 0, share * kind_own, own) * growth
        # (... and so does the CPU its threads take on their host: none of it from the last send to the end)
        tail = end - float(np.nanmax(send))
        grew = lambda o, name: m1.counters[self._counter(o, name)] - m0.counters[self._counter(o, name)]  # noqa: E731
        for p in self.producers:
            cpu = application_seconds(p.workers, [p.accumulator.pool], grew)
            final[self._counter(p.host, "busy_seconds")] -= cpu / period * tail
        # A page cache whose writeback has yet to start takes its appends in closed form, its disk with it.
        waiting = [c for c in self.caches if not c.flushing]
        closed = {id(o) for c in waiting for o in (c, c.disk)}
        for (o, name), value in zip(self.fields, final):
            if id(o) not in closed:
                setattr(o, name, type(getattr(o, name))(value))
        # A clock ahead of its mark (a pipe booked ahead) keeps its backlog's trend, never below none.
        ahead0, ahead1 = m0.clocks - m0.time, m1.clocks - m1.time
        for (o, name), a0, a1 in zip(self.clock_fields, ahead0, ahead1):
            if id(o) not in closed:
                setattr(o, name, end + max(0.0, a1 + (a1 - a0) * grown) if a1 > 0 else end + min(0.0, a1))
        for cache in waiting:
            cache.pending = int(m1.counters[self._counter(cache, "pending")])
            cache.extend(m1.time, end, float(self._rate([m0, m1], cache, "pending")))
        tiles = range(1, math.ceil(grown) + 1)
        tables, requests = [], []
        for p, s, b0, b1, r0, r1 in zip(self.producers, self.senders, m0.batches, m1.batches, m0.requests, m1.requests):
            # (the batches drained into the stretch's requests)
            tables.append(_tiled(columns(s.batches[b0:b1], BATCH_COLUMNS, "created", -np.inf)[0],
                                 {"created": period / ratios[p], "drained": period}, tiles, end)[0])
            requests += s.requests[r0:r1]
            del s.batches[b1:], s.requests[r1:]
        self.env._now = end           # (nothing runs after: the clock the results read)
        batch_columns = {k: np.concatenate([t[k] for t in tables]) for k in BATCH_COLUMNS}
        request_columns, kept = _tiled(columns(requests, REQUEST_COLUMNS, "created", -np.inf)[0],
                                       {"created": period, "completed": period}, tiles, end)
        objects = [r for r, keep in zip((r for _ in tiles for r in requests), kept) if keep]
        return Extension(m1.time, batch_columns, request_columns, objects)


def _tiled(table: dict[str, np.ndarray], shifts: dict[str, float], tiles: range,
           end: float) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The columns repeated once per tile, those of `shifts` moved by theirs a tile, those created by `end`; and
    which of the repeated rows those are."""
    out = {k: np.concatenate([v + shifts.get(k, 0.0) * i for i in tiles]) if len(tiles) else v[:0]
           for k, v in table.items()}
    keep = out["created"] <= end
    return {k: v[keep] for k, v in out.items()}, keep
