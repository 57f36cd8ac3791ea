"""Charts and tables of a Result and of predicted-vs-measured runs (Altair and pandas only; no Streamlit calls, no
model logic)."""
from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

from kafkasim.model.verdict import SATURATED

HEADLINE = (("records/s", "records_per_sec"), ("MB/s", "mb_per_sec"), ("avg latency ms", "avg_latency_ms"),
            ("p50 ms", "p50_ms"), ("p95 ms", "p95_ms"), ("p99 ms", "p99_ms"), ("p99.9 ms", "p999_ms"),
            ("max latency ms", "max_latency_ms"))


def metrics_table(metrics: dict, worker_latency_us: float) -> pd.DataFrame:
    rows = [{"metric": "producer-metrics:" + k, "value": float(v)} for k, v in metrics.items()]
    rows.append({"metric": "worker latency (time in send(), us)", "value": float(worker_latency_us)})
    return pd.DataFrame(rows)


def brokers_table(brokers: list[dict]) -> pd.DataFrame:
    rows = []
    for b in brokers:
        total = sum(x["bytes_in"] for x in brokers) or 1
        row = {"broker": b["id"], "state": "offline" if b.get("offline") else "up",
               "own hardware": ", ".join(f"{k}={v:g}" for k, v in b.get("own_hardware", {}).items()),
               "leader partitions": b["leader_partitions"], "share of bytes in": b["bytes_in"] / total}
        row.update({f"{k} busy": v for k, v in b["utilisation"].items()})
        row.update({f"Produce {k}": v for k, v in b["request_time_ms"].items()})
        rows.append(row)
    return pd.DataFrame(rows)


def utilisation_chart(util: dict, bottleneck: str | None = None) -> alt.Chart:
    df = pd.DataFrame({"resource": list(util), "busy": [float(v) for v in util.values()]})
    df["state"] = np.where(df["resource"] == bottleneck, "bottleneck",
                           np.where(df["busy"] >= SATURATED, "saturated", "ok"))
    bars = alt.Chart(df).mark_bar().encode(
        x=alt.X("busy:Q", title="busy fraction", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("resource:N", sort="-x", title=None, axis=alt.Axis(labelOverlap=False, labelLimit=220)),
        color=alt.Color("state:N", scale=alt.Scale(domain=["bottleneck", "saturated", "ok"],
                                                   range=["#d62728", "#ff7f0e", "#1f77b4"]), legend=None),
        tooltip=["resource", alt.Tooltip("busy:Q", format=".1%")])
    rule = alt.Chart(pd.DataFrame({"x": [SATURATED]})).mark_rule(strokeDash=[4, 3], color="gray").encode(x="x:Q")
    return (bars + rule).properties(height=max(140, 28 * len(df)))


def cdf_frame(latencies_ms: np.ndarray, points: int = 400, label: str | None = None) -> pd.DataFrame:
    """The latency distribution at `points` quantiles (enough for a smooth curve, small for the browser)."""
    lat = np.asarray(latencies_ms, dtype=float)
    if len(lat) == 0:
        return pd.DataFrame({"latency ms": [], "fraction": []})
    q = np.linspace(0.0, 1.0, points + 1)
    df = pd.DataFrame({"latency ms": np.quantile(lat, q), "fraction": q})
    if label is not None:
        df["scenario"] = label
    return df


def cdf_chart(df: pd.DataFrame, log_x: bool = False) -> alt.Chart:
    x_scale = alt.Scale(type="symlog") if log_x else alt.Scale()
    enc = dict(x=alt.X("latency ms:Q", scale=x_scale, title="latency (ms, as perf-test measures it)"),
               y=alt.Y("fraction:Q", axis=alt.Axis(format="%"), title="records at or below"),
               tooltip=[alt.Tooltip("latency ms:Q", format=".1f"), alt.Tooltip("fraction:Q", format=".1%")])
    if "scenario" in df:
        enc["color"] = alt.Color("scenario:N")
        enc["tooltip"] = enc["tooltip"] + ["scenario"]
    return alt.Chart(df).mark_line(interpolate="step-after").encode(**enc).properties(height=280)


def timeline_frame(timeline: dict) -> pd.DataFrame:
    return pd.DataFrame({"time s": timeline["time_s"],
                         "accumulator backlog (batches)": timeline["queued_batches"],
                         "requests in flight": timeline["requests_in_flight"]})


def timeline_chart(df: pd.DataFrame) -> alt.Chart:
    long = df.melt("time s", var_name="series", value_name="count")
    return alt.Chart(long).mark_line(interpolate="step-after").encode(
        x=alt.X("time s:Q", title="simulated time (s)"), y=alt.Y("count:Q", title=None),
        color=alt.Color("series:N", legend=alt.Legend(orient="top", title=None)),
        tooltip=["series", "time s", "count"]).properties(height=260)


def sweep_chart(df: pd.DataFrame, setting: str) -> alt.Chart:
    """Throughput and p99 against one setting, two y axes; categorical settings get a nominal x axis."""
    numeric = pd.api.types.is_numeric_dtype(df["value"])
    x = alt.X("value:Q" if numeric else "value:N", title=setting,
              scale=alt.Scale(type="log", base=2) if numeric and (df["value"] > 0).all() and
              df["value"].max() / max(df["value"].min(), 1e-12) >= 16 else alt.Scale(zero=False))
    base = alt.Chart(df).encode(x=x, tooltip=["value", alt.Tooltip("records/s:Q", format=",.0f"), "p99 ms",
                                              "bottleneck"])
    thr = base.mark_line(point=True, color="#1f77b4").encode(
        y=alt.Y("records/s:Q", axis=alt.Axis(titleColor="#1f77b4"), title="records/s"))
    p99 = base.mark_line(point=True, color="#d62728", strokeDash=[5, 3]).encode(
        y=alt.Y("p99 ms:Q", axis=alt.Axis(titleColor="#d62728"), title="p99 latency (ms)"))
    return alt.layer(thr, p99).resolve_scale(y="independent").properties(height=300)


def compare_utilisation_chart(utils: dict[str, dict]) -> alt.Chart:
    rows = [{"scenario": name, "resource": r, "busy": float(v)} for name, u in utils.items() for r, v in u.items()]
    df = pd.DataFrame(rows)
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("busy:Q", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1]), title="busy fraction"),
        y=alt.Y("scenario:N", title=None), color=alt.Color("scenario:N", legend=None),
        row=alt.Row("resource:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left")),
        tooltip=["scenario", "resource", alt.Tooltip("busy:Q", format=".1%")]).properties(height=18 * len(utils))


ROLE_SHAPES = alt.Scale(domain=["calibration", "held-out"], range=["circle", "triangle-up"])
ROLE_COLOURS = alt.Scale(domain=["calibration", "held-out"], range=["#1f77b4", "#ff7f0e"])


def predicted_vs_measured_chart(df: pd.DataFrame, figure: str) -> alt.Chart:
    """Predicted against measured (log axes, the same range on both) with the y = x line; calibration and
    held-out configurations as different markers."""
    values = pd.concat([df["measured"], df["predicted"]])
    lo, hi = (float(values.min()), float(values.max())) if len(values) else (1.0, 10.0)
    scale = alt.Scale(type="log", domain=[lo / 1.3, hi * 1.3], nice=False)
    points = alt.Chart(df).mark_point(filled=True, size=70, opacity=0.8).encode(
        x=alt.X("measured:Q", scale=scale, title=f"measured {figure}"),
        y=alt.Y("predicted:Q", scale=scale, title=f"predicted {figure}"),
        shape=alt.Shape("role:N", scale=ROLE_SHAPES), color=alt.Color("role:N", scale=ROLE_COLOURS, legend=alt.Legend(orient="bottom")),
        tooltip=["config", "role", alt.Tooltip("measured:Q", format=",.4~g"),
                 alt.Tooltip("predicted:Q", format=",.4~g")])
    diagonal = alt.Chart(pd.DataFrame({"measured": [lo, hi], "predicted": [lo, hi]})).mark_line(
        strokeDash=[5, 4], color="gray").encode(x="measured:Q", y="predicted:Q")
    return alt.layer(diagonal, points).properties(height=340)


def error_by_factor_chart(df: pd.DataFrame) -> alt.Chart:
    """Held-out throughput error per value of each factor, one small panel per factor."""
    box = alt.Chart().mark_boxplot(extent="min-max", size=18).encode(
        x=alt.X("value:N", sort=None, title=None, axis=alt.Axis(labelAngle=0)),
        y=alt.Y("error %:Q", title="throughput error %"))
    zero = alt.Chart().mark_rule(color="gray", strokeDash=[4, 3]).encode(y=alt.datum(0))
    return alt.layer(box, zero, data=df).properties(width=200, height=160).facet(
        facet=alt.Facet("factor:N", sort=list(df["factor"].unique()), title=None), columns=3).resolve_scale(
        x="independent")


def compare_consumers_table(by_scenario: dict[str, list[dict]]) -> pd.DataFrame:
    """Every scenario's consumer groups, one row each, the scenario first."""
    frames = [consumers_table(groups).assign(scenario=name) for name, groups in by_scenario.items() if groups]
    if not frames:
        return pd.DataFrame()
    table = pd.concat(frames, ignore_index=True)
    return table[["scenario"] + [c for c in table.columns if c != "scenario"]]


def consumers_table(groups: list[dict]) -> pd.DataFrame:
    """One row a consumer group: its read rate, fetches, lag and end-to-end latency, rounded as one reads them."""
    rows = []
    for g in groups:
        p, m, e2e = g["perf_test"], g["metrics"], g["end_to_end_ms"] or {}
        ms = lambda x: None if x is None else round(x, 1)                                          # noqa: E731
        rows.append({"group": g["group"], "instances": g["instances"],
                     "records/s (fetch)": round(p["fetch_records_per_sec"]),
                     "MB/s": round(p["mb"] / max(p["fetch_ms"], 1) * 1000, 1), "rebalance ms": p["rebalance_ms"],
                     "fetch-latency-avg ms": ms(m["fetch-latency-avg"]),
                     "records-per-request-avg": round(m["records-per-request-avg"], 1),
                     "records-lag-max": int(m["records-lag-max"]),
                     "end-to-end p50 ms": ms(e2e.get("p50")), "end-to-end p99 ms": ms(e2e.get("p99"))})
    return pd.DataFrame(rows)
