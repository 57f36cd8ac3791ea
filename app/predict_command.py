"""What `kafkasim predict` prints (and `kafkasim perf-test`, which predicts a perf-test command line)."""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from kafkasim.model.simulate import simulate


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _say_progress(p: dict) -> None:
    eta = f", about {p['eta_seconds']:.0f} s to go" if p["eta_seconds"] is not None else ""
    print(f"kafkasim: {p['records']:,} of {p['of']:,} records done, {p['simulated_seconds']:.2f} s simulated{eta} "
          f"(Ctrl-C stops)", file=sys.stderr, flush=True)


def predict(scenario, args: argparse.Namespace) -> int:
    """Simulate and print as `predict` does (args: format, seed, band, timeline)."""
    if args.seed is not None:
        scenario = scenario.replace(seed=args.seed)
    if args.format == "text":
        print(f"kafkasim: simulating {scenario.name} ({scenario.workload.records * scenario.producers} records)...",
              file=sys.stderr)
    result = simulate(scenario, progress=_say_progress if args.format == "text" else None)
    from kafkasim.calibration.bands import band, held_out_line, uncertainty
    spread = None
    if args.band is None:       # by default, a band whenever the profile was fitted with uncertainty
        args.band = 8 if uncertainty(scenario) else 0
    if args.band:
        if args.format == "text":
            print(f"kafkasim: drawing {args.band} parameter sets from the profile's fit for a band...",
                  file=sys.stderr)
        spread = band(scenario, result.perf_test, draws=args.band)
    if args.format == "json":
        out = result.to_json(timeline=args.timeline)
        out["band"] = spread
        out["not_modelled"] = scenario.not_modelled()
        json.dump(out, sys.stdout, indent=1, default=_json_default)
        print()
    else:
        print(result.text())
        if result.cut_short:
            print(f"kafkasim: {result.cut_short}", file=sys.stderr)
        if spread:
            lo, hi = spread["records_per_sec"]
            print(f"band ({spread['level']:.0%} of {spread['draws']} draws from the profile's fit): "
                  f"{lo:,.0f}–{hi:,.0f} records/s, p50 {spread['p50_ms'][0]:.0f}–{spread['p50_ms'][1]:.0f} ms, "
                  f"p99 {spread['p99_ms'][0]:.0f}–{spread['p99_ms'][1]:.0f} ms")
        trust = held_out_line(scenario)
        if trust:
            print(trust)
    from kafkasim.calibration.host import profile_line
    stale = profile_line(scenario.hardware.profile)
    if stale:
        print(stale, file=sys.stderr)
    for line in scenario.not_modelled() if args.format == "text" else ():
        print(f"kafkasim: note: {line}", file=sys.stderr)
    return 0
