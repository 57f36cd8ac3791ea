"""`kafkasim plan`'s command line: the request and the space from the arguments, the plan printed."""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from kafkasim.app.plan import Planner
from kafkasim.app.plan_report import Request, Space
from kafkasim.app.sweep import parse_values
from kafkasim.model.scenario import ScenarioError
from kafkasim.model.scenario_fields import parse_overrides


def _list(text: str | None, key: str, default: Sequence) -> tuple:
    return parse_values(text, key, f"{key} {text!r}") if text else tuple(default)


def parse_record_size(text: str) -> tuple[int, int]:
    """'1000' -> (1000, 0); '500-1000' -> mean 750, max 1000 (the model's uniform size distribution)."""
    try:
        if "-" in text.strip()[1:]:
            lo, hi = (int(x) for x in text.split("-", 1))
            if not 0 < lo < hi:
                raise ValueError
            return (lo + hi) // 2, hi if hi > (lo + hi) // 2 else 0
        value = int(text)
        if value < 1:
            raise ValueError
        return value, 0
    except ValueError:
        raise ScenarioError(f"--record-size={text!r} is not allowed: expected bytes (1000) or a range "
                            f"(500-1000)") from None


def parse_catch_up(text: str) -> tuple[float, float]:
    """--catch-up RECORDS:SECONDS: a group that many records behind must catch up within that many seconds."""
    try:
        records, seconds = (float(x) for x in text.split(":"))
        if records > 0 and seconds > 0:
            return records, seconds
    except ValueError:
        pass
    raise ScenarioError(f"--catch-up={text!r} is not allowed: expected RECORDS:SECONDS, both > 0 "
                        f"(50000000:600: a group 50M records behind catches up within 10 minutes)")


def request_from_args(args: argparse.Namespace) -> tuple[Request, Space]:
    size, size_max = parse_record_size(args.record_size)
    if args.rf < 1:
        raise ScenarioError(f"--rf={args.rf} is not allowed: expected an integer ≥ 1")
    if args.max_brokers < max(args.rf, args.min_brokers):
        raise ScenarioError(f"--max-brokers={args.max_brokers} is not allowed: RF {args.rf} needs at least "
                            f"{max(args.rf, args.min_brokers)} brokers")
    for name in ("max_producers", "max_threads", "jobs"):
        if getattr(args, name) < 1:
            raise ScenarioError(f"--{name.replace('_', '-')}={getattr(args, name)} is not allowed: expected an "
                                f"integer ≥ 1")
    if args.sim_seconds is not None and args.sim_seconds <= 0:
        raise ScenarioError(f"--sim-seconds={args.sim_seconds} is not allowed: expected a number > 0")
    default = Space()
    space = Space(
        brokers=tuple(range(max(1, args.min_brokers), args.max_brokers + 1)),
        producers=tuple(range(1, args.max_producers + 1)),
        threads=tuple(range(1, args.max_threads + 1)),
        tries_per_shape=max(1, args.tries_per_shape),
        batch_sizes=_list(args.batch_sizes, "producer.batch.size", default.batch_sizes),
        linger_ms=_list(args.linger_ms, "producer.linger.ms", default.linger_ms),
        compressions=_list(args.compression, "producer.compression.type", default.compressions),
        max_in_flights=_list(args.max_in_flight, "producer.max.in.flight.requests.per.connection",
                             default.max_in_flights),
    )
    req = Request(target_rps=args.target_rps, record_size=size, record_size_max=size_max, acks=args.acks,
                  rf=args.rf, p99_ms=args.p99_ms, headroom=args.headroom, profile=args.profile,
                  client_version=args.client_version, payload=args.payload, overrides=parse_overrides(args.set),
                  sim_seconds=args.sim_seconds, consumer_groups=args.consumer_groups,
                  catch_up=parse_catch_up(args.catch_up) if args.catch_up else None)
    return req, space


def run_cli(args: argparse.Namespace) -> int:
    req, space = request_from_args(args)
    planner = Planner(req, space, jobs=args.jobs, scheduler=args.scheduler, progress=not args.quiet)
    if not args.quiet:
        print(f"kafkasim: planning for {req.planned_rps:,.0f} records/s; each candidate simulates "
              f"{planner.sim_seconds():.2f} s of traffic", file=sys.stderr)
        from kafkasim.calibration.host import profile_line
        stale = profile_line(req.profile)
        if stale:
            print(stale, file=sys.stderr)
    plan = planner.run(sensitivity=not args.no_sensitivity)
    if args.format == "json":
        json.dump(plan.to_json(), sys.stdout, indent=1)
        print()
    else:
        print(plan.text())
    return 0 if plan.best else 1
