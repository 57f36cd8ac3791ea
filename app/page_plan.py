"""Plan: the cheapest brokers, partitions, producers, threads and producer settings for a target (app/plan.py)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from kafkasim.app.plan import Planner
from kafkasim.app.plan_report import Request, Space
from kafkasim.model.hardware import profile_names
from kafkasim.model.scenario import ScenarioError


def render() -> None:
    st.title("Plan")
    st.caption("The cheapest cluster and producer settings that meet a target with headroom — the same search as "
               "`kafkasim plan`: analytic bounds prune, the model decides. Each candidate simulates a short "
               "stretch of traffic, so a plan takes from seconds to a minute or two.")
    profiles = profile_names()
    with st.form("plan"):
        c1, c2, c3 = st.columns(3)
        target = c1.number_input("target records/s", min_value=1, value=200_000, step=10_000)
        size = c1.number_input("record size, bytes", min_value=1, value=1000, step=100)
        acks = c2.selectbox("acks", ["all", "1", "0"])
        rf = c2.number_input("replication factor", min_value=1, max_value=10, value=3)
        p99 = c2.number_input("p99 limit, ms (0 = none)", min_value=0.0, value=0.0)
        profile = c3.selectbox("hardware profile", profiles, index=profiles.index("generic-server"))
        max_brokers = c3.number_input("most brokers", min_value=1, max_value=60, value=12)
        headroom = c3.number_input("headroom", min_value=0.0, max_value=3.0, value=0.3, step=0.05)
        groups = c1.number_input("consumer groups reading every record", min_value=0, max_value=100, value=0)
        behind = c2.number_input("a group catching up: records behind (0 = none)", min_value=0, value=0,
                                 step=1_000_000)
        within = c3.number_input("… within seconds", min_value=1, value=600, step=60)
        submitted = st.form_submit_button("Plan", type="primary")
    if not submitted:
        return
    try:
        req = Request(target_rps=float(target), record_size=int(size), acks=acks, rf=int(rf),
                      p99_ms=float(p99) or None, headroom=float(headroom), profile=profile,
                      consumer_groups=int(groups), catch_up=(float(behind), float(within)) if behind else None)
        if max_brokers < rf:
            raise ScenarioError(f"most brokers={max_brokers} is not allowed: RF {rf} needs at least {rf}")
        planner = Planner(req, Space(brokers=tuple(range(int(rf), int(max_brokers) + 1))), jobs=1)
        with st.spinner(f"planning for {req.planned_rps:,.0f} records/s "
                        f"({planner.sim_seconds():.2f} s of traffic per candidate)..."):
            plan = planner.run(sensitivity=False)
    except ScenarioError as exc:
        st.error(str(exc))
        return
    if plan.best is None:
        st.warning("No configuration in the search space meets the target: allow more brokers or check the "
                   "profile.")
    else:
        _show(plan)
    with st.expander("the plan as `kafkasim plan` prints it", expanded=plan.best is None):
        st.code(plan.text(), language=None)


COLUMNS = {"brokers": "brokers", "partitions": "partitions", "producers": "producers", "threads": "threads",
           "delivered_rps": "delivers records/s", "p50_ms": "p50 ms", "p99_ms": "p99 ms",
           "estimated_capacity_rps": "capacity records/s", "busiest_resource": "limited by"}


def _show(plan) -> None:
    """The plan and its runner-ups as a table, and its settings."""
    best = plan.best.summary()
    cols = st.columns(4)
    cols[0].metric("brokers", best["brokers"])
    cols[1].metric("partitions", best["partitions"])
    cols[2].metric("producers × threads", f"{best['producers']} × {best['threads']}")
    cols[3].metric("capacity (records/s)", f"{best['estimated_capacity_rps']:,}",
                   f"{best['estimated_capacity_rps'] / plan.req.target_rps:.2f} × target", delta_color="off")
    st.caption("settings: " + ", ".join(f"`{k}={v}`" for k, v in best["settings"].items()))
    st.caption(plan.header())
    rows = [{"": name, **{label: f"{s[key]:,.0f}" if key.endswith("rps") else s[key]       # (as the CLI prints)
                          for key, label in COLUMNS.items()},
             "settings": ", ".join(f"{k.removeprefix('producer.')}={v}" for k, v in s["settings"].items())}
            for name, s in [("plan", best)] + [(f"runner-up {i}", a.summary())
                                               for i, a in enumerate(plan.alternatives, 1)]]
    st.dataframe(pd.DataFrame(rows), hide_index=True)
