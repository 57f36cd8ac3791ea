"""A real Apache Kafka cluster on this machine: one or three combined broker+controller nodes in KRaft mode.

Everything a cluster owns lives under one directory: per node its server.properties, data, logs and a PID file,
and cluster.json naming what was started. `down` stops exactly the processes whose PID files it finds (each node
runs in its own process group, so nothing it spawns is left behind) and only if the process still is that node.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafkasim.model.errors import LiveError, UserError
from kafkasim.validation import admin, tls
from kafkasim.validation.environment import KAFKA_NODE
from kafkasim.validation.kafka_dist import KAFKA_VERSION, cache_dir, ensure_kafka, java_command

DEFAULT_BASE_PORT = 9092
# Port layout, node i (0-based): client/inter-broker listener base+i, controller base+100+i,
# EXTERNAL listener (used behind network emulation) base+200+i, JMX (loopback only) base+300+i, SSL base+400+i.
CONTROLLER_OFFSET = 100
EXTERNAL_OFFSET = 200
JMX_OFFSET = 300
SSL_OFFSET = 400
BROKER_HEAP = "512m"  # 2 cores and a client share the machine; Kafka's own default of 1 GiB buys nothing here

BROKER_LOG4J = """# kafkasim: broker logs to a bounded rolling file.
status = warn
appender.file.type = RollingFile
appender.file.name = file
appender.file.fileName = {logs}/server.log
appender.file.filePattern = {logs}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 20MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 2
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


def default_dir() -> Path:
    return cache_dir() / "cluster"


# Broker settings kafkasim's clusters run with away from Kafka's defaults (a scenario's cluster.broker.* may change
# them): a group's first member is assigned at once, not after 3 s.
TUNED = {"group.initial.rebalance.delay.ms": "0"}


@dataclass
class ClusterState:
    """What `up` started, saved as cluster.json so `status` and `down` need nothing else."""
    directory: str
    brokers: int
    base_port: int
    kafka_version: str = KAFKA_VERSION
    netns: str | None = None  # the network namespace the nodes run in, if any
    external_advertised: list[str] = field(default_factory=list)  # host:port clients are told to use, per node
    settings: dict[str, str] = field(default_factory=dict)  # broker properties over the defaults below (a scenario's)
    tls: bool = False       # an SSL listener beside the PLAINTEXT one (validation/tls.py)
    pids: list[int] = field(default_factory=list)
    cluster_id: str = ""
    started_at: float = 0.0

    @property
    def bootstrap(self) -> str:
        """The loopback listener (inside the namespace, if any)."""
        return ",".join(f"127.0.0.1:{self.base_port + i}" for i in range(self.brokers))

    @property
    def ssl_bootstrap(self) -> str:
        """The SSL listener (a cluster started with tls)."""
        return ",".join(f"127.0.0.1:{self.base_port + SSL_OFFSET + i}" for i in range(self.brokers))

    @property
    def tls_directory(self) -> Path:
        return Path(self.directory) / "tls"

    @property
    def prefix(self) -> tuple[str, ...]:
        """How to run a command where the nodes run."""
        return ("ip", "netns", "exec", self.netns) if self.netns else ()


class Cluster:
    def __init__(self, directory: Path | None = None, brokers: int = 1, base_port: int = DEFAULT_BASE_PORT,
                 netns: str | None = None, external_advertised: list[str] | None = None, heap: str = BROKER_HEAP,
                 settings: dict[str, str] | None = None, tls: bool = False):
        if brokers not in (1, 3):
            raise UserError(f"--brokers {brokers} is not supported; allowed: 1 or 3")
        self.directory = Path(directory or default_dir()).resolve()
        self.heap = heap
        self.state = ClusterState(str(self.directory), brokers, base_port, netns=netns,
                                  external_advertised=list(external_advertised or []), settings=dict(settings or {}),
                                  tls=tls)

    # ---- state on disk -------------------------------------------------------------------------------------
    @property
    def state_file(self) -> Path:
        return self.directory / "cluster.json"

    def node_dir(self, i: int) -> Path:
        return self.directory / f"node-{i + 1}"

    @classmethod
    def load(cls, directory: Path | None = None) -> "Cluster | None":
        directory = Path(directory or default_dir()).resolve()
        try:
            data = json.loads((directory / "cluster.json").read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return None
        cluster = cls(directory, data["brokers"], data["base_port"], data.get("netns"),
                      data.get("external_advertised"))
        cluster.state = ClusterState(**data)
        return cluster

    def _save(self) -> None:
        self.state_file.write_text(json.dumps(asdict(self.state), indent=2) + "\n")

    # ---- processes -----------------------------------------------------------------------------------------
    def _pid_files(self) -> list[Path]:
        return sorted(self.directory.glob("node-*/kafka.pid"))

    def _is_our_node(self, pid: int) -> bool:
        """True while pid is still a Kafka node started from this directory (PIDs get reused)."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            return False
        return KAFKA_NODE in cmdline and any(str(self.directory).encode() in arg for arg in cmdline)

    def _recorded(self) -> list[tuple[int, int]]:
        """(node, pid) for each PID file there is: the nodes that should run."""
        out = []
        for pid_file in self._pid_files():
            try:
                out.append((int(pid_file.parent.name.removeprefix("node-")), int(pid_file.read_text().strip())))
            except (OSError, ValueError):
                continue
        return out

    def running_pids(self) -> list[int]:
        return [pid for _, pid in self._recorded() if self._is_our_node(pid)]

    def died(self) -> list[int]:
        """The nodes (1-based) that should run — their PID file is there — and do not: a broker that crashed or was
        killed. (A node stopped on purpose, stop_node, has no PID file.)"""
        return sorted(node for node, pid in self._recorded() if not self._is_our_node(pid))

    # ---- up ------------------------------------------------------------------------------------------------
    def _check_ports_free(self) -> None:
        if self.state.netns:
            return  # a fresh namespace has nothing listening
        b = self.state.base_port
        busy = busy_port(b, self.state.brokers)
        deadline = time.monotonic() + PORT_PATIENCE
        while busy is not None and time.monotonic() < deadline:     # (a cluster stopped just before lets go late)
            time.sleep(0.5)
            busy = busy_port(b, self.state.brokers)
        if busy is not None:
            raise UserError(f"port {busy} on 127.0.0.1 is in use; stop what uses it or choose another "
                            f"--base-port (this cluster needs {b}..{b + SSL_OFFSET + 2})")

    def _server_properties(self, i: int) -> str:
        s, b, n = self.state, self.state.base_port, self.state.brokers
        voters = ",".join(f"{j + 1}@127.0.0.1:{b + CONTROLLER_OFFSET + j}" for j in range(n))
        listeners = [f"PLAINTEXT://127.0.0.1:{b + i}", f"CONTROLLER://127.0.0.1:{b + CONTROLLER_OFFSET + i}"]
        advertised = [f"PLAINTEXT://127.0.0.1:{b + i}"]
        if s.external_advertised:
            listeners.append(f"EXTERNAL://127.0.0.1:{b + EXTERNAL_OFFSET + i}")
            advertised.append(f"EXTERNAL://{s.external_advertised[i]}")
        settings = dict(s.settings)
        if s.tls:
            listeners.append(f"SSL://127.0.0.1:{b + SSL_OFFSET + i}")
            advertised.append(f"SSL://127.0.0.1:{b + SSL_OFFSET + i}")
            settings.update(tls.broker_properties(s.tls_directory))
        # (Kafka takes the inter-broker listener by name or by protocol, not both: the name it is)
        inter = settings.pop("security.inter.broker.protocol", "PLAINTEXT").upper()
        props = {
            "process.roles": "broker,controller",
            "node.id": i + 1,
            "controller.quorum.voters": voters,  # a static voter set, the same for one node and three
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": inter,
            "listeners": ",".join(listeners),
            "advertised.listeners": ",".join(advertised),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,EXTERNAL:PLAINTEXT,SSL:SSL",
            "log.dirs": self.node_dir(i) / "data",
            "num.partitions": 1,
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": n,
            "transaction.state.log.replication.factor": n,
            "transaction.state.log.min.isr": 1,
            **TUNED,
            # Bounded disk: benchmarks write GBs; keep ≤ ~256 MiB + one segment per partition.
            "log.retention.bytes": 256 * 1024 * 1024,
            "log.segment.bytes": 64 * 1024 * 1024,
            "log.retention.check.interval.ms": 30000,
            "delete.topic.enable": "true",
            **settings,
        }
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def up(self, timeout: float = 120, quiet: bool = False) -> None:
        """Start the nodes and return once a topic can be created; on any failure (or Ctrl-C) stop them again."""
        if self.running_pids():
            raise UserError(f"a cluster is already running from {self.directory}; run 'kafkasim cluster down' first")
        lib = ensure_kafka(quiet=quiet)
        self._check_ports_free()
        if self.directory.exists():
            if any(self.directory.iterdir()) and not self.state_file.exists():
                raise UserError(f"--dir {self.directory} holds files that are not a kafkasim cluster's; give an "
                                f"empty or new directory (kafkasim deletes only what it created)")
            shutil.rmtree(self.directory)  # what a stopped cluster left behind: old data and logs
        self.directory.mkdir(parents=True)
        if self.state.tls:
            tls.make_certificate(self.state.tls_directory)
        self.state.cluster_id = _random_cluster_id()
        self.state.started_at = time.time()
        self._save()
        try:
            self._format_all(lib)
            for i in range(self.state.brokers):
                self.state.pids.append(self._start(lib, i))
                self._save()
            self._wait_ready(lib, timeout)
        except BaseException:
            self.down()
            raise

    def _format_all(self, lib: Path) -> None:
        """StorageTool format for every node, concurrently (each is a JVM start of a few seconds)."""
        procs = []
        for i in range(self.state.brokers):
            node = self.node_dir(i)
            (node / "logs").mkdir(parents=True)
            (node / "server.properties").write_text(self._server_properties(i))
            (node / "log4j2.properties").write_text(BROKER_LOG4J.format(logs=node / "logs"))
            cmd = java_command(lib, "kafka.tools.StorageTool",
                               ["format", "-t", self.state.cluster_id, "-c", str(node / "server.properties")],
                               heap="256m")
            procs.append(subprocess.Popen([*self.state.prefix, *cmd], stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        for i, proc in enumerate(procs):
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                last = out.strip().splitlines()[-1:] or ["no output"]
                raise LiveError(f"formatting node {i + 1} storage failed: {last[0]}")

    def _start(self, lib: Path, i: int) -> int:
        node = self.node_dir(i)
        cmd = java_command(lib, "kafka.Kafka", [str(node / "server.properties")], heap=self.heap,
                           log_config=node / "log4j2.properties")
        cmd[1:1] = [f"-Xms{self.heap}", f"-Dkafka.logs.dir={node / 'logs'}", *jmx_flags(self.jmx_port(i))]
        with open(node / "logs" / "stdout.log", "ab") as out:
            # Own session = own process group: `down` signals the group, so nothing the JVM forks survives it.
            proc = subprocess.Popen([*self.state.prefix, *cmd], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, cwd=node)
        (node / "kafka.pid").write_text(f"{proc.pid}\n")
        return proc.pid

    def _wait_listening(self, i: int, deadline: float, timeout: float) -> None:
        while not self._listening(self.state.base_port + i):
            self._check_alive(i, self.state.pids[i])
            if time.monotonic() > deadline:
                raise LiveError(f"node {i + 1} did not open port {self.state.base_port + i} in {timeout:.0f} s; "
                                f"see {self.node_dir(i) / 'logs' / 'server.log'}")
            time.sleep(0.25)

    def _wait_ready(self, lib: Path, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        for i in range(self.state.brokers):
            self._wait_listening(i, deadline, timeout)
        # Ready means ready for what we need: a topic replicated on every node can be created.
        topic = "kafkasim-ready"
        while True:
            try:
                admin.create_topic(lib, self.state.bootstrap, topic, 1, self.state.brokers, prefix=self.state.prefix,
                                   timeout=max(5.0, deadline - time.monotonic()))
                admin.delete_topic(lib, self.state.bootstrap, topic, prefix=self.state.prefix)
                return
            except LiveError as exc:
                for i, pid in enumerate(self.state.pids):
                    self._check_alive(i, pid)
                if time.monotonic() > deadline:
                    raise LiveError(f"cluster not ready in {timeout:.0f} s: {exc}") from None
                time.sleep(1)

    def _listening(self, port: int) -> bool:
        if self.state.netns:  # the port lives in the namespace: ask from inside
            probe = [sys.executable, "-c", f"import socket; socket.create_connection(('127.0.0.1', {port}), 1)"]
            return subprocess.run([*self.state.prefix, *probe], capture_output=True).returncode == 0
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            return True
        except OSError:
            return False

    def _check_alive(self, i: int, pid: int) -> None:
        # The process we just started: alive unless gone or a zombie. (Its command line names kafka.Kafka only
        # once it has exec'd java, which on a busy machine can take a moment, so it is not the test here.)
        if not _running(pid):
            log = self.node_dir(i) / "logs" / "server.log"
            errors = [ln for ln in _tail(log) if " ERROR " in ln or "Exception" in ln]
            why = errors[-1].strip() if errors else f"see {log}"
            raise LiveError(f"node {i + 1} exited during start: {why}")

    def jmx_port(self, i: int) -> int:
        """Node i's JMX port (loopback, no authentication: its brokers' thread CPU and request metrics)."""
        return self.state.base_port + JMX_OFFSET + i

    # ---- one node down and back (cluster.offline_brokers) ------------------------------------------------------
    def stop_node(self, i: int, grace: float = 60) -> None:
        """Stop node i (0-based) as an operator would: SIGTERM, so that the broker shuts down in a controlled way
        (the controller moves its leaderships and drops it from every ISR first); SIGKILL after `grace` s. Its
        data stays, for start_node."""
        pid = self.state.pids[i]
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self._is_our_node(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if self._is_our_node(pid):
            _signal_group(pid, signal.SIGKILL)
        _reap(pid)
        (self.node_dir(i) / "kafka.pid").unlink(missing_ok=True)

    def start_node(self, i: int, timeout: float = 120) -> None:
        """Start node i again on its own data (unless it runs); returns once it listens."""
        if self._is_our_node(self.state.pids[i]):
            return
        self.state.pids[i] = self._start(ensure_kafka(quiet=True), i)
        self._save()
        self._wait_listening(i, time.monotonic() + timeout, timeout)

    # ---- status / down -------------------------------------------------------------------------------------
    def status(self) -> dict:
        running = self.running_pids()
        return {"directory": str(self.directory), "brokers": self.state.brokers, "bootstrap": self.state.bootstrap,
                "kafka_version": self.state.kafka_version, "pids": self.state.pids, "running": running,
                "up": bool(running) and len(running) == self.state.brokers}

    def down(self, grace: float = 15) -> list[int]:
        """Stop every node this directory's PID files name (SIGTERM, then SIGKILL after `grace` s)."""
        pids = self.running_pids()
        for pid in pids:
            _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while any(self._is_our_node(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in pids:
            if self._is_our_node(pid):
                _signal_group(pid, signal.SIGKILL)
        for pid in pids:
            _reap(pid)
        for pid_file in self._pid_files():
            pid_file.unlink(missing_ok=True)
        for data in self.directory.glob("node-*/data"):
            shutil.rmtree(data, ignore_errors=True)  # bounded disk: a stopped cluster keeps only its logs
        return pids


# Seconds a port may stay taken before `up` gives up on it: a measure that switches from one cluster to the next
# met the previous broker's JMX port still bound just after that broker had exited.
PORT_PATIENCE = 10.0


def busy_port(base: int, brokers: int) -> int | None:
    """The first port a cluster on `base` needs that something on 127.0.0.1 already uses, or None."""
    for i in range(brokers):
        for port in (base + i, base + CONTROLLER_OFFSET + i, base + EXTERNAL_OFFSET + i, base + JMX_OFFSET + i,
                     base + SSL_OFFSET + i):
            with socket.socket() as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    return port
    return None


def free_base_port(start: int, brokers: int = 3, step: int = 1000, tries: int = 20) -> int:
    """The first of start, start + step, … whose ports are all free and that no other live process has claimed,
    claimed now for this process (each private cluster its own ports: a cluster binds them only seconds after its
    block is chosen, once its nodes are formatted and started)."""
    for k in range(tries):
        base = start + k * step
        if busy_port(base, brokers) is None and _claim(base):
            return base
    raise UserError(f"no free block of ports from {start} in steps of {step}; choose one with --base-port")


def _claim(base: int) -> bool:
    """Claim the block at `base` for this process (a file naming its pid); False if a live process holds it."""
    claims = cache_dir() / "port-claims"
    claims.mkdir(parents=True, exist_ok=True)
    path = claims / str(base)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            try:
                owner, age = int(path.read_text() or 0), time.time() - path.stat().st_mtime
            except (OSError, ValueError):
                owner, age = 0, 0.0
            if (owner and owner != os.getpid() and _running(owner)) or (not owner and age < 5):
                return False      # (a claim made this instant may not hold its pid yet)
            path.unlink(missing_ok=True)      # a dead process's claim, or our own earlier one: take it anew
            continue
        with os.fdopen(fd, "w") as f:
            f.write(str(os.getpid()))
        return True
    return False


def jmx_flags(port: int) -> list[str]:
    """A JMX connector on 127.0.0.1:port only, registry and server on the one port."""
    return ["-Dcom.sun.management.jmxremote", f"-Dcom.sun.management.jmxremote.port={port}",
            f"-Dcom.sun.management.jmxremote.rmi.port={port}", "-Dcom.sun.management.jmxremote.host=127.0.0.1",
            "-Djava.rmi.server.hostname=127.0.0.1", "-Dcom.sun.management.jmxremote.authenticate=false",
            "-Dcom.sun.management.jmxremote.ssl=false", "-Dcom.sun.management.jmxremote.local.only=true"]


def _random_cluster_id() -> str:
    # What `StorageTool random-uuid` prints: 16 random bytes, url-safe base64 without padding; never a leading '-'
    # (StorageTool would read it as a flag).
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the node is its session's leader: its pid is the group id
    except ProcessLookupError:
        pass


def _reap(pid: int) -> None:
    """Collect the exit status if the node is our child (it is, when `up` and `down` run in one process)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def _tail(path: Path, lines: int = 200) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def _running(pid: int) -> bool:
    """The process exists and has not exited (a zombie has exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"
