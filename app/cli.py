"""The `kafkasim` command line."""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from kafkasim.model.scenario import ScenarioError, load_scenario
from kafkasim.model.simulate import simulate


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot serialise {type(value).__name__}")


def cmd_predict(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.scenario, args.set)
    if args.seed is not None:
        scenario = scenario.replace(seed=args.seed)
    if args.format == "text":
        print(f"kafkasim: simulating {scenario.name} ({scenario.workload.records * scenario.producers} records)...",
              file=sys.stderr)
    result = simulate(scenario)
    if args.format == "json":
        json.dump(result.to_json(timeline=args.timeline), sys.stdout, indent=1, default=_json_default)
        print()
    else:
        print(result.text())
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:          # argparse's own errors: one line, exit 2
        self.exit(2, f"kafkasim: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kafkasim", description="Predict Kafka producer throughput and latency, and check "
                                                  "predictions against real clusters.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    predict = sub.add_parser("predict", help="simulate a scenario and print what perf-test and the metrics "
                                             "would show")
    predict.add_argument("scenario", help="scenario YAML file")
    predict.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                         help="override a scenario field, e.g. --set producer.batch.size=65536")
    predict.add_argument("--format", choices=("text", "json"), default="text")
    predict.add_argument("--seed", type=int, help="override the scenario's seed")
    predict.add_argument("--timeline", action="store_true", help="include the backlog/in-flight timeline in JSON")
    predict.set_defaults(func=cmd_predict)
    try:
        from kafkasim.validation.cli import add_commands
    except ImportError:
        add_commands = None
    if add_commands is not None:
        add_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except ScenarioError as exc:
        print(f"kafkasim: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kafkasim: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
