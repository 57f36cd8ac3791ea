"""Producer defaults and behaviours that differ by client library and version (docs/kafka-internals.md §2, §9)."""
from __future__ import annotations

JAVA_VERSIONS = ("2.2", "2.3", "2.4", "2.5", "2.6", "2.7", "2.8", "3.0", "3.1", "3.2", "3.3", "3.4", "3.5", "3.6",
                 "3.7", "3.8", "3.9", "4.0", "4.1", "4.2", "4.3")
KAFKA_PYTHON_VERSIONS = ("3.0",)


def major_minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    try:
        return int(parts[0]), int(parts[1]) if len(parts) > 1 else 0
    except ValueError:
        raise ValueError("expected a version like 2.4 or 3.9.1") from None


def _check(library: str, version: str) -> tuple[int, int]:
    mm = major_minor(version)
    known = JAVA_VERSIONS if library == "java" else KAFKA_PYTHON_VERSIONS
    if f"{mm[0]}.{mm[1]}" not in known:
        raise ValueError(f"{library} versions modelled are {', '.join(known)}")
    return mm


def producer_defaults(library: str, version: str) -> dict[str, object]:
    """The producer property defaults of this client (Kafka names, without the `producer.` prefix)."""
    mm = _check(library, version)
    if library == "kafka-python":
        return {
            "acks": "all", "batch.size": 16384, "linger.ms": 0.0, "compression.type": "none",
            "max.in.flight.requests.per.connection": 5,
            "buffer.memory": 0,                      # 3.x: the accumulator is unbounded (kafka-internals §4)
            "max.block.ms": 60000.0, "max.request.size": 1048576, "send.buffer.bytes": -1,
            "enable.idempotence": True,              # 3.x default; mutes partitions (§5)
            "partitioner.adaptive.partitioning.enable": False, "partitioner.availability.timeout.ms": 0.0,
            "partitioner.ignore.keys": False,
            "request.timeout.ms": 30000.0, "delivery.timeout.ms": 120000.0, "retries": 2**31 - 1,
        }
    idempotent = mm >= (3, 0)
    return {
        "acks": "all" if idempotent else "1",
        "batch.size": 16384,
        "linger.ms": 5.0 if mm >= (4, 0) else 0.0,
        "compression.type": "none",
        "max.in.flight.requests.per.connection": 5,
        "buffer.memory": 33554432,
        "max.block.ms": 60000.0,
        "max.request.size": 1048576,
        "send.buffer.bytes": 131072,
        "enable.idempotence": idempotent,
        "partitioner.adaptive.partitioning.enable": True,
        "partitioner.availability.timeout.ms": 0.0,
        "partitioner.ignore.keys": False,
        "request.timeout.ms": 30000.0,
        "delivery.timeout.ms": 120000.0,
        "retries": 2**31 - 1,
    }


def partitioner_name(library: str, version: str) -> str:
    """Which built-in behaviour chooses partitions for records without a key."""
    if library == "kafka-python":
        return "random"              # DefaultPartitioner: random partition per null-key record
    mm = major_minor(version)
    if mm <= (2, 3):
        return "round-robin"
    if mm <= (3, 2):
        return "sticky"              # KIP-480
    return "uniform-sticky"          # KIP-794


def mutes_partitions(library: str, idempotent: bool, max_in_flight: int) -> bool:
    """Whether the sender allows only one in-flight batch per partition (§5.4)."""
    if max_in_flight == 1:
        return True
    return library == "kafka-python" and idempotent


def compresses_on_sender(library: str) -> bool:
    """kafka-python compresses the whole batch at drain on the sender thread; Java streams on the worker."""
    return library == "kafka-python"
