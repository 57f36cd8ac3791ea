"""Where a measurement ran: the machine, the OS and the Java and Kafka versions, stored with every run."""
from __future__ import annotations

import functools
import os
import platform
import subprocess

from kafkasim.validation.kafka_dist import KAFKA_VERSION


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


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
    return {"cpu_model": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(),
            "kernel": platform.release(), "os": platform.platform(), "python": platform.python_version(),
            "java": java_version(), "kafka_tools_version": KAFKA_VERSION}


def snapshot() -> dict:
    """machine() plus what changes from run to run (the load explains much of the spread on a shared machine)."""
    try:
        load = list(os.getloadavg())
    except OSError:
        load = None
    return {**machine(), "loadavg": load}
