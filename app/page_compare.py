"""Compare: two to four scenarios side by side, with deltas against the first and the reason the faster is faster.

Each scenario is an example plus `key=value` lines (what `kafkasim predict --set` takes). The URL carries them as
repeated `c=<example>;key=value;key=value` parameters.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from kafkasim.app import compare_reason, ui_charts, ui_scenario
from kafkasim.app.ui_run import DEFAULT_CAP, progress_bar, run
from kafkasim.model.scenario import ScenarioError

LETTERS = "ABCD"
DEFAULT_SPECS = ["kontur-2020/I", "kontur-2020/I;producer.batch.size=65536"]


def _split(spec: str) -> tuple[str, str]:
    example, _, rest = spec.partition(";")
    return example.strip(), "\n".join(p.strip() for p in rest.split(";") if p.strip())


def _init() -> None:
    if "c_n" in st.session_state:
        return
    default = ui_scenario.default_example()
    specs = st.query_params.get_all("c") or [spec.replace(ui_scenario.DEFAULT_EXAMPLE, default) for spec in DEFAULT_SPECS]
    specs = specs[:len(LETTERS)]
    if len(specs) < 2:
        specs = specs + DEFAULT_SPECS[len(specs):]
    st.session_state.c_n = len(specs)
    names = ui_scenario.example_names()
    for i, spec in enumerate(specs):
        example, overrides = _split(spec)
        st.session_state[f"c_ex{i}"] = example if example in names else ui_scenario.NO_EXAMPLE
        st.session_state[f"c_ov{i}"] = overrides
    try:
        st.session_state.c_cap = int(st.query_params.get("cap", DEFAULT_CAP))
    except ValueError:
        st.session_state.c_cap = DEFAULT_CAP


def _inputs(n: int) -> list[tuple[str, str]]:
    names = [ui_scenario.NO_EXAMPLE] + ui_scenario.example_names()
    out = []
    for i, col in enumerate(st.columns(n)):
        with col:
            st.markdown(f"**{LETTERS[i]}**")
            if st.session_state.get(f"c_ex{i}") not in names:
                st.session_state[f"c_ex{i}"] = ui_scenario.default_example()
            st.selectbox("example", names, key=f"c_ex{i}")
            st.text_area("changes (key=value per line)", key=f"c_ov{i}", height=110,
                         placeholder="producer.batch.size=65536\nproducer.linger.ms=10",
                         help="Flat scenario keys as `kafkasim predict --set` takes them, e.g. "
                              "producer.batch.size=65536, topic.partitions=6, threads=4.")
        out.append((st.session_state[f"c_ex{i}"], st.session_state.get(f"c_ov{i}", "")))
    return out


METRICS = ("batch-size-avg", "records-per-request-avg", "request-latency-avg", "record-queue-time-avg",
           "request-rate", "bufferpool-wait-ratio")


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _table(names: list[str], runs: list) -> pd.DataFrame:
    """Headline figures and key JMX metrics, formatted, with each scenario's change against A."""
    values = [(label, [r.result.perf_test[f] for r in runs]) for label, f in ui_charts.HEADLINE]
    values += [(f"producer-metrics:{m}", [r.result.metrics[m] for r in runs]) for m in METRICS]
    rows = []
    for label, xs in values:
        row = {"": label}
        for i, (n, x) in enumerate(zip(names, xs)):
            row[n] = _fmt(float(x))
            if i:
                row[f"{n} vs {names[0]}"] = f"{(x - xs[0]) / xs[0]:+.0%}" if xs[0] else "—"
        rows.append(row)
    row = {"": "bottleneck"}
    for i, (n, r) in enumerate(zip(names, runs)):
        row[n] = f"{r.result.verdict['bottleneck']} ({r.result.verdict['utilisation']:.0%})"
        if i:
            row[f"{n} vs {names[0]}"] = ""
    rows.append(row)
    return pd.DataFrame(rows)


def render() -> None:
    _init()
    st.title("Compare")
    st.caption("Two or more scenarios side by side: the deltas against A, and the reason the faster one is faster "
               "(from the model's bottleneck verdicts and utilisations).")
    top = st.columns([1, 1, 3])
    n = int(top[0].number_input("scenarios", min_value=2, max_value=len(LETTERS), key="c_n"))
    cap = int(top[1].number_input("record cap per producer", min_value=0, step=10_000, key="c_cap",
                                  help="As on Explore: 0 (the default) simulates each whole scenario, as `kafkasim predict` does; a "
                                       "cap simulates at most this many records per producer."))
    specs = _inputs(n)
    st.query_params.from_dict({"c": [";".join([ex] + [ln.strip() for ln in ov.splitlines() if ln.strip()])
                                     for ex, ov in specs], **({} if cap == DEFAULT_CAP else {"cap": str(cap)})})
    names, scenarios, errors = [], [], []
    for i, (example, overrides) in enumerate(specs):
        try:
            scenario, _ = ui_scenario.parse_spec(example, overrides)
        except ScenarioError as exc:
            errors.append(f"{LETTERS[i]}: kafkasim: error: {exc}")
            continue
        names.append(LETTERS[i])
        scenarios.append(scenario)
    for e in errors:
        st.error(e)
    if len(scenarios) < 2:
        st.info("Give at least two valid scenarios to compare.")
        return
    runs = []
    for name, s in zip(names, scenarios):
        bar, report = progress_bar(f"simulating {name}")
        runs.append(run(s, cap, report))
        bar.empty()

    cols = st.columns(len(runs))
    base = runs[0].result.perf_test
    for col, name, r in zip(cols, names, runs):
        p = r.result.perf_test
        delta = None if name == names[0] else f"{(p['records_per_sec'] - base['records_per_sec']) / max(base['records_per_sec'], 1e-9):+.1%}"
        col.metric(f"{name}: records/s", f"{p['records_per_sec']:,.0f}", delta)
        lat_delta = None if name == names[0] else f"{p['p99_ms'] - base['p99_ms']:+d} ms"
        col.metric(f"{name}: p99 latency (ms)", f"{p['p99_ms']}", lat_delta, delta_color="inverse")
        col.caption(f"bottleneck: {r.result.verdict['bottleneck']} ({r.result.verdict['utilisation']:.0%})")
        if r.note and len({x.note for x in runs}) > 1:
            col.caption(r.note)
    if runs[0].note and len({x.note for x in runs}) == 1:
        st.caption(runs[0].note)

    st.subheader("Why")
    fastest = max(range(len(runs)), key=lambda i: runs[i].result.perf_test["records_per_sec"])
    for i in range(len(runs)):
        if i == fastest:
            continue
        a, b = (i, fastest) if i < fastest else (fastest, i)
        st.markdown(compare_reason.explain(names[a], runs[a].result, scenarios[a].flat(),
                                           names[b], runs[b].result, scenarios[b].flat()))
    st.subheader("Side by side")
    table = _table(names, runs)
    st.dataframe(table, hide_index=True, width="stretch", height=35 * (len(table) + 1) + 3)
    groups = ui_charts.compare_consumers_table({n: r.result.consumers for n, r in zip(names, runs)})
    if not groups.empty:
        st.markdown("**Consumer groups**")
        st.dataframe(groups, hide_index=True, width="stretch")
    diff_rows = {}
    for i in range(1, len(scenarios)):
        for key, x, y in compare_reason.differences(scenarios[0].flat(), scenarios[i].flat()):
            diff_rows.setdefault(key, {"setting": key, names[0]: str(x)})[names[i]] = str(y)
    if diff_rows:
        st.markdown("**Settings that differ from A**")
        st.dataframe(pd.DataFrame(list(diff_rows.values())).fillna("(same as A)"), hide_index=True,
                     width="stretch")
    st.markdown("**Utilisation**")
    st.altair_chart(ui_charts.compare_utilisation_chart({n: r.result.utilisation for n, r in zip(names, runs)}),
                    width="stretch")
    st.markdown("**Latency CDF**")
    frames = [ui_charts.cdf_frame(r.result.latencies_ms, label=n) for n, r in zip(names, runs)]
    st.altair_chart(ui_charts.cdf_chart(pd.concat(frames), log_x=True), width="stretch")
