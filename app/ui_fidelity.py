"""What the Validate page shows, as data: the run stores, matrices, profiles and reports on disk, and tables of
predicted against measured configurations (pandas only; no Streamlit calls; the figures come from
kafkasim.validation.report)."""
from __future__ import annotations

import hashlib
import math
import re
import tempfile
from pathlib import Path

import pandas as pd

from kafkasim.model.hardware import profile_names, profile_path
from kafkasim.validation.report import Row, error_by_factor, run_noise

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "validation" / "data"
REFERENCE = "local-quiet"      # the reference data set: validation/data/local-quiet.jsonl, ...
REFERENCE_MATRIX = "local"     # ... split into calibration and held-out by validation/matrices/local.yaml
MATRIX_DIR = ROOT / "validation" / "matrices"
REPORT_DIR = ROOT / "validation" / "reports"
UPLOAD_DIR = Path(tempfile.gettempdir()) / "kafkasim-app-uploads"
BASE_PROFILE = "local-2core"          # what `kafkasim validate` fits from
TARGETS = (("records_per_sec", "throughput, records/s"), ("p99_ms", "p99 latency, ms"))
PREDICTED_COLUMNS = ("predicted records/s", "error", "predicted p50 ms", "predicted p99 ms",
                     "p99 predicted / measured")
IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")


def shown(path: str | Path) -> str:
    """A path as the page names it: relative to the repository when it is inside it."""
    path = Path(path)
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def resolved(value: str) -> str:
    """A file named in the URL as an absolute path (relative ones are taken from the repository); a built-in
    profile's bare name unchanged."""
    if not value.endswith((".jsonl", ".yaml", ".yml")):
        return value
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else ROOT / path)


def run_stores() -> list[Path]:
    """The run stores under validation/data, the reference data set first (the page's default)."""
    return sorted(DATA_DIR.glob("*.jsonl"), key=lambda p: (p.stem != REFERENCE, p.name))


def matrices() -> list[Path]:
    return sorted(MATRIX_DIR.glob("*.yaml"))


def reports() -> list[Path]:
    """The committed reports: `kafkasim validate`'s fidelity reports, then `kafkasim reproduce`'s published
    studies (validation/reports/published/)."""
    return sorted(REPORT_DIR.glob("*.md")) + sorted((REPORT_DIR / "published").glob("*.md"))


def profiles(extra: list[str] = ()) -> list[str]:
    """The built-in profiles by name, then fitted ones (the reports' and `extra`) by path."""
    fitted = [str(p) for p in sorted(REPORT_DIR.glob("*-profile.yaml"))]
    return profile_names() + fitted + [p for p in extra if p not in fitted]


def default_profile(store: Path, client: str, choices: list[str]) -> str:
    """The profile `kafkasim validate` fitted for this run store and client, else the one it fits from."""
    fitted = str(REPORT_DIR / f"{store.stem}-{client}-profile.yaml")
    for name in (fitted, BASE_PROFILE):
        if name in choices:
            return name
    return choices[0]


def mtime(path: Path) -> float:
    """Part of the page's cache keys: a rewritten file is read (and predicted) again."""
    return path.stat().st_mtime if path.is_file() else 0.0


def profile_mtime(name: str) -> float:
    return mtime(profile_path(name))


def saved_upload(name: str, data: bytes) -> Path:
    """An uploaded run store as a file (the calibration reads paths), named by its content so a re-upload of the
    same bytes hits the same cached predictions."""
    path = UPLOAD_DIR / hashlib.sha256(data).hexdigest()[:16] / Path(name).name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return path


def table(rows: list[Row]) -> pd.DataFrame:
    """One line per configuration: the median of its runs and their spread, and once predicted the model's figures
    beside them; error is predicted / measured − 1, ratios are predicted / measured."""
    out = []
    for r in rows:
        m, p = r.obs.measured, r.pred
        throughput = r.ratio("records_per_sec")
        out.append({"config": r.obs.config_id, "role": r.role, "runs": r.obs.repeats,
                    "measured records/s": m.get("records_per_sec"), "predicted records/s": p.get("records_per_sec"),
                    "error": throughput - 1 if throughput is not None else None,
                    "run range": r.obs.spread.get("records_per_sec"), "noise": run_noise(r.obs),
                    "measured p50 ms": m.get("p50_ms"), "predicted p50 ms": p.get("p50_ms"),
                    "measured p99 ms": m.get("p99_ms"), "predicted p99 ms": p.get("p99_ms"),
                    "p99 predicted / measured": r.ratio("p99_ms")})
    frame = pd.DataFrame(out)
    if not any(r.pred for r in rows):          # measured only, before the prediction
        frame = frame.drop(columns=[c for c in PREDICTED_COLUMNS if c in frame])
    return frame


def summary_figures(summary: dict) -> list[tuple[str, str, str]]:
    """(label, value, what it means) for report.summarise's figures, the error beside the noise floor."""
    s = summary

    def pct(x: float) -> str:
        return "—" if math.isnan(x) else f"{100 * x:.1f} %"

    def ratio(x: float) -> str:
        return "—" if math.isnan(x) else f"{x:.2f}"

    return [
        ("held-out throughput error", pct(s["throughput_mdape"]),
         f"Median over the {s['held_out_configs']} held-out configurations of |predicted / measured − 1|."),
        ("noise floor", pct(s["noise_floor_mdape"]),
         "Runs' mean absolute deviation from their configuration's median (median over held-out configurations): "
         "a perfect model would still miss single runs by this much."),
        ("run range", pct(s["noise_median_range"]),
         "(fastest − slowest run) / median, median over held-out configurations."),
        ("p50 predicted / measured", ratio(s["p50_ratio_median"]), "Median over held-out configurations."),
        ("p99 predicted / measured", ratio(s["p99_ratio_median"]), "Median over held-out configurations."),
        ("throttled p99 predicted / measured", ", ".join(f"{x:g}" for x in s["throttled_p99_ratios"]) or "—",
         "One ratio per throttled held-out configuration (perf-test --throughput): their latency is not a backlog."),
        ("throttled p99, single runs / median",
         ", ".join(f"{lo:g}–{hi:g}" for lo, hi in s["throttled_p99_run_ratios"]) or "—",
         "The same configurations' lowest and highest single run over their median: how far p99 repeats."),
        ("Sender CPU predicted / measured", ratio(s.get("sender_cpu_ratio_median", math.nan)),
         "The Sender thread's CPU-seconds, median over all configurations (Java runs that recorded it)."),
        ("worker CPU predicted / measured", ratio(s.get("worker_cpu_ratio_median", math.nan)),
         "The worker thread's CPU-seconds inside perf-test's window, median over all configurations (runs that "
         "recorded the threads' CPU at the producer's start): which thread's costs are off."),
    ]


def scatter_frame(rows: list[Row]) -> pd.DataFrame:
    """Measured and predicted throughput and p99 per configuration, long format (one line per figure)."""
    out = [{"config": r.obs.config_id, "role": r.role, "figure": label, "measured": r.obs.measured[target],
            "predicted": r.pred[target]}
           for target, label in TARGETS for r in rows
           if r.obs.measured.get(target, 0) > 0 and r.pred.get(target, 0) > 0]
    return pd.DataFrame(out, columns=["config", "role", "figure", "measured", "predicted"])


def factor_frame(rows: list[Row]) -> pd.DataFrame:
    """Held-out throughput error in % per factor and value, only for factors the held-out runs vary."""
    out = [{"factor": factor, "value": value, "error %": e}
           for factor, groups in error_by_factor(rows).items() if len(groups) > 1
           for value, errors in groups.items() for e in errors]
    return pd.DataFrame(out, columns=["factor", "value", "error %"])


def report_parts(path: Path) -> tuple[str, list[Path]]:
    """A committed report's Markdown without its image links, and the images they name (those that exist)."""
    text = path.read_text()
    images = [path.parent / name for name in IMAGE.findall(text)]
    return IMAGE.sub("", text).rstrip(), [p for p in images if p.is_file()]
