"""Explore: every scenario field as a widget, the prediction refreshed on every change, a one-setting sweep.

State (st.session_state): x_example (the base's name), x_base (its raw flat keys), x_edits (key -> value as the
user set it), and one widget per field under `xf:<key>`. Widgets a user has not touched are re-synced from the
resolved scenario on every run, so they follow the client version's defaults. The URL carries the example, the
edits and the record cap.
"""
from __future__ import annotations

from urllib.parse import urlencode

import streamlit as st

from kafkasim.app import ui_fields, ui_results, ui_scenario, ui_sweep
from kafkasim.app.ui_run import DEFAULT_CAP, progress_bar, run
from kafkasim.calibration.bands import held_out_line
from kafkasim.calibration.host import profile_line
from kafkasim.model import clients
from kafkasim.model.scenario import ScenarioError
from kafkasim.model.scenario_fields import FIELDS


def _load_base(name: str) -> None:
    st.session_state.x_example = name
    st.session_state.x_base = ui_scenario.example_raw(name)
    st.session_state.x_edits = {}
    _forget_widgets()


def _forget_widgets() -> None:
    for key in FIELDS:
        st.session_state.pop(ui_fields.widget_key(key), None)


def _init() -> None:
    """First run of a session: the scenario comes from the URL (or the default example)."""
    if "x_example" in st.session_state:
        return
    params = st.query_params.to_dict()
    example, edits, unknown = ui_scenario.from_query(params)
    st.session_state.x_load_error = None
    st.session_state.x_url_unknown = unknown
    try:
        _load_base(example)
    except ScenarioError as exc:
        st.session_state.x_load_error = str(exc)
        _load_base(ui_scenario.NO_EXAMPLE)
    st.session_state.x_edits = edits
    try:
        st.session_state.x_cap = int(params.get("cap", DEFAULT_CAP))
    except ValueError:
        st.session_state.x_cap = DEFAULT_CAP
    st.session_state.x_pick = st.session_state.x_example


def _on_pick() -> None:
    st.session_state.x_load_error = None
    _load_base(st.session_state.x_pick)


def _on_upload() -> None:
    upload = st.session_state.get("x_upload")
    if upload is None:
        return
    try:
        raw = ui_scenario.parse_yaml(upload.getvalue().decode("utf-8", "replace"), upload.name)
    except ScenarioError as exc:
        st.session_state.x_load_error = str(exc)
        return
    st.session_state.x_load_error = None
    # An uploaded file is not in examples/: its keys become edits of the field defaults, so the URL carries them.
    _load_base(ui_scenario.NO_EXAMPLE)
    st.session_state.x_edits = dict(raw)
    st.session_state.x_pick = ui_scenario.NO_EXAMPLE


def _on_edit(key: str) -> None:
    st.session_state.x_edits[key] = ui_fields.from_widget(key, st.session_state[ui_fields.widget_key(key)])
    if key == "client.library":
        _follow_library(st.session_state.x_edits[key])


def _follow_library(library: str) -> None:
    """Switching library keeps the version if the new library has it, else takes its newest modelled version."""
    versions = clients.JAVA_VERSIONS if library == "java" else clients.KAFKA_PYTHON_VERSIONS
    current = st.session_state.x_edits.get("client.version") or st.session_state.get("x_version")
    if current not in versions:
        st.session_state.x_edits["client.version"] = versions[-1]
        st.session_state[ui_fields.widget_key("client.version")] = versions[-1]


def _reset() -> None:
    st.session_state.x_edits = {}
    _forget_widgets()


def _sidebar_source() -> None:
    st.sidebar.header("Scenario")
    names = [ui_scenario.NO_EXAMPLE] + ui_scenario.example_names()
    if st.session_state.x_pick not in names:
        st.session_state.x_pick = ui_scenario.NO_EXAMPLE
    st.sidebar.selectbox("example", names, key="x_pick", on_change=_on_pick,
                         help="A scenario file from examples/: one per published experiment.")
    st.sidebar.file_uploader("load scenario YAML", type=["yaml", "yml"], key="x_upload", on_change=_on_upload)
    st.sidebar.number_input("record cap per producer (0 = none)", min_value=0, step=10_000, key="x_cap",
                            help="0 (the default) simulates the whole scenario, as `kafkasim predict` does. A cap "
                                 "simulates at most this many records per producer (and about 3 s of a throttled "
                                 "run): quicker, but mostly the run's cold start.")
    if st.session_state.x_edits:
        st.sidebar.caption("changed: " + ", ".join(f"`{k}`" for k in st.session_state.x_edits))
        st.sidebar.button("reset to the example", on_click=_reset)


def _sync_widgets(resolved: dict) -> None:
    """Untouched widgets show the resolved value (so producer defaults follow client.version); so do fields the
    user blanked (they take the default, which the widget then shows)."""
    for key in FIELDS:
        wkey = ui_fields.widget_key(key)
        if key in st.session_state.x_edits and st.session_state.x_edits[key] is not None:
            if wkey not in st.session_state:    # an edit from the URL: show it as given
                value = st.session_state.x_edits[key]
                st.session_state[wkey] = ui_fields.widget_value(key, value) if FIELDS[key].kind is not bool \
                    else str(value).lower() == "true"
            continue
        st.session_state[wkey] = ui_fields.widget_value(key, resolved.get(key))


def _sidebar_fields(resolved: dict) -> None:
    library, version = resolved.get("client.library"), resolved.get("client.version")
    for section, title, expanded in ui_fields.SECTIONS:
        # Lazy: a closed section draws no widgets (each costs the rerun a few ms); its values still apply.
        box = st.sidebar.expander(title, expanded=expanded, key=f"x_exp:{section}", on_change="rerun")
        if not box.open:
            continue
        with box:
            keys = ui_fields.keys_in(section)
            costs = [k for k in keys if ui_fields.is_cost(k)]
            if costs:
                # ~40 cost parameters: drawn only on request (each widget costs a rerun a few ms).
                edited = any(k in st.session_state.x_edits for k in costs)
                show = st.toggle(f"show the profile's {len(costs)} cost parameters", value=edited,
                                 key="x_show_costs", help="CPU per record, byte, request and batch on the client "
                                 "and brokers, and each codec's CPU cost and ratio per payload.")
                keys = keys if show else [k for k in keys if k not in costs]
            for key in keys:
                ui_fields.field_widget(key, library, version, _on_edit)


def _actions(scenario) -> None:
    """Save the scenario, and open Compare with it as A and a variant as B (in a new tab)."""
    explicit = {**st.session_state.x_base, **{k: v for k, v in st.session_state.x_edits.items() if v is not None}}
    left, right, _ = st.columns([1, 1, 3])
    left.download_button("save scenario YAML", ui_scenario.to_yaml(scenario, explicit),
                         file_name=f"{scenario.name}.yaml", mime="application/x-yaml",
                         help="The keys the example sets plus your changes; unset producer properties keep the "
                              "client version's defaults when loaded again.")
    edits = {k: v for k, v in st.session_state.x_edits.items() if v is not None}
    a = ui_scenario.to_spec(st.session_state.x_example, edits)
    b = ui_scenario.to_spec(st.session_state.x_example,
                            {**edits, "producer.batch.size": 2 * scenario.producer.batch_size})
    cap = int(st.session_state.x_cap)
    query = [("c", a), ("c", b)] + ([] if cap == DEFAULT_CAP else [("cap", str(cap))])
    right.link_button("compare with a variant", "./compare?" + urlencode(query),
                      help="Opens Compare in a new tab with this scenario as A and batch.size doubled as B.")


def render() -> None:
    _init()
    st.title("Explore")
    st.caption("Every field of a scenario under its Kafka name; the prediction follows each change. "
               "Hover a field's (?) for Kafka's description and the client version's default.")
    if st.session_state.get("x_load_error"):
        st.error(st.session_state.x_load_error)
    if st.session_state.get("x_url_unknown"):
        st.warning("The link's " + ", ".join(f"`{k}`" for k in st.session_state.x_url_unknown) +
                   " is not a scenario key: left out (a misspelling?)")
    _sidebar_source()
    error, scenario = None, None
    try:
        scenario = ui_scenario.build(st.session_state.x_base, st.session_state.x_edits)
    except ScenarioError as exc:
        error = str(exc)
    resolved = scenario.flat() if scenario else {}
    if scenario:
        st.session_state.x_version = scenario.client.version
    _sync_widgets(resolved)
    _sidebar_fields(resolved)
    cap = int(st.session_state.x_cap)
    st.query_params.from_dict(ui_scenario.to_query(
        st.session_state.x_example, st.session_state.x_edits, {} if cap == DEFAULT_CAP else {"cap": str(cap)}))
    if error:
        st.error(f"kafkasim: error: {error}")
        st.stop()
    _actions(scenario)
    bar, report = progress_bar("simulating")
    with st.spinner("simulating…"):
        result = run(scenario, cap, report)
    bar.empty()
    ui_results.show(result)
    trust = held_out_line(scenario)
    if trust:
        st.caption(trust)
    stale = profile_line(scenario.hardware.profile)
    if stale:
        st.warning(stale.removeprefix("kafkasim: "))
    for line in scenario.not_modelled():
        st.caption(f"Note: {line}.")
    st.divider()
    ui_sweep.section(scenario, cap)
