"""Sweep one setting: throughput and p99 against batch.size, linger.ms, partitions, threads, ... (behind a button,
with progress; every point goes through the same cached run as the Explore page)."""
from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from kafkasim.app import ui_charts
from kafkasim.app.ui_fields import kafka_name
from kafkasim.app.ui_run import run
from kafkasim.model.scenario import Scenario, ScenarioError

# Setting -> the values offered first (editable).
from kafkasim.model.scenario_fields import FIELDS, check_value
SWEEPS = {
    "producer.batch.size": "4096, 8192, 16384, 32768, 65536, 131072",
    "producer.linger.ms": "0, 1, 2, 5, 10, 20, 50",
    "topic.partitions": "1, 2, 3, 6, 12, 24",
    "threads": "1, 2, 4, 8, 16",
    "producers": "1, 2, 4",
    "producer.max.in.flight.requests.per.connection": "1, 2, 5, 10",
    "producer.compression.type": "none, gzip, snappy, lz4, zstd",
    "producer.acks": "0, 1, all",
    "workload.throughput": "10000, 50000, 100000, 200000, -1",
    "workload.record_size": "100, 256, 1024, 4096, 16384",
    "network.rtt_ms": "0, 1, 5, 10, 20",
    "cluster.brokers": "1, 3, 5",
}


SKIP = ("seed", "workload.records", "workload.warmup_records", "workload.seconds", "model.max_sim_seconds")


def settings() -> list[str]:
    """The common sweeps first, then every other number or choice field."""
    rest = [k for k, f in FIELDS.items() if k not in SWEEPS and k not in SKIP
            and (f.kind in (int, float) or isinstance(f.kind, tuple))]
    return list(SWEEPS) + rest


def default_values(key: str, current: Any) -> str:
    """The offered values: the listed ones, a choice field's options, or the current value ×¼ … ×4."""
    if key in SWEEPS:
        return SWEEPS[key]
    f = FIELDS[key]
    if isinstance(f.kind, tuple):
        return ", ".join(f.kind)
    base = float(current) if current not in (None, 0) else 1.0
    out = []
    for factor in (0.25, 0.5, 1, 2, 4):
        x = base * factor
        if f.low is not None:
            x = max(x, f.low)
        if f.high is not None:
            x = min(x, f.high)
        text = str(int(round(x))) if f.kind is int else f"{x:g}"
        if text not in out:
            out.append(text)
    return ", ".join(out)


def parse_values(key: str, text: str) -> list[Any]:
    """Comma-separated values, each checked as the field's kind; ScenarioError names the bad one."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise ScenarioError(f"no values to sweep {key} over: give a comma-separated list")
    return [check_value(key, t) for t in items]


def sweep(s: Scenario, key: str, values: list[Any], cap: int, progress=None) -> pd.DataFrame:
    rows = []
    for i, value in enumerate(values):
        row: dict[str, Any] = {"value": value}
        try:
            r = run(s.replace(**{key: value}), cap).result
        except ScenarioError as exc:       # e.g. acks=1 with idempotence on: that point is skipped, with the reason
            row.update({"records/s": None, "p99 ms": None, "bottleneck": f"invalid: {exc}"})
        else:
            p = r.perf_test
            row.update({"records/s": p["records_per_sec"], "MB/s": p["mb_per_sec"], "avg ms": p["avg_latency_ms"],
                        "p99 ms": p["p99_ms"], "bottleneck": r.verdict["bottleneck"]})
        rows.append(row)
        if progress is not None:
            progress.progress((i + 1) / len(values), text=f"{kafka_name(key)} = {value}: done {i + 1}/{len(values)}")
    return pd.DataFrame(rows)


def section(s: Scenario, cap: int) -> None:
    st.subheader("Sweep one setting")
    left, right = st.columns([1, 2])
    key = left.selectbox("setting", settings(), key="x_sweep_key",
                         help="Every other field stays as set above; the common sweeps come first.")
    text = right.text_input("values (comma-separated)", value=default_values(key, s.flat().get(key)),
                            key=f"x_sweep_values:{key}", help=FIELDS[key].doc)
    if st.button("Run sweep", key="x_sweep_run", type="primary"):
        try:
            values = parse_values(key, text)
        except ScenarioError as exc:
            st.error(str(exc))
            return
        bar = st.progress(0.0, text=f"sweeping {key} over {len(values)} values")
        st.session_state["x_sweep"] = {"scenario": s.values, "key": key, "cap": cap,
                                       "frame": sweep(s, key, values, cap, bar)}
        bar.empty()
    done = st.session_state.get("x_sweep")
    if not done:
        st.caption("Each point is one prediction (at the record cap, if one is set); points already computed come "
                   "from the cache.")
        return
    if done["scenario"] != s.values or done["cap"] != cap:
        st.caption("This sweep was run on an earlier version of the scenario; press Run sweep to refresh it.")
    df = done["frame"]
    ok = df.dropna(subset=["records/s"])
    if len(ok):
        plot = ok.copy()
        if FIELDS[done["key"]].kind in (int, float):
            plot["value"] = pd.to_numeric(plot["value"])
        else:
            plot["value"] = plot["value"].astype(str)
        st.altair_chart(ui_charts.sweep_chart(plot, done["key"]), width="stretch")
    st.dataframe(df.astype({"value": str}), hide_index=True, width="stretch", column_config={
        "records/s": st.column_config.NumberColumn(format="%.0f"), "MB/s": st.column_config.NumberColumn(format="%.2f"),
        "avg ms": st.column_config.NumberColumn(format="%.1f")})
