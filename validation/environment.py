"""Where a measurement ran: the machine, the OS and the Java and Kafka versions, stored with every run."""
from __future__ import annotations

import functools
import os
import platform
import resource
import subprocess
from pathlib import Path

from kafkasim.validation.kafka_dist import KAFKA_VERSION


from kafkasim.calibration.host import cpu_model  # noqa: E402  (re-exported: the measurement's machine)


@functools.cache
def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30).stderr
        return out.splitlines()[0].strip() if out else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def _memory_gib() -> float | None:
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except OSError:
        pass
    return None


@functools.cache
def machine() -> dict:
    return {"cpu_model": cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "kernel": platform.release(), "os": platform.platform(), "python": platform.python_version(),
            "java": java_version(), "kafka_tools_version": KAFKA_VERSION}


def snapshot() -> dict:
    """machine() plus what changes from run to run (the load explains much of the spread on a shared machine)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {**machine(), "loadavg": load}


# The measurement's own processes on this host besides the client: Kafka nodes and the network-emulation proxy.
KAFKA_NODE = b"kafka.Kafka"      # in a Kafka broker's or controller's command line (its main class)
OWN_PROCESSES = (KAFKA_NODE, b"toxiproxy")


def host_busy_seconds(stat: str | None = None) -> float:
    """CPU-seconds all cores have been busy since boot (/proc/stat's first line: all but idle and iowait)."""
    line = (stat if stat is not None else Path("/proc/stat").read_text()).splitlines()[0].split()
    ticks = [int(x) for x in line[1:9]]          # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat: Path) -> float:
    """User + system CPU-seconds so far of a process or thread, from its /proc/…/stat file."""
    fields = stat.read_text().rsplit(")", 1)[1].split()     # (after the command name, which may hold spaces)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_pids(names: tuple[bytes, ...] = OWN_PROCESSES) -> list[int]:
    """This host's processes whose command line names one of `names` (whoever started them)."""
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and any(name in (entry / "cmdline").read_bytes() for name in names):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


def own_processes_seconds() -> dict[int, float]:
    """CPU-seconds used so far by each of this host's Kafka nodes and proxies (whoever started them), by pid."""
    out = {}
    for pid in own_pids():
        try:
            out[pid] = cpu_seconds(Path(f"/proc/{pid}/stat"))
        except OSError:
            continue
    return out


def since(start: dict[int, float], now: dict[int, float]) -> float:
    """CPU-seconds between two readings of own_processes_seconds(): the processes alive at the second (one that
    started in between from zero); one that exited in between leaves only its earlier share out, never a negative."""
    return sum(max(0.0, seconds - start.get(pid, 0.0)) for pid, seconds in now.items())


# A broker's threads by kind, from their /proc comm ("data-plane-kafk" is its request handlers' and network
# threads' first 15 characters)
NODE_THREAD_KINDS = (("data-plane-kafk", "data-plane"), ("ReplicaFetcherT", "fetcher"), ("C1 Compiler", "jit"),
                     ("C2 Compiler", "jit"), ("GC Thread", "gc"), ("G1 ", "gc"))


def nodes_threads_seconds() -> dict[str, float]:
    """CPU-seconds so far of this host's Kafka nodes' threads, by kind (data-plane, fetcher, jit, gc, other). The
    JIT's share is a cost of a fresh broker's start (it compiles for minutes), not of the work measured."""
    out: dict[str, float] = {}
    for pid in own_pids((KAFKA_NODE,)):
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                comm = (task / "comm").read_text().strip()
                kind = next((k for prefix, k in NODE_THREAD_KINDS if comm.startswith(prefix)), "other")
                out[kind] = out.get(kind, 0.0) + cpu_seconds(task / "stat")
        except OSError:
            continue
    return out


# A JVM's threads by kind, from their /proc comm (Linux keeps a name's first 15 characters).
THREAD_KINDS = (("C1 Compiler", "C1"), ("C2 Compiler", "C2"), ("kafka-producer-", "sender"), ("java", "worker"),
                ("kafkasim-worker", "worker"), ("G1 ", "gc"), ("GC ", "gc"))   # (ProducerThreads.java's workers)


def thread_kind(name: str) -> str:
    for prefix, kind in THREAD_KINDS:
        if name == prefix or (prefix != "java" and name.startswith(prefix)):
            return kind
    return "other"


def run_queue_seconds(schedstat: Path) -> float:
    """Seconds a thread has spent runnable but waiting for a core, from its /proc/…/schedstat (run time, run-queue
    wait, time slices; 0 where the kernel keeps no scheduler statistics)."""
    try:
        return int(schedstat.read_text().split()[1]) / 1e9
    except (FileNotFoundError, IndexError, ValueError):
        return 0.0


class ThreadCpu:
    """The CPU-seconds of a Java client's threads by kind (worker: perf-test's main thread; sender; the C1 and
    C2 compilers; gc; other), and if asked the seconds they waited for a core, from readings of /proc taken while
    it runs; summed over the processes sampled (a consumer group's instances).
    A thread that exits (the Sender, at close) leaves its kind's sum: each kind keeps its highest reading, so the
    totals are short by at most what came after the last reading. `kind(pid, task)` names a thread's kind where its
    name does not tell (a Python client's threads all share the interpreter's name): by_comm, by default."""

    def __init__(self, waits: bool = False, kind=None):
        self.kind = kind or by_comm
        self.asked_waits = waits              # (read only when asked: one more file)
        self.cpu: dict[int, dict[str, float]] = {}      # by process: each kind's highest reading
        self.waited: dict[int, dict[str, float]] = {}
        # by process: the reading in which its Sender thread first shows (the producer just built: perf-test's
        # clock starts), so that what the JVM spent starting up can be told from the run's own
        self.first: dict[int, dict[str, float]] = {}

    @property
    def totals(self) -> dict[str, float]:
        return _summed(self.cpu)

    @property
    def at_start(self) -> dict[str, float]:
        """The threads' CPU-seconds by kind when each process's Sender first showed (summed over processes)."""
        return _summed(self.first)

    @property
    def waits(self) -> dict[str, float] | None:
        return _summed(self.waited) if self.asked_waits else None

    def sample(self, pid: int) -> dict[str, float] | None:
        """Read process `pid`'s threads now; returns their CPU-seconds by kind, None once it has exited."""
        now: dict[str, float] = {}
        waited: dict[str, float] = {}
        try:
            for task in Path(f"/proc/{pid}/task").iterdir():
                kind = self.kind(pid, task)
                now[kind] = now.get(kind, 0.0) + cpu_seconds(task / "stat")
                if self.asked_waits:
                    waited[kind] = waited.get(kind, 0.0) + run_queue_seconds(task / "schedstat")
        except (FileNotFoundError, ProcessLookupError):
            return None
        self.cpu[pid] = _highest(self.cpu.get(pid, {}), now)
        if "sender" in now and pid not in self.first:
            self.first[pid] = now
        if self.asked_waits:
            self.waited[pid] = _highest(self.waited.get(pid, {}), waited)
        return now


def by_comm(pid: int, task: Path) -> str:
    """A Java producer's thread's kind, from its /proc comm."""
    return thread_kind((task / "comm").read_text().strip())


def main_or_other(pid: int, task: Path) -> str:
    """A Python client's threads: the main thread sends (the worker), the others are its I/O thread (the sender)."""
    return "worker" if task.name == str(pid) else "sender"


def _highest(kept: dict[str, float], now: dict[str, float]) -> dict[str, float]:
    return {k: max(now.get(k, 0.0), kept.get(k, 0.0)) for k in {*now, *kept}}


def _summed(by_process: dict[int, dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for kinds in by_process.values():
        for kind, seconds in kinds.items():
            out[kind] = out.get(kind, 0.0) + seconds
    return out


class CpuWatch:
    """Where this host's CPU went during one run, in cores (CPU-seconds per second): the client (this process's
    children), the cluster's processes on this host, and everything else — other work on a shared machine, which
    shapes latencies far more than throughput."""

    def __init__(self):
        self.busy = host_busy_seconds()
        self.own = own_processes_seconds()
        self.threads = nodes_threads_seconds()
        self.children = self._children()

    @staticmethod
    def _children() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def stop(self, seconds: float) -> dict | None:
        if seconds <= 0:
            return None
        busy = host_busy_seconds() - self.busy
        client = self._children() - self.children
        cluster = since(self.own, own_processes_seconds())
        threads = nodes_threads_seconds()
        kinds = {k: round(max(0.0, v - self.threads.get(k, 0.0)) / seconds, 3) for k, v in sorted(threads.items())}
        return {"busy_cores": round(busy / seconds, 3), "client_cores": round(client / seconds, 3),
                "cluster_cores": round(cluster / seconds, 3), "cluster_jit_cores": kinds.get("jit", 0.0),
                "cluster_threads_cores": kinds,
                "other_cores": round(max(0.0, busy - client - cluster) / seconds, 3)}
