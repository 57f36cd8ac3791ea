"""Replica assignment, follower fetchers, the high watermark and acks=all (docs/kafka-internals.md §7).

Followers run `num.replica.fetchers` fetcher threads per source broker. A fetch carries the follower's log end
offset, which is how the leader learns what the follower has; the fetch is parked on the leader until
replica.fetch.min.bytes of new data are there (the FetchRequest's min_bytes; 1 by default: any new batch) or
replica.fetch.wait.max.ms passes. The high watermark is the smallest
offset every in-sync replica has confirmed; an acks=all request is answered once it covers the request's batches.
Offsets here count batches, not records: the model needs only their order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Generator

import numpy as np
import simpy

from kafkasim.model.pipes import transfer

FETCH_REQUEST_BYTES = 100          # a fetch request with one partition; + 30 per extra partition
FETCH_PARTITION_BYTES = 30


def assign_replicas(partitions: int, brokers: int, rf: int, rng: np.random.Generator) -> list[list[int]]:
    """AdminUtils/ReplicaAssignment without racks: leaders round-robin from a random broker, followers shifted
    by a random step that grows every `brokers` partitions."""
    start = int(rng.integers(brokers))
    shift = int(rng.integers(brokers))
    out = []
    for p in range(partitions):
        if p > 0 and p % brokers == 0:
            shift += 1
        leader = (start + p) % brokers
        followers = [(leader + 1 + (shift + j) % max(1, brokers - 1)) % brokers for j in range(rf - 1)]
        out.append([leader] + followers)
    return out


@dataclass
class FetchedBatch:
    """A batch of a fetch response: its partition, records, bytes and, for a batch our producers wrote, the
    ProducerBatch (its record ids give the end-to-end latency)."""
    partition: int
    records: int
    size: int
    batch: object | None


class PartitionState:
    __slots__ = ("leader", "followers", "sizes", "counts", "ends", "written", "batches", "confirmed", "waiters",
                 "hw", "fetch_waiters", "hw_waiters")

    def __init__(self, replicas: list[int]):
        self.leader = replicas[0]
        self.followers = replicas[1:]
        self.sizes: list[int] = []                          # bytes of batch i in the leader's log
        self.counts: list[int] = []                         # its records
        self.ends: list[int] = [0]                          # records in the log up to batch i (a consumer's lag)
        self.written: list[int] = [0]                       # bytes in the log up to batch i (the page cache)
        self.batches: list = []                             # the ProducerBatch it came from (None: written before)
        self.confirmed = {f: 0 for f in self.followers}     # batches each follower has confirmed
        self.hw = 0
        self.waiters: list[tuple[int, simpy.Event]] = []    # produce purgatory: (offset, event)
        self.fetch_waiters: list[simpy.Event] = []          # parked follower fetches
        self.hw_waiters: list[simpy.Event] = []             # parked consumer fetches (they read up to the hw)

    def raise_hw(self, hw: int) -> None:
        self.hw = hw
        self.hw_waiters = wake(self.hw_waiters)


def wake(events: list[simpy.Event]) -> list[simpy.Event]:
    """Fire the parked fetches' events (one may already have fired: it waits on several partitions); the list
    that is left, empty."""
    for event in events:
        if not event.triggered:
            event.succeed()
    return []


class Replication:
    def __init__(self, env: simpy.Environment, s, cluster):
        self.env = env
        self.s = s
        self.cluster = cluster
        self.parts = [PartitionState(r) for r in cluster.assignment]
        b = s.cluster.broker
        self.wait_max = b.replica_fetch_wait_max_ms / 1000.0
        self.fetch_max = b.replica_fetch_max_bytes
        self.min_bytes = b.replica_fetch_min_bytes
        self.one_way = s.hardware["rtt_ms"] / 2000.0       # broker to broker: no client-side network emulation
        self.fetches = 0
        self.bytes = 0
        self.pipes: list = []       # the fetchers' flows through the brokers' NICs

    def start(self) -> None:
        fetchers = self.s.cluster.broker.num_replica_fetchers
        groups: dict[tuple[int, int, int], list[int]] = {}
        for p, state in enumerate(self.parts):
            for f in state.followers:
                groups.setdefault((f, state.leader, p % fetchers), []).append(p)
        # Background partitions (cluster.background_partitions replicas a broker, replicated like the topic) sit in
        # the same fetch sessions: each leader leads bg/RF of them, a follower follows (RF−1)/(n−1) of those.
        n, rf = len(self.cluster.brokers), self.s.topic.replication_factor
        background = self.s.cluster.background_partitions / rf * (rf - 1) / (n - 1) / fetchers if rf > 1 else 0.0
        nic_in, nic_out = self.cluster.nic_in, self.cluster.nic_out
        for (follower, leader, k), partitions in sorted(groups.items()):
            self.cluster.hosts[follower].add_threads(1)
            flow = f"fetcher-{k} of broker-{follower} from broker-{leader}"
            ask = [nic_out[follower].flow(flow), nic_in[leader].flow(flow)]
            answer = [nic_out[leader].flow(flow), nic_in[follower].flow(flow)]
            self.pipes += ask + answer
            self.env.process(self._fetcher(follower, leader, partitions, len(partitions) + background, ask, answer))

    def lag(self, follower: int) -> int:
        """Bytes `follower` has yet to confirm of the partitions it follows (acks=1 lets producers outrun it)."""
        return sum(state.written[-1] - state.written[state.confirmed[follower]]
                   for state in self.parts if follower in state.confirmed)

    # --- the leader's side
    def prefill(self, partition: int, batches: int, size: int, records: int) -> None:
        """What the partition held before the run: `batches` batches of `size` bytes and `records` records each,
        written, replicated and below the high watermark."""
        state = self.parts[partition]
        state.sizes.extend([size] * batches)
        state.counts.extend([records] * batches)
        state.ends.extend(range(state.ends[-1] + records, state.ends[-1] + records * batches + 1, records))
        state.written.extend(range(state.written[-1] + size, state.written[-1] + size * batches + 1, size))
        state.batches.extend([None] * batches)
        state.confirmed = dict.fromkeys(state.followers, len(state.sizes))
        state.hw = len(state.sizes)

    def append(self, partition: int, size: int, records: int = 0, batch=None) -> int:
        """A batch appended on the leader; returns its end offset."""
        state = self.parts[partition]
        state.sizes.append(size)
        state.counts.append(records)
        state.ends.append(state.ends[-1] + records)
        state.written.append(state.written[-1] + size)
        state.batches.append(batch)
        if not state.followers:
            state.raise_hw(len(state.sizes))
        if state.fetch_waiters:
            state.fetch_waiters = wake(state.fetch_waiters)
        return len(state.sizes)

    def read(self, partitions: list[int], position: dict[int, int], partition_max: int, total_max: int) -> list:
        """A consumer fetch's batches: each partition's from `position` up to the high watermark, at most
        partition_max bytes of a partition and total_max in all, but always a first batch (as the broker
        returns an oversized batch rather than none)."""
        out, total = [], 0
        for p in partitions:
            state, got, i = self.parts[p], 0, position[p]
            while i < state.hw:
                size = state.sizes[i]
                if (got and got + size > partition_max) or (total and total + size > total_max):
                    break
                out.append(FetchedBatch(p, state.counts[i], size, state.batches[i]))
                got += size
                total += size
                i += 1
        return out

    def wait_for_data(self, partitions: list[int]) -> simpy.Event:
        """An event that fires when any of the partitions' high watermark moves (a parked consumer fetch)."""
        event = self.env.event()
        for p in partitions:
            self.parts[p].hw_waiters.append(event)
        return event

    def wait(self, broker, request) -> Generator:
        """Produce purgatory: until the high watermark covers every batch of the request."""
        for batch in request.batches:
            state = self.parts[batch.partition]
            if state.hw < batch.offset:
                event = self.env.event()
                state.waiters.append((batch.offset, event))
                yield event

    def _confirm(self, partition: int, follower: int, offset: int) -> None:
        state = self.parts[partition]
        state.confirmed[follower] = max(state.confirmed[follower], offset)
        hw = min(state.confirmed.values())
        if hw > state.hw:
            state.raise_hw(hw)
            still = []
            for off, event in state.waiters:
                if off <= hw:
                    event.succeed()
                else:
                    still.append((off, event))
            state.waiters = still

    def _enough(self, partitions: list[int], fetched: dict[int, int]) -> bool:
        """Whether the leader holds replica.fetch.min.bytes beyond what the follower has of `partitions`."""
        need = self.min_bytes
        for p in partitions:
            sizes = self.parts[p].sizes
            for i in range(fetched[p], len(sizes)):
                need -= sizes[i]
                if need <= 0:
                    return True
        return False

    # --- the follower's fetcher thread
    def _fetcher(self, follower: int, leader: int, partitions: list[int], session: float, ask_path: list,
                 answer_path: list) -> Generator:
        """One replica fetcher of `follower` fetching `partitions` from `leader`; `session`: the partitions in
        its fetch session, ours and the background's, which each fetch costs both sides; its flows through the
        NICs each way."""
        env = self.env
        fetched = {p: len(self.parts[p].sizes) for p in partitions}   # the follower's log end (what was prefilled)
        leader_host, follower_host = self.cluster.hosts[leader], self.cluster.hosts[follower]
        costs = self.cluster.brokers[leader].costs
        handoff = costs.handoff * leader_host.crowding
        # A slow broker (extra_latency_ms) delays what it sends: the follower's fetches, the leader's responses.
        ask, answer = (self.one_way + self.cluster.brokers[b].extra_latency for b in (follower, leader))
        while True:
            size = FETCH_REQUEST_BYTES + FETCH_PARTITION_BYTES * (len(partitions) - 1)
            end = transfer(ask_path, env.now, size)
            yield env.timeout(end - env.now + ask)
            for p in partitions:                       # the fetch offset tells the leader what we have
                self._confirm(p, follower, fetched[p])
            deadline = None
            while not self._enough(partitions, fetched):
                deadline = deadline or env.timeout(self.wait_max)
                event = env.event()
                for p in partitions:
                    self.parts[p].fetch_waiters.append(event)
                yield event | deadline
                if deadline.processed:
                    break
            taken, nbytes, nbatches = {}, 0, 0
            for p in partitions:
                sizes = self.parts[p].sizes
                got, upto = 0, fetched[p]
                while upto < len(sizes) and (got == 0 or got + sizes[upto] <= self.fetch_max):
                    got += sizes[upto]
                    upto += 1
                taken[p] = upto
                nbytes += got
                nbatches += upto - fetched[p]
            # The leader serves the fetch (its own per-fetch cost) and sends the data on a network thread (zero-copy,
            # or copied and encrypted through TLS); it crosses both NICs; the follower appends it to its own log
            # (per batch and byte, and decrypts it through TLS; the per-request cost is the produce path's).
            read = (costs.fetch + costs.fetch_partition * session + costs.network_request
                    + (costs.network_byte + costs.tls_replica) * nbytes)
            append = (costs.follower_fetch + costs.follower_partition * session + costs.batch * nbatches
                      + (costs.byte + costs.follower_byte) * nbytes)
            if leader_host.uncontended() and follower_host.uncontended():
                # No core to wait for: the whole way back is one delay.
                leader_host.busy_seconds += read
                follower_host.busy_seconds += append
                end = transfer(answer_path, env.now + read, nbytes + size)
                yield env.timeout(end - env.now + answer + append + 2 * handoff)
            else:
                yield from leader_host.run(read)
                if handoff:          # the fetch's request and response queues on the leader
                    yield env.timeout(2 * handoff)
                end = transfer(answer_path, env.now, nbytes + size)
                yield env.timeout(end - env.now + answer)
                yield from follower_host.run(append)
            self.cluster.brokers[follower].page_cache.write(env.now, nbytes)
            fetched.update(taken)
            self.fetches += 1
            self.bytes += nbytes
