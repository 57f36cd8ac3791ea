"""The bottleneck verdict: which resource limits throughput, how busy it is, and the evidence in one sentence."""
from __future__ import annotations

# Resources upstream of the accumulator: when they are saturated the producer cannot even fill it.
UPSTREAM = ("worker threads", "lock contention")
SATURATED = 0.85
LOCK_SHARE = 0.25


def verdict(util: dict, evidence: dict, achieved: float, target: float | None,
            not_limiting: set[str] = frozenset()) -> dict:
    """`not_limiting`: resources busy but not holding anything back (a disk behind a page cache with room)."""
    busiest = max(util, key=util.get)
    if target is not None and achieved >= 0.97 * target:
        return {"bottleneck": "none", "met": True, "busiest": busiest, "utilisation": util[busiest],
                "evidence": f"the target of {target:.0f} records/s is met; the busiest resource is {busiest} "
                            f"at {util[busiest]:.0%}"}
    upstream = util["worker threads"] + util["lock contention"]
    if upstream >= SATURATED:
        # Threads that spend a quarter of their time waiting on each other's locks are held back by contention.
        name = "lock contention" if util["lock contention"] >= LOCK_SHARE * upstream else "worker threads"
        return {"bottleneck": name, "utilisation": upstream, "evidence": evidence[name]}
    downstream = {k: v for k, v in util.items()
                  if k not in UPSTREAM and k != "buffer memory" and k not in not_limiting}
    name = max(downstream, key=downstream.get)
    if downstream[name] < SATURATED and util["buffer memory"] >= 0.5:
        # Threads wait for memory but nothing downstream is saturated: buffer.memory itself is too small.
        name = "buffer memory"
    elif downstream[name] < SATURATED:
        # A resource is named saturated only at or above the threshold.
        return {"bottleneck": "none", "met": False, "busiest": busiest, "utilisation": util[busiest],
                "evidence": f"no resource is {SATURATED:.0%} busy (the busiest: {busiest} at {util[busiest]:.0%}); "
                            f"a run this short may end before its queues settle"}
    return {"bottleneck": name, "utilisation": util[name], "evidence": evidence.get(name, name)}
