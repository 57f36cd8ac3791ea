"""Why one scenario is faster than another, in words, from the model's own verdicts and utilisations.

Pure functions of Results and flat scenarios, so they can be tested without Streamlit.
"""
from __future__ import annotations

from typing import Any

from kafkasim.app.ui_fields import to_text
from kafkasim.model.verdict import SATURATED

SAME = 0.03          # throughputs within 3 % are "as fast"
HIDDEN = ("name", "description", "workload.records", "workload.warmup_records")


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """Resolved settings that differ (key, a's value, b's value), in field order; names and run length left out."""
    keys = [k for k in a if k not in HIDDEN] + [k for k in b if k not in a and k not in HIDDEN]
    return [(k, a.get(k), b.get(k)) for k in keys if a.get(k) != b.get(k)]


def _pct(x: float) -> str:
    return f"{x:.0%}"


def explain(name_a: str, a, flat_a: dict, name_b: str, b, flat_b: dict) -> str:
    """One paragraph: which of two results is faster and the reason, citing the slower one's bottleneck and how
    busy that resource is in the faster one. a and b are Results."""
    ra, rb = a.perf_test["records_per_sec"], b.perf_test["records_per_sec"]
    diff = differences(flat_a, flat_b)
    changes = ", ".join(f"`{k}` {to_text(x)} → {to_text(y)}" for k, x, y in diff[:6])
    if len(diff) > 6:
        changes += f" and {len(diff) - 6} more"
    changed = f"They differ in {changes}." if diff else "Their settings are the same."
    if max(ra, rb) <= 0:
        return f"Neither {name_a} nor {name_b} completes any records. {changed}"
    if abs(ra - rb) <= SAME * max(ra, rb):
        return _as_fast(name_a, a, name_b, b, changed)
    (fast_n, fast, rf), (slow_n, slow, rs) = sorted([(name_a, a, ra), (name_b, b, rb)], key=lambda t: -t[2])
    vs, vf = slow.verdict, fast.verdict
    ratio = rf / max(rs, 1e-9)
    text = [f"**{fast_n}** is faster: {rf:,.0f} records/s against {rs:,.0f} ({ratio:.2f}×). {changed}"]
    if vs.get("met"):
        text.append(f"{slow_n} meets its own throughput target ({vs['evidence']}); {fast_n} is asked for more.")
    elif vs["utilisation"] < SATURATED or vs["bottleneck"] == "none":
        # Nothing saturated in the slower one (a short or throttled run): the gap is in how long records wait.
        text.append(f"Nothing in {slow_n} is saturated (busiest: {vs.get('busiest', vs['bottleneck'])} at "
                    f"{_pct(vs['utilisation'])}), "
                    f"so the gap is in how records wait: record-queue-time-avg "
                    f"{slow.metrics['record-queue-time-avg']:.1f} ms in {slow_n} against "
                    f"{fast.metrics['record-queue-time-avg']:.1f} ms, batch-size-avg "
                    f"{slow.metrics['batch-size-avg']:,.0f} B against {fast.metrics['batch-size-avg']:,.0f} B, "
                    f"request-latency-avg {slow.metrics['request-latency-avg']:.1f} against "
                    f"{fast.metrics['request-latency-avg']:.1f} ms.")
    else:
        limit = vs["bottleneck"]
        now = fast.utilisation.get(limit)
        text.append(f"{slow_n} is held back by its **{limit}** ({_pct(vs['utilisation'])} busy): {vs['evidence']}.")
        if now is not None:
            relief = "no longer the limit" if now < SATURATED else "still busy, but it gets more done"
            text.append(f"In {fast_n} the {limit} is {_pct(now)} busy — {relief}.")
        if vf.get("met"):
            text.append(f"{fast_n} meets its throughput target; its busiest resource is at "
                        f"{_pct(vf['utilisation'])}.")
        elif vf["utilisation"] < SATURATED or vf["bottleneck"] == "none":
            text.append(f"Nothing in {fast_n} is saturated (busiest: {vf.get('busiest', vf['bottleneck'])} at "
                        f"{_pct(vf['utilisation'])}).")
        elif vf["bottleneck"] != limit:
            text.append(f"{fast_n}'s own limit is its **{vf['bottleneck']}** ({_pct(vf['utilisation'])}): "
                        f"{vf['evidence']}.")
    text.append(_latency(fast_n, fast, slow_n, slow))
    return " ".join(text)


def _latency(na: str, a, nb: str, b) -> str:
    pa, pb = a.perf_test, b.perf_test
    return (f"Latency: {na} {pa['avg_latency_ms']:.1f} ms avg / p99 {pa['p99_ms']} ms, "
            f"{nb} {pb['avg_latency_ms']:.1f} ms avg / p99 {pb['p99_ms']} ms.")


def _as_fast(na: str, a, nb: str, b, changed: str) -> str:
    text = [f"**{na}** and **{nb}** are as fast ({a.perf_test['records_per_sec']:,.0f} and "
            f"{b.perf_test['records_per_sec']:,.0f} records/s). {changed}"]
    la, lb = a.perf_test["avg_latency_ms"], b.perf_test["avg_latency_ms"]
    if abs(la - lb) > 0.1 * max(la, lb, 1e-9):
        (qn, q), (sn, s) = sorted([(na, a), (nb, b)], key=lambda t: t[1].perf_test["avg_latency_ms"])
        # The record queue time is where the accumulator backlog shows up in the metrics.
        text.append(f"**{qn}** has the lower latency ({q.perf_test['avg_latency_ms']:.1f} against "
                    f"{s.perf_test['avg_latency_ms']:.1f} ms avg): record-queue-time-avg "
                    f"{q.metrics['record-queue-time-avg']:.1f} against {s.metrics['record-queue-time-avg']:.1f} ms, "
                    f"request-latency-avg {q.metrics['request-latency-avg']:.1f} against "
                    f"{s.metrics['request-latency-avg']:.1f} ms.")
    else:
        text.append(_latency(na, a, nb, b))
    busiest = {n: max(r.utilisation, key=r.utilisation.get) for n, r in ((na, a), (nb, b))}
    text.append("Busiest resource: " + "; ".join(
        f"{n} {busiest[n]} {_pct(r.utilisation[busiest[n]])}" for n, r in ((na, a), (nb, b))) + ".")
    return " ".join(text)
