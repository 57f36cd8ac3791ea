"""Measure scenarios on a real cluster: topic, discarded warm-up, N repeats, one stored record per run.

A configuration is a scenario (file + --set overrides) measured with one client. Its key is a hash of everything
that shapes the measurement, so a rerun into the same file skips the repeats already there.
"""
from __future__ import annotations

import collections
import hashlib
import json
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from kafkasim.calibration.runs import RUN_HARDWARE, perf_figures
from kafkasim.model.errors import LiveError, UserError
from kafkasim.model.scenario_fields import FIELDS, QUIET_AT_DEFAULT
from kafkasim.validation import admin, consumerperf, cpulimit, environment, perftest, runners, tailconsumer
from kafkasim.validation.cluster import TUNED
from kafkasim.validation.kafka_dist import KAFKA_VERSION, ensure_kafka
from kafkasim.validation.properties import read_properties, redact, secret_values
from kafkasim.validation.runners import Target
from kafkasim.validation.store import RunStore
from kafkasim.validation.summary import brokers_us, brokers_us_per_record, configuration

SCHEMA = 1
# The scenario keys that shape a live measurement (other hardware.* and model.* only matter to the model; a client's
# CPU limit is applied to the run, cpulimit.py).
MEASURED = ("name", "client.", "producers", "threads", "producer.", "workload.", "topic.partitions",
            "topic.replication.factor", "topic.min.insync.replicas", "cluster.brokers", "cluster.offline_brokers",
            "network.", "consumers.", "consumer.", "cluster.broker.", "cluster.background_", *RUN_HARDWARE)
# Keys added after runs were stored: at these values they are left out, so those runs keep their keys.
LATER_DEFAULTS = {"cluster.offline_brokers": 0,
                  **{key: FIELDS[key].default for key in ("workload.reporting_interval_ms", *QUIET_AT_DEFAULT)},
                  **{key: f.default for key, f in FIELDS.items()
                     if key.startswith(("consumers.", "consumer.", "cluster.broker.", "cluster.background_",
                                        *RUN_HARDWARE))}}
# A freshly started broker's JIT takes about this much load to settle: measured after a start with one warm-up run of
# 200k records, the first configuration took 1.8–2.0 us of broker CPU a record, the third (≈ 25 s of load later)
# 0.7–0.9, later ones 0.5–0.7; in the first pass of the day it took ≈ 70 s.
CLUSTER_WARMUP_SECONDS = 60.0
# A configuration that takes new paths through the brokers (the first replicated one, a codec they validate) sets
# their compilers going again: on a 2-core host three brokers' compilers took 0.4-0.6 cores through every measured
# run of the replicated configurations after an unreplicated first one (transfer-2026-11-26). On a cluster kafkasim
# started a warm-up repeats, JIT_RUN_SECONDS of load at a time, until the brokers' compilers took less than
# BROKER_JIT_QUIET cores during one, for at most WARMUP_LIMIT_SECONDS.
BROKER_JIT_QUIET = 0.1
JIT_RUN_SECONDS = 15.0
WARMUP_LIMIT_SECONDS = 240.0
STDERR_TAIL = 100  # lines of a client's stderr kept per run (a failing broker can print thousands)


@dataclass
class Config:
    """One thing to measure: a scenario with overrides, a client, and (in a matrix) an id and a role."""
    scenario: Path
    client: str
    overrides: list[str] = field(default_factory=list)
    config_id: str | None = None
    role: str | None = None  # "calibration" or "held-out"
    warmup_records: int | None = None  # None: the Measurer's

    def load(self):
        from kafkasim.model.scenario import ScenarioError, load_scenario
        overrides = list(self.overrides)
        if self.client == "kafka-python":  # the model knows its defaults: resolve them for the installed version
            overrides += ["client.library=kafka-python",
                          f"client.version={'.'.join(runners.client_version('kafka-python').split('.')[:2])}"]
        try:
            sc = load_scenario(self.scenario, overrides)
            if self.client == "java" and sc.client.library != "java":
                # A Java scenario's client.version is the client measured (kafka_dist.CLIENT_RELEASES); a scenario
                # of another library is measured with the current Java client.
                sc = load_scenario(self.scenario, overrides + [
                    "client.library=java", f"client.version={'.'.join(KAFKA_VERSION.split('.')[:2])}"])
            return sc
        except ScenarioError as exc:
            raise UserError(str(exc)) from None


def brokers_compiling(target: Target, jit_cores: float | None, seconds: float) -> bool:
    """Whether a warm-up that has run `seconds` goes on: on a cluster kafkasim started, while the brokers' compilers
    took BROKER_JIT_QUIET cores or more in its last run (None: not seen), for at most WARMUP_LIMIT_SECONDS."""
    return (target.managed and jit_cores is not None and jit_cores >= BROKER_JIT_QUIET
            and seconds < WARMUP_LIMIT_SECONDS)


def warmth(target: Target) -> str:
    """What a warm-up warms: the cluster at this address as started (a private cluster restarted on the same ports,
    for another network, is a new one with cold brokers)."""
    state = getattr(target.nodes, "state", None)
    return f"{target.bootstrap} {getattr(state, 'cluster_id', '')}"


def measured_settings(sc) -> dict:
    # network.proxy tells the model how a live run emulates the network; it is not a setting of the run. A slow
    # broker's extra latency is (the run emulates it), and so is a client's CPU limit; other hardware is not.
    return {k: v for k, v in sorted(sc.flat().items())
            if (k.startswith(MEASURED) or k.startswith("hardware.brokers.") and k.endswith(".extra_latency_ms"))
            and k != "network.proxy" and LATER_DEFAULTS.get(k, object()) != v}


def ran_with(settings: dict, target: Target) -> dict:
    """A run's settings as stored: the scenario's, and on a cluster kafkasim started the broker settings it runs
    with beyond them (TUNED), which the run's prediction must take too (not part of its key: stored runs keep theirs)."""
    if not target.managed:
        return settings
    return {**{f"cluster.broker.{k}": FIELDS[f"cluster.broker.{k}"].kind(v) for k, v in TUNED.items()}, **settings}


def config_key(settings: dict, client: str, client_version: str) -> str:
    text = json.dumps({"client": client, "client_version": client_version, **settings}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Measurer:
    """Runs configurations against targets and appends what each run measured to a RunStore."""
    store: RunStore
    repeat: int = 3
    warmup_records: int = 200_000
    command_config: Path | None = None
    out: object = sys.stdout
    failures: int = 0
    runs_done: int = 0

    def __post_init__(self):
        props = read_properties(self.command_config) if self.command_config else {}
        self.secrets = secret_values(props)
        self.lib = ensure_kafka()
        self.warm_clusters: set[str] = set()   # clusters this Measurer has warmed (warmth(): a restart is cold)
        self.host = None                       # this host's fingerprint, measured before the first run

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def measure(self, config: Config, target: Target, label: str = "") -> list[dict]:
        sc = config.load()
        runners.check_supported(sc, config.client)
        if target.brokers is not None and sc.topic.replication_factor > target.brokers:
            raise UserError(f"topic.replication.factor={sc.topic.replication_factor} needs at least that many "
                            f"brokers; the cluster has {target.brokers}")
        version = runners.client_version(config.client, sc)
        settings = measured_settings(sc)
        key = config_key(settings, config.client, version)
        settings = ran_with(settings, target)
        name = config.config_id or sc.name
        done = self.store.done_repeats(key)
        todo = [r for r in range(self.repeat) if r not in done]
        if not todo:
            self.say(f"{label}{name} {config.client}: {len(done)} runs already in {self.store.path}, skipped")
            return []
        # cluster.offline_brokers: the highest nodes are stopped once the topic exists, and started again after
        down = list(range(sc.cluster.brokers - sc.cluster.offline_brokers, sc.cluster.brokers))
        if down and target.nodes is None:
            raise runners.stopping_brokers_error(sc)
        topic = f"{sc.topic.name}-{key[:8]}"
        consuming = sc.producers == 0      # a consumer's catch-up read of what the topic holds
        configs = {"min.insync.replicas": str(sc.topic.min_insync_replicas)}
        if consuming:                      # (kept whole while it is read: a cluster's retention may be short)
            configs.update({"retention.bytes": "-1", "retention.ms": "-1"})
        if sc.cluster.background_partitions and not target.managed:
            raise UserError(f"cluster.background_partitions={sc.cluster.background_partitions} creates that many "
                            f"partitions a broker, which kafkasim does only on a cluster it starts itself; allowed "
                            f"here: 0")
        admin.create_topic(self.lib, target.admin_bootstrap, topic, sc.topic.partitions, sc.topic.replication_factor,
                           configs, target.command_config, target.admin_prefix)
        records, background = [], []
        try:
            background += self._background(sc, target, topic, f"{label}{name}")
            if down:
                self._take_down(target, topic, down, f"{label}{name}")
            warmup = self.warmup_records if config.warmup_records is None else config.warmup_records
            once = self._consume_once if consuming else self._run_once
            run = lambda r: once(config, sc, settings, key, version, target, topic, r)              # noqa: E731
            if consuming:
                self._fill(sc, target, topic, name, label)
                if warmup:
                    self._warm_up_fetches(target, run, "read", f"{label}{name}")
            elif warmup:
                self._warm_up(sc, target, topic, name, label, warmup)
                if sc.consumers.groups:     # (a tailing consumer's fetches take paths a producer's warm-up does not)
                    self._warm_up_fetches(target, run, "run", f"{label}{name}")
            for r in todo:
                record = run(r)
                self.store.append(record)
                self.runs_done += 1
                self.failures += not record["ok"]
                records.append(record)
                self.say(f"{label}{name} {config.client} run {r + 1}/{self.repeat}: {_describe(record)}")
                if record.get("broker_down"):        # (the next runs would only wait out their time limits)
                    raise LiveError(f"{label}{name} run {r + 1}: {record['error']}; the runs before it are kept in "
                                    f"{self.store.path}")
        finally:
            try:
                if down:
                    self._bring_back(target, topic, down, f"{label}{name}")
            finally:     # (the topic goes even if a node did not come back, unless no broker is left to ask)
                why = _why_not_deletable(target)
                for doomed in [topic] + background:
                    try:
                        if why:
                            raise LiveError(f"topic {doomed} was left on {target.admin_bootstrap}: {why}")
                        admin.delete_topic(self.lib, target.admin_bootstrap, doomed, target.command_config,
                                           target.admin_prefix)
                    except LiveError as exc:
                        self.say(f"kafkasim: warning: {exc}")
        self.say(f"{label}{name} {config.client}: {summary(self.store, key)}")
        return records

    def _background(self, sc, target: Target, topic: str, what: str) -> list[str]:
        """cluster.background_partitions: an idle topic replicated like the measured one, with that many replicas a
        broker (on a cluster kafkasim started: it puts no thousands of partitions on a user's). Its name, or none."""
        count = sc.cluster.background_partitions
        if not count:
            return []
        rf = sc.topic.replication_factor
        partitions = -(-count * sc.cluster.brokers // rf)
        self.say(f"{what}: creating {partitions:,} idle partitions (RF {rf}, {count:,} replicas a broker)")
        background = f"{topic}-background"
        admin.create_topic(self.lib, target.admin_bootstrap, background, partitions, rf, None,
                           target.command_config, target.admin_prefix, timeout=600)
        return [background]

    def _take_down(self, target: Target, topic: str, nodes: list[int], what: str) -> None:
        ids = {i + 1 for i in nodes}                     # node.id of node i
        self.say(f"{what}: stopping node {', '.join(map(str, sorted(ids)))} (cluster.offline_brokers)")
        for i in nodes:
            target.nodes.stop_node(i)
        parts = admin.wait_for_topic(self.lib, target.admin_bootstrap, topic,
                                     lambda parts: all(p["leader"] is not None and p["leader"] not in ids
                                                       and not ids & set(p["isr"]) for p in parts),
                                     f"moving every leader and ISR off node {sorted(ids)}", prefix=target.admin_prefix)
        leaders = collections.Counter(p["leader"] for p in parts)
        self.say(f"{what}: partitions led now: " + ", ".join(f"node {n} {leaders[n]}" for n in sorted(leaders)))

    def _bring_back(self, target: Target, topic: str, nodes: list[int], what: str) -> None:
        self.say(f"{what}: starting node {', '.join(str(i + 1) for i in nodes)} again")
        for i in nodes:
            target.nodes.start_node(i)
        admin.wait_for_topic(self.lib, target.admin_bootstrap, topic,
                             lambda parts: all(len(p["isr"]) == len(p["replicas"]) for p in parts),
                             "the restarted nodes rejoining every ISR", prefix=target.admin_prefix)

    def _warm_up(self, sc, target: Target, topic: str, name: str, label: str, records: int) -> None:
        """A discarded run with the same settings, so the broker's JIT and page cache are warm for the measured ones.
        Always with the Java tool: it is the broker that needs warming, and it warms fastest. On a cluster kafkasim
        started it repeats: the first configuration until CLUSTER_WARMUP_SECONDS of load have run (one short run
        leaves a freshly started broker cold, and its JIT then takes the measured runs' CPU), and any configuration
        while the brokers' compilers are busy (BROKER_JIT_QUIET). (A user's cluster is taken as running warm, and is
        not sent minutes of unthrottled load.)"""
        warm = sc.replace(**{"workload.throughput": -1})
        n, runs, sent, seconds, broker_us, jit = records, 0, 0, 0.0, [], []
        first = warmth(target) not in self.warm_clusters
        while True:
            cpu = environment.CpuWatch()
            out = runners.run(runners.argv("java", self.lib, warm, target, topic, n), runners.time_limit(warm, n),
                              self._watcher(target))
            if out.failure:
                raise LiveError(f"{name} warm-up: {out.failure}")
            use = cpu.stop(out.seconds)
            total = perftest.parse(out.stdout).total
            runs, sent, seconds = runs + 1, sent + n, seconds + out.seconds
            if (us := brokers_us(use, out.seconds, n)) is not None:
                broker_us.append(us)
            if use and use.get("cluster_cores"):
                jit.append(use.get("cluster_jit_cores", 0.0))
            if total is None or not target.managed:
                break
            short = first and seconds < CLUSTER_WARMUP_SECONDS
            if not (short or brokers_compiling(target, jit[-1] if jit else None, seconds)):
                break
            # one more run: the rest of the first configuration's time, else JIT_RUN_SECONDS, at this run's rate
            n = max(records, int(total.records_per_sec * (CLUSTER_WARMUP_SECONDS - seconds if short
                                                          else JIT_RUN_SECONDS)))
        self.warm_clusters.add(warmth(target))
        rate = f"{total.records_per_sec:,.0f} rec/s" if total else f"failed ({runners.last_line(out.stderr)})"
        what = f"{records} records" if runs == 1 else f"{sent} records in {runs} runs, {seconds:.0f} s"
        cooled = f"; the brokers' CPU a record {broker_us[0]:.2f} → {broker_us[-1]:.2f} us" if len(broker_us) > 1 else ""
        compilers = f"; their compilers {jit[0]:.2f} → {jit[-1]:.2f} cores" if len(jit) > 1 else ""
        self.say(f"{label}{name} warm-up ({what}, discarded): {rate}{cooled}{compilers}")

    def _warm_up_fetches(self, target: Target, run, what: str, name: str) -> None:
        """Discarded `run(repeat)`s (a read of the whole topic, or the producer with its tailing consumers) so the
        brokers' fetch path and page cache are warm (warmed by producers alone, they compiled 1.5–4.3 CPU-s a run
        serving the first tailing consumers): on a cluster kafkasim started, repeated while the brokers' compilers
        take BROKER_JIT_QUIET cores or more (at most WARMUP_LIMIT_SECONDS; each in a group of its own)."""
        seconds, runs = 0.0, 0
        while True:
            runs += 1
            record = run(-runs)
            seconds += record.get("seconds") or 0.0
            jit = ((record.get("environment") or {}).get("cpu_during_run") or {}).get("cluster_jit_cores")
            compilers = f"; the brokers' compilers {jit:.2f} cores" if jit is not None else ""
            self.say(f"{name} warm-up {what} {runs} (discarded): {_describe(record)}{compilers}")
            if not brokers_compiling(target, jit, seconds):
                return

    def _fill(self, sc, target: Target, topic: str, name: str, label: str) -> None:
        """consumers.prefilled_records written into the topic by the producer tool with the scenario's producer
        settings, unthrottled: what the consumer runs read."""
        n = sc.consumers.prefilled_records
        # (several instances read shares of equal size: every partition gets as many records, round-robin)
        writer = sc.replace(**{"producers": 1, "workload.throughput": -1, "workload.records": n,
                               "workload.warmup_records": 0, **({"workload.partition_choice": "round-robin"}
                                                                if sc.consumers.instances > 1 else {})})
        out = runners.run(runners.argv("java", self.lib, writer, target, topic, n), runners.time_limit(writer, n),
                          self._watcher(target))
        total = perftest.parse(out.stdout).total
        if out.failure or total is None or total.records < n:
            raise LiveError(f"{name}: filling the topic with {n:,} records failed: "
                            f"{out.failure or runners.last_line(out.stderr)}")
        self.say(f"{label}{name}: topic filled with {n:,} records ({total.records_per_sec:,.0f} rec/s)")

    def _consume_once(self, config: Config, sc, settings: dict, key: str, version: str, target: Target,
                      topic: str, repeat: int) -> dict:
        """kafka-consumer-perf-test reading the whole topic in a group of its own, its threads' CPU read: one
        process per instance, side by side, each reading its share (the fill gave every partition as many
        records, and each instance as many partitions)."""
        instances, group = sc.consumers.instances, f"kafkasim-{key[:8]}-{repeat}"
        n = instances * (each := sc.consumers.messages or sc.consumers.prefilled_records // instances)
        cmds = [consumerperf.argv(self.lib, sc, target, topic, each, group) for _ in range(instances)]
        record, outs = self._client_run(config, sc, settings, key, version, target, repeat, cmds, n)
        parsed = [consumerperf.parse(out.stdout) for out in outs]
        result = consumerperf.group_result(parsed)
        if record["error"] is None and result is None:
            record["error"] = f"no result line in the output: {runners.last_line(outs[0].stderr)}"
        elif record["error"] is None and result["records"] < n:
            record["error"] = f"read {result['records']:,} of {n:,} records"
        record.update(role=config.role, ok=record["error"] is None, kind="consumer", result=result,
                      metrics=parsed[0].metrics)
        return record

    def _client_run(self, config: Config, sc, settings: dict, key: str, version: str, target: Target, repeat: int,
                    cmds: list[list[str]], n: int):
        """Run client commands side by side (one, or a group's instances) with the host's fingerprint, the CPU
        watch and their threads' CPU; the run's record (everything but what their output says) and the outputs."""
        started = datetime.now(timezone.utc).isoformat(timespec="seconds")
        env = environment.snapshot()
        if self.host is None:
            from kafkasim.validation.host_calibration import measure_speed
            self.host = measure_speed(self.lib)
            self.say(f"this host: {self.host['cpu']}, {self.host['cores']} cores, speed score "
                     f"{self.host['speed_score']:.0f}")
        env["host"] = self.host
        cpu = environment.CpuWatch()
        threads = environment.ThreadCpu() if config.client == "java" else None
        with cpulimit.of(sc) as quota:     # (hardware.client_cpu_limit: the client runs as in a container)
            outs = runners.run_group(cmds, runners.time_limit(sc, n), self._watcher(target, threads),
                                     quota and quota.enter)
            env["client_cpu_limit"] = quota and quota.stats()
        seconds = max(out.seconds for out in outs)
        env["cpu_during_run"] = cpu.stop(seconds)
        if threads is not None and env["cpu_during_run"] is not None:
            # the client's threads' CPU-seconds by kind: what the model's per-thread costs stand for
            env["cpu_during_run"]["client_threads"] = {k: round(v, 2) for k, v in sorted(threads.totals.items())}
            # ... and theirs when the producer was built: before it, the JVM's start-up (class loading, compiling)
            env["cpu_during_run"]["client_threads_at_start"] = {k: round(v, 3)
                                                                for k, v in sorted(threads.at_start.items())}
        failed = next((out for out in outs if out.failure or out.timed_out or out.exit_status != 0), None)
        error = None if failed is None else (
            failed.failure or (f"timed out after {failed.seconds:.0f} s" if failed.timed_out
                               else f"exit status {failed.exit_status}: {runners.last_line(failed.stderr)}"))
        cmd = cmds[0]
        record = {
            "schema": SCHEMA, "key": key, "config_id": config.config_id or sc.name, "role": config.role,
            "repeat": repeat, "ok": error is None, "error": error, "started_at": started,
            "broker_down": any(out.failure for out in outs),
            "seconds": round(seconds, 3),
            "client": {"library": config.client, "version": version},
            "scenario": settings, "scenario_file": str(config.scenario), "overrides": config.overrides,
            "target": {"bootstrap": target.bootstrap, "managed": target.managed, "brokers": target.brokers,
                       "network": target.network, "topic": cmd[cmd.index("--topic") + 1],
                       "offline_brokers": sc.cluster.offline_brokers},
            "environment": env,
            "command": redact(" ".join(cmd), self.secrets) + (f" (× {len(cmds)})" if len(cmds) > 1 else ""),
            "records_requested": n,
            "stdout": redact("\n".join(out.stdout for out in outs), self.secrets),
            "stderr": redact("\n".join("\n".join(out.stderr.splitlines()[-STDERR_TAIL:]) for out in outs),
                             self.secrets),
            "exit_status": next((out.exit_status for out in outs if out.exit_status != 0), outs[0].exit_status),
            "timed_out": any(out.timed_out for out in outs),
        }
        return record, outs

    @staticmethod
    def _watcher(target: Target, threads=None):
        """What runs beside a client: its threads' CPU read (Java) and the target's brokers checked (a broker that
        goes down stops the run within a second, where it would otherwise wait out its time limit)."""
        brokers = runners.BrokerWatch(target)

        def look(pid: int) -> None:
            if threads is not None:
                threads.sample(pid)
            brokers.check()
        return look

    def _run_once(self, config: Config, sc, settings: dict, key: str, version: str, target: Target, topic: str,
                  repeat: int) -> dict:
        n = sc.workload.records
        cmd = runners.argv(config.client, self.lib, sc, target, topic, n, sc.workload.warmup_records)
        # a consumer group tailing the producer: its consumer joins first, and reads every record the run sends
        tail = (tailconsumer.Tail(self.lib, sc, target, topic, n, f"kafkasim-{key[:8]}-tail-{repeat}")
                if sc.producers and sc.consumers.groups else None)
        try:
            record, (out,) = self._client_run(config, sc, settings, key, version, target, repeat, [cmd], n)
        except BaseException:
            if tail is not None:
                tail.stop()
            raise
        if tail is not None:
            try:
                record["end_to_end"] = tail.result(runners.time_limit(sc, n))
                cpu = record["environment"].get("cpu_during_run")
                if cpu:      # the tailing consumer is the scenario's, not other load
                    cpu["consumer_cores"] = round(record["end_to_end"]["run_cpu_s"] / record["seconds"], 3)
                    cpu["other_cores"] = round(max(0.0, cpu["other_cores"] - cpu["consumer_cores"]), 3)
            except LiveError as exc:
                record["error"] = record["error"] or str(exc)
            finally:
                tail.stop()
        parsed = perftest.parse(out.stdout)
        total = parsed.total
        sent = total.records if total else 0
        metric_errors = parsed.metrics.get("producer-metrics:record-error-total")
        if record["error"] is None and total is None:
            record["error"] = f"no total line in the output: {runners.last_line(out.stderr)}"
        record.update(
            ok=record["error"] is None,
            # perf-test counts only acknowledged records: whatever is missing failed (errors are never dropped)
            delivery_errors=max(n - sent, int(metric_errors or 0)) if total else None,
            result=_asdict(total), steady_state=_asdict(parsed.steady_state),
            worker_latency_us=parsed.worker_latency_us,
            windows=[w.__dict__ for w in parsed.windows], metrics=parsed.metrics)
        return record


def _why_not_deletable(target: Target) -> str | None:
    """Why a run's topic cannot be deleted now: a node of kafkasim's cluster died (its port may still take a
    connection for a moment while the process exits, and the delete would then wait out its time limit), or no
    broker answers."""
    down = runners.nodes_down(target)
    if down:
        return down
    why = None if target.admin_prefix else runners.unreachable(target.admin_bootstrap)
    return f"no broker answers ({why})" if why else None


def _asdict(total) -> dict | None:
    return None if total is None else dict(total.__dict__)


def _describe(record: dict) -> str:
    if not record["ok"]:
        return f"FAILED ({record['error']})"
    r = perf_figures(record)
    if record.get("kind") == "consumer":
        return (f"{r['records_per_sec']:,.0f} rec/s read, {r['mb_per_sec']:.1f} MB/s, rebalance "
                f"{r['rebalance_ms']:.0f} ms, fetch {r['fetch_ms']:.0f} ms ({record['seconds']:.1f} s)")
    errors = f", {record['delivery_errors']} delivery errors" if record["delivery_errors"] else ""
    cpu = record.get("environment", {}).get("cpu_during_run")
    # Other work on the machine during the run: it moves latencies far more than throughput.
    other = f", other processes {cpu['other_cores']:.1f} cores" if cpu and cpu["other_cores"] >= 0.2 else ""
    in_send = f", {record['worker_latency_us']:.2f} us in send()" if record.get("worker_latency_us") else ""
    broker_us = brokers_us_per_record(record)
    broker = f", brokers {broker_us:.2f} us CPU a record" if broker_us is not None else ""
    limit = record.get("environment", {}).get("client_cpu_limit")
    quota = ""
    if limit and limit["periods"]:      # (a client held to a CPU limit: how often it ran out of its quota)
        quota = (f", quota {limit['cores']:g} cores, throttled in "
                 f"{100 * limit['throttled_periods'] / limit['periods']:.0f} % of periods")
    return (f"{r['records_per_sec']:,.0f} rec/s, {r['mb_per_sec']:.1f} MB/s, avg {r['latency_avg_ms']:.1f} ms, "
            f"p99 {r['latency_p99_ms']} ms{in_send}{broker}{quota} ({record['seconds']:.1f} s{errors}{other})")


def summary(store: RunStore, key: str) -> str:
    runs = [r for r in store.records() if r.get("key") == key and r.get("ok")]
    if not runs:
        return "no successful runs"
    row = configuration(runs)
    rate = f"median {row['rec_per_sec']:,.0f} rec/s"
    spread = f"(range {row['tput_range_pct']:.0f} % of median, n={row['n']})"
    if runs[0].get("kind") == "consumer":
        return f"{rate} read {spread}"
    return (f"{rate} {spread}, avg latency {row['avg_ms']:.1f} ms (range {row['avg_range_pct'] or 0:.0f} %), "
            f"p99 {row['p99_ms']:.0f} ms")
