"""A fast-forward's consumers (model.steady): each consumer's polls and fetches of the settled stretch, repeated."""
from __future__ import annotations

import numpy as np


class RepeatedBatch:
    """A batch a repeat polls: the ids of the records it holds (a stretch's batch, its records' ids moved on)."""

    __slots__ = ("ids", "records")

    def __init__(self, ids: np.ndarray):
        self.ids, self.records = ids, len(ids)

    def record_ids(self) -> np.ndarray:
        return self.ids


def repeat_consumers(consumers: list, records, workers: list, tiles: np.ndarray, start: float, end: float) -> float:
    """Each consumer's polls and fetches of the stretch [start, end), again a stretch later each time, for as long
    as the records they return were sent (a repeat's records: each producer thread's ids `tiles` (its records sent
    in the stretch) on, per repeat); each group then reads what its log will hold, its instances in the stretch's
    shares. Returns the last poll."""
    if not consumers:
        return -np.inf
    period = end - start
    firsts = np.array([wk.first_id for wk in workers])
    ends = firsts + np.array([wk.count for wk in workers])
    # (the records every log is still to take: those sent, not failed, less ours it holds now)
    log = consumers[0].log
    ours = sum(n for part in log for n, batch in zip(part.counts, part.batches) if batch is not None)
    coming = int(np.count_nonzero(~records.failed)) - ours
    last, share = -np.inf, {}
    for c in consumers:
        polls = [(t, b.record_ids()) for t, b in c.polled if start <= t < end]
        fetches = [f for f in c.fetches if start <= f[0] < end]
        share[c] = sum(len(ids) for _, ids in polls)
        owner = [np.searchsorted(firsts, ids, "right") - 1 for _, ids in polls]
        k = 1
        while True:      # (a thread that sent nothing in the stretch has no records to come)
            moved = [(t + k * period, ids + k * tiles[w], (ids + k * tiles[w] < ends[w]) & (tiles[w] > 0))
                     for (t, ids), w in zip(polls, owner)]
            again = [(t, RepeatedBatch(ids[keep])) for t, ids, keep in moved if keep.any()]
            if not again:
                break
            c.polled += again
            c.last_at = max(c.last_at, again[-1][0])
            c.fetches += [(f[0] + k * period, f[1] + k * period) + tuple(f[2:]) for f in fetches
                          if f[0] + k * period <= c.last_at]
            k += 1
        last = max(last, c.last_at)
    # each group reads what its instances' partitions hold beyond their positions, what they have fetched and not
    # polled, and what is coming, its instances in the stretch's shares
    unread = {c: sum(log[p].ends[-1] - log[p].ends[c.position[p]] for p in c.partitions)
              + sum(b.records for b in c.buffered) for c in consumers}
    for g in {c.group for c in consumers}:
        members = [c for c in consumers if c.group == g]
        left = sum(unread[c] for c in members) + coming
        stretch = sum(share[c] for c in members)
        for c in members:
            c.consumed += round(left * share[c] / stretch) if stretch else 0
    return last
