"""One perf-test run of a scenario's producer settings with a real client, as a subprocess with a time limit.

java: Kafka's own `org.apache.kafka.tools.ProducerPerformance` (kafka-producer-perf-test); with several threads,
  explicit partitions or an older client (the scenario's client.version), validation/ProducerThreads.java (the same
  tool's semantics and output, threads sharing one producer), run on that client's jars.
kafka-python, confluent-kafka: kafkasim.validation.pyperf, the same tool's semantics and output for Python clients.
"""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable
from pathlib import Path

from kafkasim.model.errors import LiveError, UserError
from kafkasim.validation import cpulimit
from kafkasim.validation.kafka_dist import KAFKA_VERSION, client_jars, client_release, compiled, java_command

CLIENTS = ("java", "kafka-python", "confluent-kafka")
CLIENT_HEAP = "512m"  # what bin/kafka-producer-perf-test.sh gives the tool
THREADED_TOOL = Path(__file__).resolve().parent / "ProducerThreads.java"


@dataclass(frozen=True)
class Target:
    """A cluster to measure against and how to reach it."""
    bootstrap: str                       # what clients are given
    admin_bootstrap: str                 # what topic administration uses (the loopback listener of our own cluster)
    brokers: int | None = None           # known for clusters kafkasim started
    client_prefix: tuple[str, ...] = ()  # e.g. ("ip", "netns", "exec", NS) behind network emulation
    admin_prefix: tuple[str, ...] = ()
    command_config: Path | None = None
    managed: bool = False                # started by kafkasim (then its topics are ours to delete)
    network: dict = field(default_factory=dict)
    nodes: object = None                 # the Cluster kafkasim started for this measurement: it may stop nodes


@dataclass
class RunOutput:
    argv: list[str]
    stdout: str
    stderr: str
    exit_status: int | None
    seconds: float
    timed_out: bool
    failure: str | None = None     # why the watcher stopped the client (a broker went down), if it did


def last_line(text: str) -> str:
    """A failed client's last word: the last line of its stderr that is not a stack frame, at most 300 characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("\tat ")]
    return lines[-1][:300] if lines else "no output"


def unreachable(bootstrap: str, timeout: float = 3.0) -> str | None:
    """Why none of the bootstrap servers takes a connection ("connection refused", "timed out"), or None when one
    does."""
    why = None
    for address in bootstrap.split(","):
        host, _, port = address.strip().rpartition(":")
        try:
            socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout).close()
            return None
        except ValueError:
            return f"{address} is not host:port"
        except ConnectionRefusedError:
            why = "connection refused"
        except OSError as exc:
            why = "timed out" if isinstance(exc, TimeoutError) else (exc.strerror or str(exc))
    return why


def nodes_down(target: Target) -> str | None:
    """Which nodes of a cluster kafkasim started should run and do not ("broker 2 is down"), or None."""
    dead = target.nodes.died() if target.nodes is not None else []
    return f"broker {', '.join(map(str, dead))} is down" if dead else None


class BrokerWatch:
    """Notices, within a second, a broker of the target that stopped while a client runs: the nodes kafkasim
    started by their processes, any other cluster by a connection to its bootstrap servers (each is checked at most
    once a second; for a cluster behind network emulation only the nodes are)."""

    EVERY = 1.0

    def __init__(self, target: Target):
        self.target = target
        self.next = time.monotonic() + self.EVERY

    def check(self) -> None:
        if time.monotonic() < self.next:
            return
        self.next = time.monotonic() + self.EVERY
        down = nodes_down(self.target)
        if down:
            raise LiveError(f"{down} (its process exited during the run)")
        if self.target.nodes is None and not self.target.client_prefix:
            why = unreachable(self.target.bootstrap, timeout=1.0)
            if why:
                raise LiveError(f"no broker at {self.target.bootstrap} answers any more ({why})")


def check_supported(sc, client: str = "java") -> None:
    """What a perf-test run can reproduce of a scenario; anything else is a one-line error."""
    w = sc.workload
    java = client == "java"
    consumers = sc.consumers
    problems = [
        (sc.producers != 1 and not (sc.producers == 0 and java), f"producers={sc.producers}",
         "1 (one perf-test process), or 0 with the Java client (a consumer reading what the topic holds)"),
        (consumers.groups and not java, f"consumers.groups={consumers.groups} with {client}",
         "0 (the consumers measured are Java's)"),
        (consumers.groups and sc.producers and consumers.start != "before-producers",
         f"consumers.start={consumers.start} beside producers", "before-producers (a live tailing consumer is "
         "assigned its partitions before the producer starts)"),
        ((sc.producers == 0 or consumers.groups) and consumers.groups != 1, f"consumers.groups={consumers.groups}",
         "1 (one group: kafka-consumer-perf-test's processes reading, or a tailing consumer beside the producer)"),
        (consumers.groups and sc.producers and consumers.instances != 1,
         f"consumers.instances={consumers.instances} beside producers", "1 (one tailing consumer)"),
        (sc.producers == 0 and consumers.instances > 1 and (sc.topic.partitions % consumers.instances
                                                            or consumers.prefilled_records % sc.topic.partitions),
         f"consumers.instances={consumers.instances} reading {consumers.prefilled_records} records of "
         f"{sc.topic.partitions} partitions", "instances that divide the partitions, and records that divide "
         "among them (each instance's kafka-consumer-perf-test reads an equal share, then stops)"),
        (consumers.app_record_us != 0, f"consumers.app_record_us={consumers.app_record_us}",
         "0 (kafka-consumer-perf-test does no work of its own per record)"),
        (sc.threads != 1 and not java, f"threads={sc.threads} with {client}",
         "1 (its perf-test has one sending thread; the Java client's runs take several)"),
        (w.payload not in (("random-letters", "repeated") if java else ("random-letters",)),
         f"workload.payload={w.payload} with {client}",
         "random-letters (perf-test --record-size), or repeated with the Java client"),
        (w.keys != 0 or w.key_size != 0, "workload.keys/key_size", "0 (perf-test sends null keys)"),
        (w.record_size_max != 0, f"workload.record_size_max={w.record_size_max}", "0 (fixed record size)"),
        (w.records <= 0, "workload.records=0 (a duration)", "a record count > 0"),
        (w.partition_choice != "partitioner" and not java, f"workload.partition_choice={w.partition_choice} with "
         f"{client}", "partitioner (explicit partitions are the Java client's runs only)"),
        (sc.cluster.background_partitions and sc.cluster.background_bytes,
         f"cluster.background_bytes={sc.cluster.background_bytes} with background partitions",
         "0 (idle background partitions: kafkasim creates them, it does not load them)"),
    ]
    for bad, what, allowed in problems:
        if bad:
            raise UserError(f"live runs cannot reproduce {what}; allowed: {allowed}")
    with cpulimit.of(sc):       # (a CPU limit this host cannot apply fails before anything starts)
        pass


def stopping_brokers_error(sc, hint: str = "") -> UserError:
    """cluster.offline_brokers on a cluster whose nodes kafkasim may not stop (the user's)."""
    return UserError(f"cluster.offline_brokers={sc.cluster.offline_brokers} stops brokers during the measurement, "
                     f"which kafkasim does only on a cluster it starts itself{hint}")


def perf_args(sc, target: Target, topic: str, records: int, warmup_records: int = 0) -> list[str]:
    """The flags every runner takes (ProducerPerformance's own)."""
    args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--num-records", str(records),
            "--record-size", str(sc.workload.record_size), "--throughput", _number(sc.workload.throughput),
            "--print-metrics", "--reporting-interval", str(sc.workload.reporting_interval_ms)]
    if warmup_records:
        args += ["--warmup-records", str(warmup_records)]
    if target.command_config is not None:
        args += ["--command-config", str(target.command_config)]
    props = sc.producer_properties()
    return args + ["--command-property", *(f"{k}={v}" for k, v in sorted(props.items()))]


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def argv(client: str, lib: Path | None, sc, target: Target, topic: str, records: int,
         warmup_records: int = 0) -> list[str]:
    args = perf_args(sc, target, topic, records, warmup_records)
    release = client_release(sc.client.version) if client == "java" else None
    repeat = sc.workload.payload == "repeated"
    if client == "java" and (sc.threads > 1 or sc.workload.partition_choice != "partitioner"
                             or release != KAFKA_VERSION or repeat):  # (ProducerPerformance needs the current client)
        args += ["--threads", str(sc.threads), "--partition-choice", sc.workload.partition_choice,
                 "--partitions", str(sc.topic.partitions), *(["--repeat-payload"] if repeat else [])]
        jars = client_jars(lib, release)
        cmd = java_command(lib, THREADED_TOOL.stem, args, heap=CLIENT_HEAP, classes=compiled(lib, THREADED_TOOL, jars),
                           jars=jars)
    elif client == "java":
        cmd = java_command(lib, "org.apache.kafka.tools.ProducerPerformance", args, heap=CLIENT_HEAP)
    elif client in ("kafka-python", "confluent-kafka"):
        cmd = [sys.executable, "-m", "kafkasim.validation.pyperf", "--client", client, *args]
    else:
        raise UserError(f"--client {client} is not known; allowed: {', '.join(CLIENTS)}")
    return [*target.client_prefix, *cmd]


def client_version(client: str, sc=None) -> str:
    """The release of the client measured: for java, the scenario's client.version (the current one without)."""
    if client == "java":
        return KAFKA_VERSION if sc is None else client_release(sc.client.version)
    if client == "kafka-python":
        import kafka
        return kafka.__version__
    try:
        import confluent_kafka
    except ImportError:
        raise UserError("--client confluent-kafka needs the confluent-kafka package: "
                        "pip install 'kafkasim[live]'") from None
    return confluent_kafka.__version__


def time_limit(sc, records: int) -> float:
    """Generous: long enough for the run at a crawl of 1000 rec/s (or half its throttle target, if lower)."""
    target = sc.workload.throughput
    crawl = 1000.0 if target <= 0 else min(target / 2, 1000.0)
    return 120 + records / crawl


WATCH_EVERY = 0.05      # seconds between a watcher's looks at the running client


def run(cmd: list[str], timeout: float, watch: Callable[[int], object] | None = None) -> RunOutput:
    """Run one client; on timeout or Ctrl-C kill its whole process group, then re-raise Ctrl-C. watch(pid), if
    given, is called every WATCH_EVERY seconds while the client runs (e.g. to read its threads' CPU); a LiveError
    from it stops the client, and the output says why (failure)."""
    return run_group([cmd], timeout, watch)[0]


def run_group(cmds: list[list[str]], timeout: float, watch: Callable[[int], object] | None = None,
              preexec: Callable[[], object] | None = None) -> list[RunOutput]:
    """Run clients side by side (a consumer group's instances), as run() runs one: watch(pid) for each while it
    runs; a timeout, a LiveError from the watcher or Ctrl-C stops them all. Each one's output, its seconds from the
    common start to its own exit. preexec runs in each child before the client (e.g. joining a CPU limit's
    cgroup)."""
    start = time.monotonic()
    with contextlib.ExitStack() as files:
        streams = [(files.enter_context(tempfile.TemporaryFile("w+")),
                    files.enter_context(tempfile.TemporaryFile("w+"))) for _ in cmds]
        procs: list[subprocess.Popen] = []
        ended: list[float | None] = [None] * len(cmds)
        timed_out, failure = False, None
        try:
            for cmd, (out, err) in zip(cmds, streams):     # (one that cannot start stops those started before it)
                procs.append(subprocess.Popen(cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, text=True,
                                              start_new_session=True, preexec_fn=preexec))
            while None in ended:
                if time.monotonic() - start >= timeout:
                    timed_out = True
                    break
                for i, proc in enumerate(procs):
                    if ended[i] is None and proc.poll() is not None:
                        ended[i] = time.monotonic() - start
                    elif ended[i] is None and watch is not None:
                        watch(proc.pid)
                time.sleep(WATCH_EVERY)
        except LiveError as exc:
            failure = str(exc)
        except BaseException:
            for proc in procs:
                _kill_group(proc)
            raise
        outputs = []
        for i, (proc, (out, err)) in enumerate(zip(procs, streams)):
            late = ended[i] is None           # still running: stopped here (time limit, or the watcher's failure)
            if late:
                _kill_group(proc)
                ended[i] = time.monotonic() - start
            out.seek(0)
            err.seek(0)
            outputs.append(RunOutput(cmds[i], out.read(), err.read(), proc.returncode, ended[i], timed_out and late,
                                     failure))
        return outputs


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
