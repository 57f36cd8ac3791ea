"""Topic administration through Kafka's own TopicCommand, so a user's --command-config (SASL, SSL) just works."""
from __future__ import annotations

import subprocess
from pathlib import Path

from kafkasim.validation.errors import LiveError
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
