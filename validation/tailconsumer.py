"""A consumer tailing a producer run (validation/TailConsumer.java: Kafka's KafkaConsumer in a group of its own):
started before the producer, ready once its partitions are assigned, and afterwards each record's end-to-end
latency (poll() less the record's CreateTime, set in send()) and the consumer's fetch metrics."""
from __future__ import annotations

import json
import subprocess
import tempfile
import threading
from pathlib import Path

from kafkasim.model.errors import LiveError
from kafkasim.validation import environment
from kafkasim.validation.consumerperf import IDLE_TIMEOUT_MS, consumer_properties
from kafkasim.validation.kafka_dist import compiled, java_command
from kafkasim.validation.runners import CLIENT_HEAP, Target, last_line

TOOL = Path(__file__).resolve().parent / "TailConsumer.java"
READY_SECONDS = 60           # a fresh JVM's start and the group's join on a busy 2-core host


class Tail:
    def __init__(self, lib: Path, sc, target: Target, topic: str, records: int, group: str):
        props = {k: v for k, v in consumer_properties(sc).items() if k != "auto.offset.reset"}
        config = ["--command-config", str(target.command_config)] if target.command_config else []
        args = ["--bootstrap-server", target.bootstrap, "--topic", topic, "--group", group, "--records",
                str(records), "--timeout-ms", str(IDLE_TIMEOUT_MS), *config,
                "--command-property", *(f"{k}={v}" for k, v in sorted(props.items()))]
        cmd = [*target.client_prefix,
               *java_command(lib, TOOL.stem, args, heap=CLIENT_HEAP, classes=compiled(lib, TOOL))]
        self.stderr = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.stderr, text=True,
                                     start_new_session=True)
        self.lines: list[str] = []
        self.ready = threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        if not self.ready.wait(READY_SECONDS) or "READY" not in self.lines:
            self.stop()
            raise LiveError(f"the tailing consumer was not assigned its partitions within {READY_SECONDS} s: "
                            f"{self._why()}")
        # its CPU so far (the JVM's start, the join): what it takes from the run is the rest
        self.cpu_at_ready = environment.cpu_seconds(Path(f"/proc/{self.proc.pid}/stat"))

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.startswith("READY"):
                self.ready.set()
        self.ready.set()            # (it ended: the caller finds no READY line and says why)

    def result(self, seconds: float) -> dict:
        """Its RESULT once it has read every record (or stopped waiting), within `seconds`."""
        try:
            self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.stop()
            raise LiveError(f"the tailing consumer did not finish within {seconds:.0f} s") from None
        self.reader.join(5)
        line = next((ln for ln in self.lines if ln.startswith("RESULT ")), None)
        if line is None:
            raise LiveError(f"the tailing consumer printed no result: {self._why()}")
        out = json.loads(line.split(" ", 1)[1])
        out["run_cpu_s"] = max(0.0, out.get("process_cpu_s", 0.0) - self.cpu_at_ready)
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _why(self) -> str:
        self.stderr.seek(0)
        return last_line(self.stderr.read())
