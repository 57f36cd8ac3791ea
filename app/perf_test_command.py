"""`kafkasim perf-test`: kafka-producer-perf-test's own command line, predicted instead of run, so a user can paste
the command they already use. The cluster and hardware come from --scenario (a scenario file) and --set."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kafkasim.app.predict_command import predict
from kafkasim.model.scenario import ScenarioError, from_flat, load_scenario

# Client properties that say how to reach and authenticate to the cluster, not how the producer behaves: taken
from kafkasim.model.scenario_fields import FIELDS, parse_overrides
# without a word (their values, passwords among them, are never read further or printed).
CONNECTION = ("bootstrap.servers", "client.id", "key.serializer", "value.serializer", "security.protocol",
              "sasl.", "ssl.", "metadata.", "reconnect.", "client.dns.lookup", "connections.max.idle.ms")


def properties(text: str) -> list[tuple[str, str]]:
    """key=value (or key: value) lines of a Java properties file, without comments and blank lines."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i > 0), default=-1)
        if sep < 0:
            raise ScenarioError(f"--producer.config: {line[:40]!r} is not a key=value line")
        out.append((line[:sep].strip(), line[sep + 1:].strip()))
    return out


def overrides(args: argparse.Namespace) -> tuple[dict, list[str]]:
    """The scenario keys perf-test's flags set, and the producer properties the model has no setting for."""
    props = []
    if args.producer_config:
        path = Path(args.producer_config)
        if not path.is_file():
            raise ScenarioError(f"--producer.config {str(path)!r} does not exist")
        props += properties(path.read_text())
    for item in args.producer_props or []:          # as perf-test: the command line wins over the file
        if "=" not in item:
            raise ScenarioError(f"--producer-props {item[:40]!r}: expected key=value")
        key, value = item.split("=", 1)
        props.append((key.strip(), value.strip()))
    sets, unknown = [], []
    for key, value in props:
        if key.startswith(CONNECTION):
            continue
        if f"producer.{key}" in FIELDS:
            sets.append(f"producer.{key}={value}")
        else:
            unknown.append(key)
    flat = parse_overrides(sets)
    flat["workload.records"] = args.num_records
    if args.record_size is not None:
        flat["workload.record_size"] = args.record_size
    flat["workload.throughput"] = args.throughput
    if args.warmup_records is not None:
        flat["workload.warmup_records"] = args.warmup_records
    if args.reporting_interval is not None:
        flat["workload.reporting_interval_ms"] = args.reporting_interval
    if args.payload_file:
        flat["workload.payload"], flat["workload.payload_file"] = "file", args.payload_file
        if args.record_size is None:
            flat.update(payload_sizes(Path(args.payload_file), args.payload_delimiter))
    return flat, unknown


def payload_sizes(path: Path, delimiter: str) -> dict:
    """perf-test sends the file's pieces (split at the delimiter) at random: the model's sizes are uniform over the
    same mean (and the same largest piece, where that range is possible)."""
    try:
        pieces = [p for p in path.read_bytes().split(delimiter.encode().decode("unicode_escape").encode()) if p]
    except OSError as exc:
        raise ScenarioError(f"--payload-file {str(path)!r}: {exc.strerror}") from None
    if not pieces:
        raise ScenarioError(f"--payload-file {str(path)!r} holds no payloads")
    sizes = [len(p) for p in pieces]
    mean, top = round(sum(sizes) / len(sizes)), max(sizes)
    out = {"workload.record_size": mean}
    if top > mean and 2 * mean - top >= 1:
        out["workload.record_size_max"] = top
    return out


def cmd_perf_test(args: argparse.Namespace) -> int:
    if args.transactional_id or args.transaction_duration_ms:
        raise ScenarioError("--transactional-id / --transaction-duration-ms are not allowed: the model has no "
                            "transactions; leave them out for the same run without them")
    if (args.record_size is None) == (args.payload_file is None):
        raise ScenarioError("either --record-size or --payload-file must be given, not both (as perf-test)")
    flat, unknown = overrides(args)
    flat.update(parse_overrides(args.set))
    scenario = (load_scenario(args.scenario, [f"{k}={v}" for k, v in flat.items()]) if args.scenario
                else from_flat({"name": f"perf-test {args.topic}", **flat}, source="perf-test"))
    for key in unknown:
        print(f"kafkasim: note: producer property {key} is not a setting the model has: left out", file=sys.stderr)
    return predict(scenario, args)


def add_perf_test_command(subparsers) -> None:
    p = subparsers.add_parser(
        "perf-test", help="predict a kafka-producer-perf-test command line (its own flags)",
        description="Takes kafka-producer-perf-test's flags and predicts what it would print. Cluster and hardware "
                    "from --scenario and --set (default: the built-in scenario defaults, one broker).")
    p.add_argument("--topic", default="perf-test", help="topic name (as perf-test; only names the run)")
    p.add_argument("--num-records", type=int, required=True, help="records to send")
    p.add_argument("--record-size", type=int, help="bytes per record")
    p.add_argument("--throughput", type=float, required=True, help="records/s cap, -1 for none")
    p.add_argument("--producer-props", nargs="+", metavar="PROP=VALUE", help="producer properties")
    p.add_argument("--producer.config", dest="producer_config", metavar="FILE", help="producer properties file")
    p.add_argument("--payload-file", help="file of record values (the model samples their sizes and codec ratio)")
    p.add_argument("--payload-delimiter", default="\\n", help="(accepted as perf-test's; the file is read whole)")
    p.add_argument("--warmup-records", type=int, help="records left out of the summary (perf-test 3.8+)")
    p.add_argument("--reporting-interval", type=int, help="ms between window lines (default 5000)")
    p.add_argument("--print-metrics", action="store_true", help="(the producer metrics are always printed)")
    p.add_argument("--transactional-id", help="not modelled: refused")
    p.add_argument("--transaction-duration-ms", type=int, help="not modelled: refused")
    p.add_argument("--scenario", help="scenario YAML for the cluster, topic and hardware (perf-test's flags win)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a scenario field")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--seed", type=int, help="the model's seed")
    p.add_argument("--band", type=int, metavar="DRAWS", help="as predict's --band")
    p.add_argument("--timeline", action="store_true", help="as predict's --timeline")
    p.set_defaults(func=cmd_perf_test)
