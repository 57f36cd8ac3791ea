"""The `kafkasim` command line."""
from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from kafkasim.app.predict_command import predict
from kafkasim.model.errors import LiveError, UserError
from kafkasim.model.scenario import ScenarioError, load_scenario


def cmd_predict(args: argparse.Namespace) -> int:
    return predict(load_scenario(args.scenario, args.set), args)


def _snapshot_figures(path: str) -> dict[str, float]:
    """A snapshot file: a perf-test --print-metrics dump, or a YAML of figures."""
    from kafkasim.calibration.snapshot import KNOWN, read_snapshot

    text = open(path).read() if os.path.isfile(path) else ""
    if "records sent" in text:
        from kafkasim.validation.perftest import parse
        out = parse(text)
        figures = {k.split(":", 1)[1]: float(v) for k, v in out.metrics.items()
                   if k.startswith("producer-metrics:") and k.split(":", 1)[1] in KNOWN and isinstance(v, float)}
        if out.total:
            figures["records_per_sec"] = out.total.records_per_sec
        return {k: v for k, v in figures.items() if v > 0}
    return read_snapshot(path)


def cmd_calibrate(args: argparse.Namespace) -> int:
    from kafkasim.calibration.fit import fit
    from kafkasim.calibration.profile import profile_from_fit, write_profile
    from kafkasim.calibration.runs import load_observations
    from kafkasim.calibration.snapshot import snapshot_observation

    if args.runs == "scale":
        return _calibrate_scale(args)
    if args.runs == "host":
        from kafkasim.validation.host_calibration import calibrate_host, write_host_profile
        if args.from_runs:
            write_host_profile(args.from_runs, args.output)
            print(f"wrote {args.output} from {args.from_runs}")
        else:
            calibrate_host(args.output, short=args.short)
        return 0
    parameters = args.parameters.split(",") if args.parameters else None
    try:
        if args.snapshot:
            if not args.scenario:
                raise ValueError("--snapshot needs --scenario: the settings and hardware the figures were measured in")
            obs, guessed = snapshot_observation(args.scenario, _snapshot_figures(args.snapshot), args.set)
            observations, parameters = [obs], parameters or guessed
            base = args.base_profile or obs.scenario["hardware.profile"]
            source = args.snapshot
        else:
            if not args.runs:
                raise ValueError("give a run store (RUNS.jsonl) or --snapshot FILE --scenario SCENARIO")
            observations = load_observations(args.runs, library=args.client,
                                             role=None if args.role == "all" else args.role, select=args.select)
            if not observations:
                raise ValueError(f"no {args.client} runs with role {args.role!r} in {args.runs} "
                                 f"(--role all to use every run)")
            base, source = args.base_profile or "local-2core", args.runs
        result = fit(observations, base, parameters, args.max_records, args.max_evaluations, jobs=args.jobs)
    except (FileNotFoundError, ValueError) as exc:
        raise ScenarioError(str(exc)) from None
    name = args.name or os.path.basename(args.output).removesuffix(".yaml")
    write_profile(profile_from_fit(result, name, source, [o.config_id for o in observations]), args.output)
    print(f"wrote {args.output}: " + ", ".join(f"{k}={v:.4g} (×/÷ {math.exp(result.sigma_log[k]):.2f})"
                                              for k, v in result.values.items()))
    return 0


def _calibrate_scale(args: argparse.Namespace) -> int:
    """calibrate scale: a measured profile's CPU costs scaled to a stated host."""
    from kafkasim.calibration.host_costs import CLIENT_PREFIXES
    from kafkasim.calibration.profile import write_profile
    from kafkasim.calibration.scale import scaled
    from kafkasim.model.scenario_fields import check_value, parse_overrides

    missing = [flag for flag, value in (("--base-profile", args.base_profile), ("--cores", args.cores),
                                        ("--speed-ratio", args.speed_ratio), ("--benchmark", args.benchmark))
               if value is None]
    try:
        if missing:
            raise ValueError(f"calibrate scale needs {', '.join(missing)}: the measured profile, the stated host's "
                             f"cores, its per-core speed ÷ the measured host's, and the benchmark that says so")
        name = args.name or os.path.basename(args.output).removesuffix(".yaml")
        profile = scaled(args.base_profile, args.cores, args.speed_ratio, args.benchmark, name)
        for full, value in parse_overrides(args.set).items():
            if not full.startswith("hardware."):
                raise ValueError(f"--set {full}: expected hardware.KEY=VALUE (the stated host's NIC, disk, RTT, ...)")
            key, value = full.removeprefix("hardware."), check_value(full, value)
            if key.startswith(CLIENT_PREFIXES):
                for keys in profile["clients"].values():
                    keys[key] = value
            else:
                profile["hardware"][key] = value
    except (FileNotFoundError, ValueError) as exc:
        raise ScenarioError(str(exc)) from None
    write_profile(profile, args.output)
    print(f"wrote {args.output}: {len(profile['provenance']['scaled_keys'])} CPU costs ÷ {args.speed_ratio:g}, "
          f"{args.cores} cores a host")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from kafkasim.calibration.host import mismatch
    from kafkasim.model.hardware import load_profile
    from kafkasim.validation.report import shortened_line, validate
    from kafkasim.validation.store import RunStore

    if args.no_fit and args.runs and os.path.isfile(args.runs):
        hosts = [(r.get("environment") or {}).get("host") for r in RunStore(args.runs).records()]
        runs_host = next((h for h in hosts if h), None)
        try:
            line = mismatch(args.base_profile, load_profile(args.base_profile).get("host"), runs_host,
                            "the runs' host")
        except ValueError:
            line = None
        if line:
            print(line, file=sys.stderr)
    try:
        summary = validate(args.runs, args.matrix, args.client, args.base_profile, args.out_dir, args.profile,
                           args.max_records, args.max_evaluations, jobs=args.jobs,
                           remeasured_runs=args.remeasured, fit_first=not args.no_fit,
                           parameters=args.parameters.split(",") if args.parameters else None)
    except (FileNotFoundError, ValueError) as exc:
        raise ScenarioError(str(exc)) from None
    print(f"report: {summary['report']}\nprofile: {summary['profile']}")
    if summary.get("shortened_configs"):
        print(shortened_line(summary), file=sys.stderr)
    if summary.get("unthrottled_configs"):
        print(f"unthrottled throughput error ({summary['unthrottled_configs']} configurations): median "
              f"{100 * summary['unthrottled_mdape']:.1f} % beside a noise floor of "
              f"{100 * summary['unthrottled_noise_floor']:.1f} %, worst {100 * summary['unthrottled_worst']:+.1f} % "
              f"({summary['unthrottled_worst_config']})")
    ratios = ("" if math.isnan(summary["p50_ratio_median"]) else       # (consumer runs have no latency)
              f"  p50 pred/meas {summary['p50_ratio_median']:.2f}  p99 pred/meas {summary['p99_ratio_median']:.2f}")
    print(f"held-out throughput error (median abs): {100 * summary['throughput_mdape']:.1f} %  "
          f"noise floor: {100 * summary['noise_floor_mdape']:.1f} %{ratios}")
    if not math.isnan(summary.get("e2e_p50_ratio_median", math.nan)):
        print(f"end-to-end latency of the tailing consumer, pred/meas: p50 {summary['e2e_p50_ratio_median']:.2f}  "
              f"p99 {summary['e2e_p99_ratio_median']:.2f}")
    if "session_noise_mdape" in summary:
        print(f"another session: {100 * summary['session_noise_mdape']:.1f} % from the reference runs; "
              f"model error against it {100 * summary['throughput_mdape_remeasured']:.1f} %")
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:          # argparse's own errors: one line, exit 2
        self.exit(2, f"kafkasim: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkasim", description="Predict Kafka producer throughput and latency, and check "
                                                  "predictions against real clusters.")
    import kafkasim
    parser.add_argument("--version", action="version", version=f"kafkasim {kafkasim.__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    predict = sub.add_parser("predict", help="simulate a scenario and print what perf-test and the metrics "
                                             "would show")
    predict.add_argument("scenario", help="scenario YAML file")
    predict.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                         help="override a scenario field, e.g. --set producer.batch.size=65536")
    predict.add_argument("--format", choices=("text", "json"), default="text")
    predict.add_argument("--seed", type=int, help="override the scenario's seed")
    predict.add_argument("--timeline", action="store_true", help="include the backlog/in-flight timeline in JSON")
    predict.add_argument("--band", type=int, metavar="DRAWS",
                         help="prediction band from the profile's fitted uncertainty: DRAWS re-runs (default 8 "
                              "when the profile has a fit, 0 = none)")
    predict.set_defaults(func=cmd_predict)
    _calibrate_parser(sub)
    validate = sub.add_parser("validate", help="fit on calibration runs, predict held-out runs, write a report")
    validate.add_argument("runs", nargs="?", default="validation/data/local-quiet.jsonl",
                          help="run store (JSONL; default: the reference data set)")
    validate.add_argument("--matrix", default="validation/matrices/local.yaml",
                          help="matrix file whose roles split calibration from held-out (default: the local one)")
    validate.add_argument("--client", default="java", choices=("java", "kafka-python"))
    validate.add_argument("--base-profile", default="local-2core",
                          help="profile to start the fit from (with --no-fit: the profile checked)")
    validate.add_argument("--no-fit", action="store_true",
                          help="check --base-profile as it is on every run (your cluster's runs, another machine's)")
    validate.add_argument("--out-dir", default="validation/reports", help="where the report and plots go")
    validate.add_argument("--profile", help="where to write the fitted profile (default: beside the report)")
    _fit_arguments(validate)
    validate.add_argument("--remeasured", metavar="RUNS",
                          help="run store of the same configurations measured in another session: the report "
                               "gives the difference between sessions and the model's error against it")
    validate.set_defaults(func=cmd_validate)
    from kafkasim.app.app_command import add_app_command
    from kafkasim.app.live_commands import add_live_commands
    from kafkasim.app.perf_test_command import add_perf_test_command
    from kafkasim.app.reproduce_command import add_reproduce_command
    from kafkasim.app.sweep_commands import add_sweep_commands
    add_sweep_commands(sub)
    add_live_commands(sub)
    add_app_command(sub)
    add_reproduce_command(sub)
    add_perf_test_command(sub)
    return parser


def _fit_arguments(parser) -> None:
    """What a fit to runs takes: the parameters, how long each run is simulated, and its budget."""
    parser.add_argument("--parameters", help="comma-separated hardware keys to fit (default: per client)")
    parser.add_argument("--max-records", type=int,
                        help="simulate each run with as many records as it measured, up to this many "
                             "(default 1,000,000)")
    parser.add_argument("--jobs", type=int, help="simulations run side by side (default: one per core)")
    parser.add_argument("--max-evaluations", type=int, default=60)


def _calibrate_parser(sub) -> None:
    """calibrate: host, scale, or a fit to runs or a snapshot."""
    calibrate = sub.add_parser("calibrate", help="measure this host's costs (calibrate host -o PROFILE.yaml), or fit "
                                                 "a profile's costs to measured runs")
    calibrate.add_argument("runs", nargs="?", help="'host': measure this host's CPU costs on a private cluster "
                                                   "(≈ 3 min); 'scale': derive a server's profile from a measured "
                                                   "one (--base-profile, --cores, --speed-ratio, --benchmark); or a "
                                                   "run store (JSONL) written by kafkasim measure")
    calibrate.add_argument("--cores", type=int, help="with scale: the stated host's cores")
    calibrate.add_argument("--speed-ratio", type=float,
                           help="with scale: the stated host's per-core speed ÷ the measured host's")
    calibrate.add_argument("--benchmark", help="with scale: the CPU benchmark the speed ratio comes from (e.g. "
                                               "'Geekbench 6 single-core 2950 vs 1640')")
    calibrate.add_argument("--short", action="store_true", help="with host: a tenth of the records (a test)")
    calibrate.add_argument("--from-runs", metavar="RUNS.jsonl",
                           help="with host: the profile of runs it stored before (the regression only)")
    calibrate.add_argument("--snapshot", help="instead of runs: a perf-test --print-metrics dump or a YAML of "
                                              "figures (request-latency-avg: 9.8, ...)")
    calibrate.add_argument("--scenario", help="with --snapshot: the scenario the figures were measured in")
    calibrate.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                           help="with --snapshot: override a scenario field; with scale: a hardware.KEY of the "
                                "stated host (nic_mbit, rtt_ms, disk_mb_s, ...)")
    calibrate.add_argument("-o", "--output", required=True, help="profile YAML to write")
    calibrate.add_argument("--client", default="java", choices=("java", "kafka-python"))
    calibrate.add_argument("--role", default="calibration",
                           help="use runs with this role (calibration, held-out, or all)")
    calibrate.add_argument("--select", help="only configurations whose id contains this text")
    calibrate.add_argument("--base-profile", help="profile to start from (default: local-2core, or with "
                                                  "--snapshot the scenario's own)")
    calibrate.add_argument("--name", help="profile name (default: the output file's name)")
    _fit_arguments(calibrate)
    calibrate.set_defaults(func=cmd_calibrate)


def main(argv: list[str] | None = None) -> int:
    """Bad input: one line, status 2. A failed live step: one line, status 1. No tracebacks. SIGTERM and SIGHUP are
    treated like Ctrl-C, so whatever a live command started is stopped on the way out."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # Ctrl-C, a closed terminal and SIGTERM all stop what a live command started, even where the shell that started
    # kafkasim in the background had set SIGINT to be ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _interrupt)
    try:
        return args.func(args)
    except (ScenarioError, UserError) as exc:
        print(f"kafkasim: error: {exc}", file=sys.stderr)
        return 2
    except LiveError as exc:
        print(f"kafkasim: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("kafkasim: interrupted; everything it started was stopped", file=sys.stderr)
        return 130


def _interrupt(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    sys.exit(main())
