"""The Validate page's fit: kafkasim.calibration.fit on the calibration configurations of the picked run store,
behind a button with progress and a small evaluation budget. The fitted profile is offered as YAML and joins the
page's profile list for this session (written under the temporary directory, never into the repository)."""
from __future__ import annotations

import io
import math
import tempfile
import time
from pathlib import Path

import pandas as pd
import streamlit as st

from kafkasim.app.ui_fidelity import BASE_PROFILE, shown
from kafkasim.calibration.fit import DEFAULT_PARAMETERS, fit
from kafkasim.calibration.profile import profile_from_fit, profile_yaml
from kafkasim.calibration.runs import Observation
from kafkasim.model.hardware import profile_names
from kafkasim.validation.report import role_of

FIT_DIR = Path(tempfile.gettempdir()) / "kafkasim-app-profiles"
DEFAULT_EVALUATIONS = 10


class _ProgressLines(io.TextIOBase):
    """fit's progress (a text stream, a line per model evaluation) shown on a progress bar."""

    def __init__(self, bar, steps: int):
        self.bar, self.steps, self.done = bar, steps, 0

    def write(self, text: str) -> int:
        for line in filter(None, (t.strip() for t in text.splitlines())):
            self.done += line.startswith("evaluation ")
            self.bar.progress(min(self.done / self.steps, 1.0), text=line)
        return len(text)


def _fit(store: Path, calibration: list[Observation], base: str, budget: int, cap: int) -> dict:
    library = calibration[0].library
    # After the budget, fit evaluates the Jacobian: one more evaluation per parameter, and the point itself.
    steps = budget + len(DEFAULT_PARAMETERS[library]) + 1
    with st.status(f"fitting {library} costs to {len(calibration)} configurations", expanded=True) as status:
        # (jobs=1: no forking from the app server's threads)
        fitted = fit(calibration, base, max_records=cap, max_evaluations=budget,
                     progress=_ProgressLines(st.progress(0.0), steps), jobs=1)
        status.update(label=f"fitted in {fitted.seconds:.0f} s ({fitted.evaluations} evaluations)", state="complete")
    name = f"{store.stem}-{library}-app-{time.strftime('%H%M%S')}"
    profile = profile_from_fit(fitted, name, shown(store), [o.config_id for o in calibration])
    text = profile_yaml(profile)
    FIT_DIR.mkdir(parents=True, exist_ok=True)
    path = FIT_DIR / f"{name}.yaml"
    path.write_text(text)
    params = pd.DataFrame([{"parameter": k, "value": v, "× / ÷ (one σ)": math.exp(fitted.sigma_log[k])}
                           for k, v in fitted.values.items()])
    return {"store": str(store), "library": library, "path": str(path), "yaml": text, "parameters": params,
            "cost": fitted.cost, "evaluations": fitted.evaluations, "seconds": fitted.seconds}


def section(store: Path, client: str, observations: list[Observation], roles: dict, cap: int) -> None:
    calibration = [o for o in observations if role_of(o, roles) == "calibration"]
    if client not in DEFAULT_PARAMETERS:
        st.info(f"The fit has no parameter list for {client} (it knows {', '.join(DEFAULT_PARAMETERS)}).")
        return
    if not calibration:
        st.info(f"No calibration configurations of {client} in {shown(store)}: pick a matrix that names some.")
        return
    builtins = profile_names()
    left, right = st.columns(2)
    base = left.selectbox("start from profile", builtins, key="v_fit_base",
                          index=builtins.index(BASE_PROFILE) if BASE_PROFILE in builtins else 0)
    budget = right.number_input("model evaluations", min_value=2, max_value=200, value=DEFAULT_EVALUATIONS,
                                key="v_fit_evaluations",
                                help="Each evaluation simulates every calibration configuration once.")
    st.caption(f"Fits {', '.join(DEFAULT_PARAMETERS[client])} to the {len(calibration)} calibration configurations "
               f"({', '.join(o.config_id for o in calibration)}) at {cap:,} records each, as `kafkasim calibrate` "
               f"does; `kafkasim validate` uses 30–70 evaluations.")
    if st.button("Fit", key="v_fit_run", type="primary"):
        st.session_state.v_fit = _fit(store, calibration, base, int(budget), cap)
        st.session_state.v_fitted = st.session_state.v_fitted + [st.session_state.v_fit["path"]]
        st.rerun()                    # the profile list above now holds the new profile
    done = st.session_state.get("v_fit")
    if not done or (done["store"], done["library"]) != (str(store), client):
        return
    st.success(f"Fitted in {done['seconds']:.0f} s ({done['evaluations']} evaluations, cost {done['cost']:.3f}); "
               f"pick `{shown(done['path'])}` as the hardware profile above to predict with it.")
    st.dataframe(done["parameters"], hide_index=True, column_config={
        "value": st.column_config.NumberColumn(format="%.4g"),
        "× / ÷ (one σ)": st.column_config.NumberColumn(format="%.2f")})
    st.download_button("Download the profile (YAML)", done["yaml"], file_name=f"{Path(done['path']).name}",
                       mime="application/x-yaml", key="v_fit_download")
