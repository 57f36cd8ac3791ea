"""`kafkasim sweep` and `kafkasim plan`: add_sweep_commands(subparsers) adds both to the kafkasim CLI.

Errors in the input (bad --vary keys or values, impossible combinations) raise ScenarioError, which the CLI prints
as one line `kafkasim: error: …` with exit status 2; `main()` here does the same when this module is run alone.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kafkasim.model.scenario import ScenarioError, load_scenario


def cmd_sweep(args: argparse.Namespace) -> int:
    from kafkasim.app import sweep as sw

    if args.jobs < 1:
        raise ScenarioError(f"--jobs={args.jobs} is not allowed: expected an integer ≥ 1")
    if args.records is not None and args.records < 0:
        raise ScenarioError(f"--records={args.records} is not allowed: expected an integer ≥ 0 (0: the "
                            f"scenario's own count)")
    base = load_scenario(args.scenario, args.set)
    if args.seed is not None:
        base = base.replace(seed=args.seed)
    axes = sw.parse_axes(args.vary)
    if args.out:
        suffix = Path(args.out).suffix.lower()
        if suffix not in (".csv", ".json", ""):
            raise ScenarioError(f"--out {args.out!r}: expected a .csv or .json file name")
        if not Path(args.out).resolve().parent.is_dir():      # (checked before the work, not after it)
            raise ScenarioError(f"--out {args.out!r}: the folder {str(Path(args.out).parent)!r} does not exist")
    records = args.records or sw.SWEEP_RECORDS
    points = sw.lhs_points(axes, args.samples, args.sample_seed) if args.samples else sw.grid_points(axes)
    where = (f"on Dask at {args.scheduler}" if args.scheduler else
             f"in {args.jobs} processes" if args.jobs > 1 else "in this process")
    # Each finished point goes to OUT.partial.jsonl at once: a sweep that dies still leaves what it finished.
    partial = Path(f"{args.out}.partial.jsonl") if args.out else None
    if partial:
        partial.write_text("")

    def keep(settings: dict, row: dict) -> None:
        with open(partial, "a") as fh:
            fh.write(json.dumps({"settings": settings, "result": row}, default=str) + "\n")
    result = sw.sweep(base, axes, samples=args.samples, sample_seed=args.sample_seed, records=records,
                      jobs=args.jobs, scheduler=args.scheduler, progress=not args.quiet,
                      on_point=keep if partial else None)
    print(f"kafkasim: {len(points)} configurations {where} in {result.wall_seconds:.1f} s; {result.note}",
          file=sys.stderr)
    if result.interrupted and not result.rows:
        return 130
    if args.out:
        sw.write_output(result, args.out)
        partial.unlink()
    plot_path = args.plot or (str(Path(args.out).with_suffix(".png")) if args.out else None)
    if plot_path:
        sw.plot(result, plot_path)
    if args.format == "json":
        json.dump(result.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(sw.format_table(result))
        if args.out or plot_path:
            print("\n" + ", ".join(f"wrote {p}" for p in (args.out, plot_path) if p))
    return 130 if result.interrupted else 0


def cmd_plan(args: argparse.Namespace) -> int:
    from kafkasim.app import plan_command

    return plan_command.run_cli(args)


def add_sweep_commands(subparsers) -> None:
    """Add the `sweep` and `plan` subcommands to the kafkasim CLI's subparsers."""
    sweep = subparsers.add_parser(
        "sweep", help="predict a scenario for many settings (grid or Latin hypercube), locally or on Dask",
        description="Simulate the scenario once per combination of the --vary values (or --samples points of a "
                    "Latin hypercube over ranges) and tabulate throughput, latency and the bottleneck.")
    sweep.add_argument("scenario", help="scenario YAML file")
    sweep.add_argument("--vary", action="append", default=[], metavar="KEY=V1,V2,...|KEY=LOW:HIGH[:log]",
                       help="a setting to vary, e.g. --vary batch.size=16384,65536 --vary linger.ms=0,5,20; "
                            "ranges need --samples")
    sweep.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a scenario field for every point")
    sweep.add_argument("--samples", type=int, help="Latin hypercube of N points instead of the full grid")
    sweep.add_argument("--sample-seed", type=int, default=0, help="seed of the Latin hypercube (default 0)")
    sweep.add_argument("--seed", type=int, help="override the scenario's (model) seed")
    sweep.add_argument("--records", type=int,
                       help="records simulated per configuration over all producers (default, or 0: the "
                            "scenario's own count, as predict runs it; fewer: quicker, more the run's start)")
    sweep.add_argument("--jobs", "-j", type=int, default=1, help="local worker processes (default 1)")
    sweep.add_argument("--scheduler", metavar="tcp://HOST:8786",
                       help="run on this Dask distributed scheduler (needs kafkasim[dask])")
    sweep.add_argument("--out", help="write the results to this .csv or .json file (and a .png plot beside it)")
    sweep.add_argument("--plot", help="write the plot to this PNG file")
    sweep.add_argument("--format", choices=("text", "json"), default="text")
    sweep.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    sweep.set_defaults(func=cmd_sweep)

    plan = subparsers.add_parser(
        "plan", help="find the cheapest cluster and producer configuration that meets a target rate",
        description="Search brokers, partitions, producers, threads and batch.size, linger.ms, compression and "
                    "max.in.flight for the cheapest configuration whose predicted capacity meets --target-rps with "
                    "headroom (and --p99-ms), pruning with analytic bounds and deciding with the model.")
    plan.add_argument("--target-rps", type=float, required=True, help="records per second the cluster must take")
    plan.add_argument("--record-size", required=True, metavar="B|MIN-MAX",
                      help="record value size in bytes, or a uniform range like 500-1000")
    plan.add_argument("--acks", choices=("0", "1", "all"), default="all")
    plan.add_argument("--rf", type=int, default=3, help="replication factor (default 3)")
    plan.add_argument("--p99-ms", type=float, help="p99 latency limit at the planned load (perf-test's measure)")
    plan.add_argument("--consumer-groups", type=_groups, default=0,
                      help="consumer groups reading every record beside the producers (default 0): their reads "
                           "leave the brokers' NICs beside the replication")
    plan.add_argument("--catch-up", metavar="RECORDS:SECONDS",
                      help="one more group, RECORDS behind, must read them within SECONDS while the producers run: "
                           "its reads leave the NICs, and come from disk where the lag exceeds the page cache")
    plan.add_argument("--headroom", type=float, default=0.30,
                      help="capacity margin over the target (default 0.30: plan for 1.3 × target)")
    plan.add_argument("--profile", default="generic-server",
                      help="hardware profile (model/profiles/ name or .yaml path; default generic-server)")
    plan.add_argument("--client-version", default="3.9", help="Java client version (default 3.9)")
    plan.add_argument("--payload", default="random-letters",
                      choices=("random-letters", "random-bytes", "text"), help="what records hold (compressibility)")
    plan.add_argument("--min-brokers", type=int, default=1)
    plan.add_argument("--max-brokers", type=int, default=40)
    plan.add_argument("--max-producers", type=int, default=64, help="producer instances at most (default 64)")
    plan.add_argument("--max-threads", type=int, default=2,
                      help="worker threads per producer at most (default 2: more contend on the producer's locks, "
                           "so the planner adds producer instances instead)")
    plan.add_argument("--tries-per-shape", type=int, default=1,
                      help="producer settings simulated per shape, most promising first (default 1)")
    plan.add_argument("--batch-sizes", help="batch.size values to consider (comma list)")
    plan.add_argument("--linger-ms", help="linger.ms values to consider (comma list)")
    plan.add_argument("--compression", help="compression.type values to consider (comma list)")
    plan.add_argument("--max-in-flight", help="max.in.flight values to consider (comma list)")
    plan.add_argument("--sim-seconds", type=float, default=None,
                      help="simulated traffic per evaluation, s (default: 0.08 s or 40,000 records, whichever is more)")
    plan.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                      help="any other scenario field, e.g. hardware.nic_mbit=25000")
    plan.add_argument("--jobs", "-j", type=int, default=2, help="model evaluations in parallel (default 2)")
    plan.add_argument("--scheduler", metavar="tcp://HOST:8786", help="evaluate on a Dask scheduler")
    plan.add_argument("--no-sensitivity", action="store_true", help="skip the sensitivity runs")
    plan.add_argument("--format", choices=("text", "json"), default="text")
    plan.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    plan.set_defaults(func=cmd_plan)


def _groups(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"{value} is not allowed: 0 … 100 groups")
    return value
