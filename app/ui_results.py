"""Showing one prediction: perf-test lines, headline figures, verdict with utilisation bars, latency CDF, timeline,
JMX metrics and brokers."""
from __future__ import annotations

import streamlit as st

from kafkasim.app import ui_charts
from kafkasim.app.ui_run import Run
from kafkasim.model.consumer_report import CONSUMER_PERF_HEADER


TABS = ["Latency CDF", "Backlog and in-flight timeline", "Producer metrics", "Brokers"]


def headline(run: Run) -> None:
    p = run.result.perf_test
    cols = st.columns(5)
    cols[0].metric("throughput (records/s)", f"{p['records_per_sec']:,.0f}")
    cols[1].metric("MB/s", f"{p['mb_per_sec']:.2f}")
    cols[2].metric("avg latency (ms)", f"{p['avg_latency_ms']:.1f}")
    cols[3].metric("p99 latency (ms)", f"{p['p99_ms']}")
    cols[4].metric("time in send() (us)", f"{run.result.worker_latency_us:.2f}")


def refresh_caption(run: Run) -> None:
    r = run.result
    how = "from the cache" if run.cached else f"computed in {run.seconds:.2f} s"
    steady = (f" (event by event to {r.steady_from:.2f} s, then its steady state repeated)"
              if r.steady_from is not None else "")
    st.caption(f"{r.records_acked:,} records acknowledged, {r.simulated_seconds:.2f} s simulated{steady}; {how} "
               f"(model {r.model_version}, seed {r.seed}).")
    if not run.cached and run.seconds > 2.0:
        st.caption(f"This prediction took {run.seconds:.1f} s; a record cap in the sidebar gives a quicker, rougher "
                   "look (mostly the run's start).")
    if run.note:
        st.info(run.note, icon="✂️")


def verdict(run: Run) -> None:
    v = run.result.verdict
    text = f"**Bottleneck: {v['bottleneck']}** ({v['utilisation']:.0%}) — {v['evidence']}"
    if v.get("met"):
        st.success(text)
    elif v["bottleneck"] == "none":
        # Nothing saturated (often a short capped run): the verdict's own words, and what would show more.
        st.info(f"{text}; a longer run (raise the record cap) may show one.")
    else:
        st.warning(text)
    marked = None if v["bottleneck"] == "none" else v["bottleneck"]
    st.altair_chart(ui_charts.utilisation_chart(run.result.utilisation, marked), width="stretch")


def details(run: Run) -> None:
    r = run.result
    st.code("\n".join(list(r.perf_test["windows"]) + [r.perf_test["total"]]), language=None, wrap_lines=True)
    # Lazy tabs: only the open one is drawn on a rerun.
    cdf, timeline, metrics, brokers = st.tabs(TABS, key="x_tab", on_change="rerun")
    if cdf.open:
        with cdf:
            log_x = st.toggle("log latency axis", key="x_cdf_log")
            st.altair_chart(ui_charts.cdf_chart(ui_charts.cdf_frame(r.latencies_ms), log_x=log_x), width="stretch")
    if timeline.open:
        with timeline:
            st.altair_chart(ui_charts.timeline_chart(ui_charts.timeline_frame(r.timeline)), width="stretch")
            st.caption("Batches created but not yet drained by the Sender (the RecordAccumulator's backlog) and "
                       "produce requests awaiting their response, over the whole simulated run including warm-up.")
    if metrics.open:
        with metrics:
            st.dataframe(ui_charts.metrics_table(r.metrics, r.worker_latency_us), hide_index=True, width="stretch",
                         column_config={"value": st.column_config.NumberColumn(format="%.4g")})
            st.caption("JMX names and Kafka's units (ms, bytes), over the steady part of the run.")
    if brokers.open:
        with brokers:
            st.dataframe(ui_charts.brokers_table(r.brokers), hide_index=True, width="stretch")


def consumers(run: Run) -> None:
    """Each consumer group: kafka-consumer-perf-test's line, its figures side by side, and what limits it."""
    groups = run.result.consumers
    if not groups:
        return
    st.subheader("Consumers")
    st.code("\n".join([CONSUMER_PERF_HEADER] + [g["perf_test"]["line"] for g in groups]), language=None,
            wrap_lines=True)
    st.dataframe(ui_charts.consumers_table(groups), hide_index=True, width="stretch")
    for g in groups:
        v = g["bottleneck"]
        st.caption(f"Group {g['group']}: **{v['name']}** ({v['utilisation']:.0%}) — {v['evidence']}")


def show(run: Run) -> None:
    if not run.result.scenario.get("producers", 1):       # consumers reading what the topic holds
        refresh_caption(run)
        consumers(run)
        return
    headline(run)
    refresh_caption(run)
    verdict(run)
    details(run)
    consumers(run)
