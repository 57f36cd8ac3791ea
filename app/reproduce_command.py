"""`kafkasim reproduce [STUDY] [--format text|json|markdown] [--out DIR] [--jobs N]`: predict every run of the
published studies (validation/published/) and compare with their figures: a table per study, trend checks, one plot
each."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafkasim.model.scenario import ScenarioError


def cmd_reproduce(args: argparse.Namespace) -> int:
    from kafkasim.validation import reproduce as rep

    studies = [args.study] if args.study != "all" else list(rep.STUDIES)
    if args.study != "all" and args.study not in rep.STUDIES:
        raise ScenarioError(f"unknown study {args.study!r}: expected one of {', '.join(rep.STUDIES)} (or all)")
    if args.jobs is not None and args.jobs < 1:
        raise ScenarioError(f"--jobs={args.jobs} is not allowed: expected an integer ≥ 1")
    if args.records is not None and args.records < 0:
        raise ScenarioError(f"--records={args.records} is not allowed: expected 0 (the examples' own) or more")
    try:
        results = [rep.reproduce(study, args.records, jobs=args.jobs) for study in studies]
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    written = rep.write_reports(results, args.out) if args.out else []
    plots = {res.study: str(p) for res, p in zip(results, written[::3])}
    if args.format == "json":
        print(rep.as_json(results))
    elif args.format == "markdown":
        print(rep.markdown(results, plots))
    else:
        print(rep.text(results))
    for path in written:
        print(f"kafkasim: wrote {path}", file=sys.stderr)
    return 0


def add_reproduce_command(subparsers) -> None:
    from kafkasim.validation.reproduce import FORMATS, STUDIES

    p = subparsers.add_parser("reproduce", help="predict the published studies' runs and compare with their "
                                                "figures (tables, trend checks, plots)")
    p.add_argument("study", nargs="?", default="all", metavar="STUDY",
                   help=f"one of {', '.join(STUDIES)} (default: all)")
    p.add_argument("--format", choices=FORMATS, default="text")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="also write <study>.md, .json and .png there (the committed ones: "
                        "--out validation/reports/published)")
    p.add_argument("--records", type=int, metavar="N",
                   help="records simulated per run (default: each study's own, validation/published/*.yaml; "
                        "0 = the examples' full runs; vm-2core's own is 0: fewer weigh its runs' cold start more)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="a study's runs simulated side by side (default: one per core); the figures do not change")
    p.set_defaults(func=cmd_reproduce)
