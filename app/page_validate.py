"""Validate: the model's predictions beside measured runs, a profile fitted in the browser, and the committed
fidelity reports — what `kafkasim validate` computes (kafkasim.validation.report), on a run store the user picks.

State (st.session_state): v_store (a run store under validation/data, or OTHER with v_path / v_upload), v_client,
v_profile:<store>:<client>, v_matrix, v_cap, v_tab, and v_fitted (profiles fitted in this session). The URL may name
a run store, client, profile, matrix ("none": the roles recorded with the runs) and record cap:
?runs=PATH&client=java&profile=local-2core&matrix=none&cap=20000.
Predictions are cached across sessions on (run store + its mtime, client, profile + its mtime, record cap).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from kafkasim.app import ui_charts, ui_fidelity, ui_fit
from kafkasim.calibration.fit import MAX_RECORDS
from kafkasim.calibration.runs import Observation, load_observations
from kafkasim.model.errors import UserError
from kafkasim.validation.report import Row, predict_all, role_of, roles_from_matrix, summarise

OTHER = "another file…"
NO_MATRIX = "roles recorded with the runs"
DEFAULT_CAP = MAX_RECORDS      # records simulated per configuration at most, as `kafkasim validate` does
CACHED_TABLES = 16
TABS = ("Predicted vs measured", "Fit a profile", "Committed reports")


@dataclass(frozen=True)
class Picked:
    store: Path
    client: str
    observations: list                # the client's configurations in the store
    roles: dict
    profile: str
    cap: int


@st.cache_data(max_entries=8, show_spinner=False)
def _observations(path: str, mtime: float) -> list[Observation]:
    return load_observations(path)


@st.cache_data(max_entries=8, show_spinner=False)
def _roles(path: str, mtime: float) -> dict:
    return roles_from_matrix(path)


@st.cache_resource(show_spinner=False)
def _predictions() -> dict:
    """(run store, mtime, client, profile, mtime, record cap) -> (predictions, seconds they took), oldest
    first; shared by sessions."""
    return {}


def _init() -> None:
    """The widgets' first values: from the URL in a session's first run, else the defaults. Streamlit drops a
    widget's state when another page is shown, so they are set again whenever they are missing."""
    if "v_start" not in st.session_state:
        params = st.query_params
        start = {"v_cap": DEFAULT_CAP, "v_url_profile": None}
        if params.get("runs"):
            runs = ui_fidelity.resolved(params["runs"])
            stores = [str(p) for p in ui_fidelity.run_stores()]
            start.update(v_store=runs if runs in stores else OTHER, v_path=runs)
        if params.get("client"):
            start["v_client"] = params["client"]
        if params.get("profile"):
            start["v_url_profile"] = ui_fidelity.resolved(params["profile"])
        try:
            start["v_cap"] = int(params.get("cap", DEFAULT_CAP))
        except ValueError:
            pass
        local = ui_fidelity.MATRIX_DIR / f"{ui_fidelity.REFERENCE_MATRIX}.yaml"
        start["v_matrix"] = str(local) if local.is_file() else NO_MATRIX
        if params.get("matrix"):
            start["v_matrix"] = NO_MATRIX if params["matrix"] == "none" else ui_fidelity.resolved(params["matrix"])
        st.session_state.v_start = start
        st.session_state.v_fitted = []
    for key, value in st.session_state.v_start.items():
        st.session_state.setdefault(key, value)


def _pick_store(column) -> Path | None:
    options = [str(p) for p in ui_fidelity.run_stores()] + [OTHER]
    with column:
        choice = st.selectbox("run store", options, key="v_store",
                              format_func=lambda o: o if o == OTHER else ui_fidelity.shown(o),
                              help="Runs as `kafkasim measure` stores them: one JSON line per run; the repeats of "
                                   "a configuration are summarised by their median.")
        if choice != OTHER:
            return Path(choice)
        path = st.text_input("path to a run store (.jsonl)", key="v_path")
        upload = st.file_uploader("or upload one", type=["jsonl"], key="v_upload")
    if upload is not None:
        return ui_fidelity.saved_upload(upload.name, upload.getvalue())
    return Path(path.strip()).expanduser() if path.strip() else None


def _pick_client(column, observations: list[Observation]) -> str:
    libraries = sorted({o.library for o in observations}, key=lambda lib: (lib != "java", lib))
    if st.session_state.get("v_client") not in libraries:
        st.session_state.v_client = libraries[0]
    return column.selectbox("client library", libraries, key="v_client")


def _pick_profile(column, store: Path, client: str) -> str:
    choices = ui_fidelity.profiles(st.session_state.v_fitted)
    key = f"v_profile:{store}:{client}"
    if st.session_state.get(key) not in choices:
        wanted = st.session_state.get("v_url_profile")
        st.session_state[key] = wanted if wanted in choices else ui_fidelity.default_profile(store, client, choices)
    return column.selectbox("hardware profile", choices, key=key, format_func=ui_fidelity.shown,
                            help="Built-in profiles by name; fitted ones (validation/reports/*-profile.yaml and "
                                 "those fitted on this page) by path. The default is the profile `kafkasim validate` "
                                 "fitted for this run store and client.")


def _pick_roles(column) -> dict:
    options = [str(p) for p in ui_fidelity.matrices()] + [NO_MATRIX]
    if st.session_state.get("v_matrix") not in options:
        st.session_state.v_matrix = NO_MATRIX
    matrix = column.selectbox("roles from", options, key="v_matrix", format_func=ui_fidelity.shown,
                              help="The matrix file says which configurations calibrate (a fit may use them) and "
                                   "which are held out (only compared against), per client.")
    return {} if matrix == NO_MATRIX else _roles(matrix, ui_fidelity.mtime(Path(matrix)))


def _predict(key: tuple, observations: list[Observation], profile: str, cap: int) -> tuple[list[dict], float]:
    bar = st.progress(0.0, text=f"predicting {len(observations)} configurations")
    started = time.perf_counter()
    try:
        # (jobs=1: no forking from the app server's threads)
        preds = predict_all(observations, profile, cap, progress=lambda done, total, obs: bar.progress(
            done / total, text=f"predicting {done + 1}/{total}: {obs.config_id}"), jobs=1)
    finally:
        bar.empty()
    cache = _predictions()
    cache[key] = preds, time.perf_counter() - started
    while len(cache) > CACHED_TABLES:
        cache.pop(next(iter(cache)))
    return cache[key]


def _show_table(rows: list[Row]) -> None:
    pct = st.column_config.NumberColumn(format="percent")
    st.dataframe(ui_fidelity.table(rows), hide_index=True, width="stretch", column_config={
        "measured records/s": st.column_config.NumberColumn(format="%.0f"),
        "predicted records/s": st.column_config.NumberColumn(format="%.0f"),
        "error": pct, "run range": pct, "noise": pct,
        "p99 predicted / measured": st.column_config.NumberColumn(format="%.2f")})
    st.caption("Measured figures are the median of a configuration's runs; run range is (fastest − slowest) / "
               "median, noise the runs' mean absolute deviation from that median; error is predicted / measured − 1.")


def _show_fidelity(rows: list[Row]) -> None:
    summary = summarise(rows)
    figures = ui_fidelity.summary_figures(summary)
    for row in (figures[i:i + 3] for i in range(0, len(figures), 3)):   # throughput and its noise, latency, CPU
        for column, (label, value, help) in zip(st.columns(3), row):
            column.metric(label, value, help=help)
    scatter = ui_fidelity.scatter_frame(rows)
    for column, (_, figure) in zip(st.columns(2), ui_fidelity.TARGETS):
        column.markdown(f"**{figure}**: predicted against measured (dashed: y = x)")
        column.altair_chart(ui_charts.predicted_vs_measured_chart(scatter[scatter["figure"] == figure], figure),
                            width="stretch")
    _show_table(rows)
    factors = ui_fidelity.factor_frame(rows)
    if len(factors):
        st.subheader("Held-out throughput error by factor")
        st.altair_chart(ui_charts.error_by_factor_chart(factors))


def _predicted_vs_measured(p: Picked) -> None:
    key = (str(p.store), ui_fidelity.mtime(p.store), p.client, p.profile, ui_fidelity.profile_mtime(p.profile), p.cap)
    preds, took = _predictions().get(key, (None, None))
    button = st.empty()
    if preds is None and button.button(f"Predict {len(p.observations)} configurations", key="v_predict",
                                       type="primary", help="Runs the model once per configuration at the record cap."):
        button.empty()
        try:
            preds, took = _predict(key, p.observations, p.profile, p.cap)
        except ValueError as exc:             # ScenarioError, or a profile that does not load
            st.error(str(exc))
    rows = [Row(o, role_of(o, p.roles), pred) for o, pred in zip(p.observations, preds or [{}] * len(p.observations))]
    held = sum(r.role == "held-out" for r in rows)
    st.caption(f"{len(rows) - held} calibration and {held} held-out configurations of {p.client} in "
               f"{ui_fidelity.shown(p.store)}; the model simulates up to {p.cap or MAX_RECORDS:,} records of each"
               + (f" (predicting them took {took:.0f} s)." if took else "."))
    if preds:
        _show_fidelity(rows)
    else:
        _show_table(rows)


def _committed_reports() -> None:
    paths = [str(p) for p in ui_fidelity.reports()]
    if not paths:
        st.info("No reports under validation/reports yet: `kafkasim validate` and `kafkasim reproduce --out` "
                "write them.")
        return
    st.caption("What was written and committed: `kafkasim validate`'s fidelity reports (a fit on the calibration "
               "configurations, checked on the held-out ones) and, under published/, `kafkasim reproduce`'s "
               "published studies (each run's published figures beside the model's, and the trend checks).")
    pick = st.selectbox("report", paths, key="v_report",
                        format_func=lambda p: str(Path(p).relative_to(ui_fidelity.REPORT_DIR)))
    text, images = ui_fidelity.report_parts(Path(pick))
    st.markdown(text)
    for image in images:
        st.image(str(image), caption=image.name)


def _pick() -> Picked | None:
    """The run store, client, profile, roles and record cap, or None (with the reason shown)."""
    c_store, c_client, c_profile, c_roles, c_cap = st.columns([3, 1.2, 2.2, 2, 1.2])
    store = _pick_store(c_store)
    if store is None:
        st.info("Name a run store (a .jsonl file) or upload one.")
        return None
    try:
        everything = _observations(str(store), ui_fidelity.mtime(store))
        roles = _pick_roles(c_roles)
    except (OSError, ValueError, UserError) as exc:    # no such file, not a JSON line, a bad matrix
        st.error(str(exc))
        return None
    if not everything:
        st.warning(f"{ui_fidelity.shown(store)} holds no successful runs.")
        return None
    client = _pick_client(c_client, everything)
    profile = _pick_profile(c_profile, store, client)
    cap = c_cap.number_input("records per run", min_value=0, step=5_000, key="v_cap",
                             help=f"At most this many records the model simulates per configuration, as many as "
                                  f"were measured otherwise (0: {MAX_RECORDS:,}, as `kafkasim validate`). Fewer: "
                                  f"faster, but a short run is mostly its cold start.")
    return Picked(store, client, [o for o in everything if o.library == client], roles, profile, int(cap))


def render() -> None:
    _init()
    st.title("Validate")
    st.caption("The model's predictions beside real runs of the same configurations, with the run-to-run noise of "
               "those runs as the floor no model can beat — as `kafkasim validate` reports it.")
    picked = _pick()
    # Lazy tabs: only the open one is drawn on a rerun.
    predicted, fitting, committed = st.tabs(TABS, key="v_tab", on_change="rerun")
    if predicted.open and picked:
        with predicted:
            _predicted_vs_measured(picked)
    if fitting.open and picked:
        with fitting:
            ui_fit.section(picked.store, picked.client, picked.observations, picked.roles, picked.cap)
    if committed.open:
        with committed:
            _committed_reports()
