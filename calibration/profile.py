"""Write fitted parameters as a hardware profile, with where they came from and how sure they are."""
from __future__ import annotations

import datetime
from pathlib import Path

import yaml

from kafkasim.calibration.fit import Fit
from kafkasim.model.hardware import load_profile
from kafkasim.calibration.host import machine
from kafkasim.calibration.host_costs import CLIENT_PREFIXES     # (keys of the client's `clients:` section)


def fit_record(profile: str, library: str) -> dict:
    """What a fit recorded in a profile for one client library (its runs, machine, held-out figures); {} where
    nothing was fitted, as in a hand-derived profile, whose provenance is a sentence."""
    provenance = load_profile(profile).get("provenance")
    return (provenance.get(library) or {}) if isinstance(provenance, dict) else {}


def profile_from_fit(fit: Fit, name: str, runs: str, configs: list[str]) -> dict:
    """The base profile with the fitted values in place, its provenance and the parameters' uncertainty."""
    profile = load_profile(fit.base_profile)
    hardware = dict(profile.get("hardware", {}) or {})
    clients = {k: dict(v or {}) for k, v in (profile.get("clients", {}) or {}).items()}
    mine = clients.setdefault(fit.library, {})
    for key, value in {**fit.fixed, **fit.values}.items():
        (mine if key.startswith(CLIENT_PREFIXES) else hardware)[key] = round(float(value), 6)
    residuals = {cfg: {k: round(v, 4) for k, v in res.items()} for cfg, res in fit.residuals.items()}
    # Per client library: a fit of one library on top of a profile fitted for another keeps the other's record.
    # (a hand-derived profile's provenance is a sentence, which the description's "starting from" stands for)
    base = profile.get("provenance")
    provenance = ({k: v for k, v in base.items() if k in clients and k != fit.library}
                  if isinstance(base, dict) else {})
    uncertainty = {k: v for k, v in (profile.get("uncertainty") or {}).items() if k != fit.library}
    return {
        "name": name,
        "description": f"Fitted by `kafkasim calibrate` from {runs} ({', '.join([*provenance, fit.library])}), "
                       f"starting from {fit.base_profile}.",
        "provenance": {**provenance, fit.library: {
            "runs": runs,
            "configs": configs,
            "fitted_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "machine": machine(),
            "client": fit.library,
            "cost": round(fit.cost, 6),
            "evaluations": fit.evaluations,
            "seconds": round(fit.seconds, 1),
            "residuals_log": residuals,
        }},
        # One standard deviation of log(value): `kafkasim predict` draws from it for its bands.
        "uncertainty": {**uncertainty, fit.library: fit.sigma_log},
        "hardware": hardware,
        "clients": clients,
    }


def profile_yaml(profile: dict) -> str:
    return yaml.safe_dump(profile, sort_keys=False, allow_unicode=True, width=110)


def write_profile(profile: dict, path: str | Path) -> None:
    Path(path).write_text(profile_yaml(profile))
