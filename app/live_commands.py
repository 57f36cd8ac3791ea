"""`kafkasim cluster up|status|down` and `kafkasim measure`: the live half of the command line."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kafkasim.model.errors import UserError


def add_live_commands(subparsers) -> None:
    cluster = subparsers.add_parser("cluster", help="start, inspect or stop a local Apache Kafka cluster (KRaft)")
    actions = cluster.add_subparsers(dest="cluster_action", required=True, metavar="up|status|down")
    up = actions.add_parser("up", help="start 1 or 3 combined broker+controller nodes on loopback")
    up.add_argument("--brokers", type=int, default=1, choices=(1, 3))
    up.add_argument("--base-port", type=int, default=9092, help="first client port (default 9092)")
    up.add_argument("--tls", action="store_true", help="an SSL listener too (first port + 400), with a throwaway "
                                                     "self-signed certificate for 127.0.0.1 in the cluster directory")
    for p in (up, actions.add_parser("status", help="show what is running"),
              actions.add_parser("down", help="stop exactly what `up` started")):
        p.add_argument("--dir", type=Path, help="cluster directory (default ~/.cache/kafkasim/cluster)")
        p.set_defaults(func=_cluster)

    m = subparsers.add_parser("measure", help="run a scenario's producer settings on a real cluster, store the runs")
    m.add_argument("scenario", nargs="?", type=Path, help="scenario YAML file (or use --matrix)")
    m.add_argument("--matrix", type=Path, help="a matrix file (validation/matrices/*.yaml) of configurations")
    m.add_argument("--bootstrap-server", metavar="HOST:PORT",
                   help="your cluster (default: the one `kafkasim cluster up` started, else a private one)")
    m.add_argument("--client", choices=("java", "kafka-python", "confluent-kafka"),
                   help="client library (default java; with --matrix: only this client's configurations)")
    m.add_argument("--only", metavar="ID[,ID...]",
                   help="with --matrix: only these configurations (their ids, comma-separated)")
    m.add_argument("--repeat", type=int, help="measured runs per configuration (default 3, or the matrix's); "
                                              "runs already stored count, so a higher number adds more")
    m.add_argument("--warmup-records", type=int,
                   help="records of the discarded warm-up run before each configuration (default 200000; 0 = none)")
    m.add_argument("--out", type=Path, default=Path("runs.jsonl"), help="JSONL file the runs are appended to")
    m.add_argument("--command-config", type=Path, metavar="FILE",
                   help="client properties (security.protocol, SASL, SSL) as Kafka's tools take them")
    m.add_argument("--base-port", type=int, metavar="PORT",
                   help="first port of the private cluster kafkasim starts (default: the first free block from "
                        "19092 in steps of 1000)")
    m.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a scenario key, e.g. producer.batch.size=65536 (repeatable)")
    m.set_defaults(func=_measure)


def _cluster(args: argparse.Namespace) -> int:
    from kafkasim.validation.cluster import Cluster
    if args.cluster_action == "up":
        cluster = Cluster(args.dir, args.brokers, args.base_port, tls=args.tls)
        print(f"kafkasim: starting {args.brokers} Kafka node(s) in {cluster.directory}", flush=True)
        cluster.up()
        print(f"kafkasim: cluster up; bootstrap server {cluster.state.bootstrap}")
        if args.tls:
            ca = cluster.state.tls_directory / "ca.pem"
            print(f"kafkasim: SSL listener {cluster.state.ssl_bootstrap} (security.protocol=SSL, "
                  f"ssl.truststore.type=PEM, ssl.truststore.location={ca})")
        return 0
    cluster = Cluster.load(args.dir)
    if args.cluster_action == "status":
        if cluster is None:
            print("kafkasim: no cluster has been started here")
            return 1
        status = cluster.status()
        print(json.dumps(status, indent=2))
        return 0 if status["up"] else 1
    if cluster is None:
        print("kafkasim: no cluster to stop")
        return 0
    stopped = cluster.down()
    print(f"kafkasim: stopped {len(stopped)} node(s)" + (f" (pids {', '.join(map(str, stopped))})" if stopped else ""))
    return 0


def _measure(args: argparse.Namespace) -> int:
    from kafkasim.validation import runners, targets
    from kafkasim.validation.matrix import Matrix
    from kafkasim.validation.measure import Config, Measurer
    from kafkasim.validation.store import RunStore

    if (args.scenario is None) == (args.matrix is None):
        raise UserError("measure needs exactly one of SCENARIO or --matrix FILE")
    if args.only and args.matrix is None:
        raise UserError("--only picks configurations of a matrix: it needs --matrix FILE")
    if args.command_config is not None and not args.command_config.is_file():
        raise UserError(f"--command-config {args.command_config}: no such file")
    if args.repeat is not None and args.repeat < 1:
        raise UserError(f"--repeat {args.repeat}: must be at least 1")
    if args.matrix:
        matrix = Matrix(args.matrix)
        configs = [c for c in matrix.configs if args.client in (None, c.client)]
        if args.only:
            wanted = set(args.only.split(","))
            unknown = sorted(wanted - {c.config_id for c in configs})
            if unknown:
                raise UserError(f"--only {','.join(unknown)}: not a configuration of {args.matrix}"
                                + (f" for {args.client}" if args.client else "")
                                + f"; expected ids such as {', '.join(c.config_id for c in configs[:3])}")
            configs = [c for c in configs if c.config_id in wanted]
        for c in configs:
            c.overrides += args.overrides
        repeat, warmup = args.repeat or matrix.repeat, matrix.warmup_records
    else:
        configs = [Config(args.scenario, args.client or "java", list(args.overrides))]
        repeat, warmup = args.repeat or 3, 200_000
    if args.warmup_records is not None:  # the command line wins over the matrix, per config too
        warmup = args.warmup_records
        for c in configs:
            c.warmup_records = None
    measurer = Measurer(RunStore(args.out), repeat, warmup, args.command_config)
    # Load and check every scenario first (a typo fails before anything starts), then group by cluster shape.
    loaded = [(c, c.load()) for c in configs]
    for c, sc in loaded:
        runners.check_supported(sc, c.client)
    loaded.sort(key=lambda cs: (cs[1].cluster.brokers, cs[1].network.rtt_ms, cs[1].network.bandwidth_mbit))
    pool = targets.ClusterPool(command_config=args.command_config, say=measurer.say, base_port=args.base_port)
    try:
        for i, (config, sc) in enumerate(loaded):
            target = targets.resolve(sc, args.bootstrap_server, args.command_config, pool)
            measurer.measure(config, target, label=f"[{i + 1}/{len(loaded)}] ")
    except KeyboardInterrupt:
        print(f"kafkasim: interrupted; {measurer.runs_done} run(s) of this session kept in {args.out}",
              file=sys.stderr)
        return 130
    finally:
        pool.close()
    print(f"kafkasim: {measurer.runs_done} run(s) appended to {args.out}")
    return 0 if measurer.failures == 0 else 1
