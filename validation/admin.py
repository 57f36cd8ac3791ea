"""Topic administration through Kafka's own TopicCommand, so a user's --command-config (SASL, SSL) just works."""
from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

from kafkasim.model.errors import LiveError
from kafkasim.validation.kafka_dist import java_command


def topic_command(lib: Path, bootstrap: str, args: list[str], command_config: Path | None = None,
                  prefix: tuple[str, ...] = (), timeout: float = 60) -> subprocess.CompletedProcess:
    full = ["--bootstrap-server", bootstrap, *args]
    if command_config is not None:
        full += ["--command-config", str(command_config)]
    cmd = [*prefix, *java_command(lib, "org.apache.kafka.tools.TopicCommand", full, heap="256m")]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise LiveError(f"TopicCommand {args[0]} against {bootstrap} did not finish in {timeout:.0f} s") from None


def _last_error(proc: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and not ln.startswith("\tat ")]
    errors = [ln for ln in lines if "Error" in ln or "Exception" in ln]
    return (errors or lines or ["no output"])[-1].strip()


def create_topic(lib: Path, bootstrap: str, name: str, partitions: int, replication_factor: int,
                 configs: dict[str, str] | None = None, command_config: Path | None = None,
                 prefix: tuple[str, ...] = (), timeout: float = 60) -> None:
    args = ["--create", "--if-not-exists", "--topic", name, "--partitions", str(partitions),
            "--replication-factor", str(replication_factor)]
    for key, value in (configs or {}).items():
        args += ["--config", f"{key}={value}"]
    proc = topic_command(lib, bootstrap, args, command_config, prefix, timeout)
    if proc.returncode != 0:
        raise LiveError(f"creating topic {name} ({partitions} partitions, RF {replication_factor}) failed: "
                        f"{_last_error(proc)}")


def delete_topic(lib: Path, bootstrap: str, name: str, command_config: Path | None = None,
                 prefix: tuple[str, ...] = ()) -> None:
    proc = topic_command(lib, bootstrap, ["--delete", "--if-exists", "--topic", name], command_config, prefix)
    if proc.returncode != 0:
        raise LiveError(f"deleting topic {name} failed: {_last_error(proc)}")


# One partition's line of `kafka-topics --describe` (the leader is "none" while a partition has none).
PARTITION_LINE = re.compile(r"Partition:\s*(\d+)\s+Leader:\s*(\S+)\s+Replicas:\s*([\d,]*)\s+Isr:\s*([\d,]*)")


def describe_topic(lib: Path, bootstrap: str, name: str, command_config: Path | None = None,
                   prefix: tuple[str, ...] = ()) -> list[dict]:
    """Each partition's leader (None if it has none), replicas and ISR, as broker ids."""
    proc = topic_command(lib, bootstrap, ["--describe", "--topic", name], command_config, prefix)
    if proc.returncode != 0:
        raise LiveError(f"describing topic {name} failed: {_last_error(proc)}")
    return [{"partition": int(m[1]), "leader": int(m[2]) if m[2].isdigit() else None,
             "replicas": _ids(m[3]), "isr": _ids(m[4])} for m in PARTITION_LINE.finditer(proc.stdout)]


def _ids(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def wait_for_topic(lib: Path, bootstrap: str, name: str, ready, what: str, timeout: float = 120,
                   prefix: tuple[str, ...] = ()) -> list[dict]:
    """Describe the topic until ready(partitions) holds; `what` names the wait in the error if it never does."""
    deadline = time.monotonic() + timeout
    while True:
        partitions = describe_topic(lib, bootstrap, name, prefix=prefix)
        if partitions and ready(partitions):
            return partitions
        if time.monotonic() > deadline:
            raise LiveError(f"topic {name}: {what} did not happen in {timeout:.0f} s (last seen: "
                            f"{[(p['partition'], p['leader'], p['isr']) for p in partitions]})")
        time.sleep(1)
