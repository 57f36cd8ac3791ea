"""The scenario's field table and the checks every key and value pass: what a scenario file, --set, sweep's
--vary and the app accept. Each entry: flattened key -> Field; producer and broker keys are Kafka's property
names."""
from __future__ import annotations

import difflib
import math
from typing import Any

import yaml

from kafkasim.model.errors import ScenarioError
from kafkasim.model.fields import Field, clip
from kafkasim.model.hardware import HARDWARE_FIELDS, PER_BROKER, per_broker


INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
# Kafka's security.protocol values (which it takes in any case)
SECURITY_PROTOCOLS = ("plaintext", "ssl", "sasl_plaintext", "sasl_ssl")

FIELDS: dict[str, Field] = {
    "name": Field(str, "scenario", "A short name for the scenario."),
    "description": Field(str, "", "Free text: where the scenario comes from."),
    "seed": Field(int, 1, "Seed for the model's random streams; same seed, same output.", 0),
    "client.library": Field(("java", "kafka-python"), "java", "The producer client library."),
    "client.version": Field(str, "4.3", "Client version; selects defaults and the partitioner "
                            "(Java 2.2 round-robin, 2.4–3.2 sticky, ≥ 3.3 uniform sticky; kafka-python 3.x random)."),
    "producers": Field(int, 1, "Producer instances (each with its own connections, accumulator and sender); 0 = "
                       "consumers only, reading what the topic holds (consumers.prefilled_records).", 0, 1000),
    "threads": Field(int, 1, "Worker threads per producer instance calling send().", 1, 256),
    # --- producer properties (Kafka names). None = the client version's default.
    "producer.acks": Field(("0", "1", "all", "-1"), None, "Acknowledgements the leader must receive before a "
                           "request is complete: 0 none, 1 the leader, all the full ISR."),
    "producer.batch.size": Field(int, None, "Bytes per partition batch before it is sent (0: no batching, one "
                                 "record a batch, as Kafka takes it).", 0, INT_MAX),
    "producer.linger.ms": Field(float, None, "How long a batch waits for more records before it is sendable.",
                                0, INT_MAX),
    "producer.compression.type": Field(("none", "gzip", "snappy", "lz4", "zstd"), None,
                                       "Codec for whole batches."),
    # KIP-390 (Java ≥ 3.8): the codec's level. Each default is what every client used before.
    "producer.compression.gzip.level": Field(int, -1, "gzip level (Java ≥ 3.8): 1 (fastest) … 9 (smallest); "
                                             "-1 is zlib's default, 6.", -1, 9),
    "producer.compression.lz4.level": Field(int, 9, "lz4 level (Java ≥ 3.8): 9, the default, uses lz4's fast "
                                            "compressor; any other, 1 … 17, its high-compression one (LZ4HC).",
                                            1, 17),
    "producer.compression.zstd.level": Field(int, 3, "zstd level (Java ≥ 3.8): 1 … 22, higher compresses smaller "
                                             "and slower (negative levels faster still); 3 is zstd's default.",
                                             -131072, 22),
    "producer.max.in.flight.requests.per.connection": Field(int, None, "Unacknowledged requests per broker "
                                                            "connection before the sender stops sending.", 1, 1000),
    "producer.buffer.memory": Field(int, None, "Bytes the producer may hold for records waiting to be sent and "
                                    "in flight (kafka-python 3.x: unbounded, 0).", 0, LONG_MAX),
    "producer.max.block.ms": Field(float, None, "How long send() may block waiting for buffer memory.", 0, LONG_MAX),
    "producer.max.request.size": Field(int, None, "Largest request in bytes (and largest record).", 1, INT_MAX),
    "producer.send.buffer.bytes": Field(int, None, "TCP send buffer; -1 = the OS default.", -1, INT_MAX),
    "producer.enable.idempotence": Field(bool, None, "Exactly-once per partition; needs acks=all and "
                                         "max.in.flight ≤ 5."),
    "producer.partitioner.adaptive.partitioning.enable": Field(bool, None, "Uniform sticky partitioner: weigh "
                                                               "partitions by queue length (≥ 3.3)."),
    "producer.partitioner.availability.timeout.ms": Field(float, None, "Skip partitions whose leader has not "
                                                          "drained for this long (0 = off, ≥ 3.3).", 0, LONG_MAX),
    "producer.partitioner.ignore.keys": Field(bool, None, "Ignore keys when choosing partitions (≥ 3.3)."),
    "producer.request.timeout.ms": Field(float, None, "How long the sender waits for a response.", 0, INT_MAX),
    "producer.delivery.timeout.ms": Field(float, None, "Upper bound on the time from send() to success or "
                                          "failure.", 0, INT_MAX),
    "producer.retries": Field(int, None, "Retries of a failed batch.", 0, INT_MAX),
    # --- workload
    "workload.records": Field(int, 1_000_000, "Records each producer sends (perf-test --num-records); 0 = use "
                              "workload.seconds.", 0, 10**12),
    "workload.seconds": Field(float, 0.0, "Run for this long instead of a record count (0 = use "
                              "workload.records).", 0, 86400),
    "workload.warmup_records": Field(int, 0, "Records at the start left out of the results (perf-test "
                                     "--warmup-records).", 0, 10**12),
    "workload.throughput": Field(float, -1, "Target records/s per producer (perf-test --throughput); -1 = "
                                 "unthrottled. Split evenly over the producer's threads.", -1, 10**9),
    "workload.reporting_interval_ms": Field(int, 5000, "How often perf-test prints a window line: records/s and "
                                            "latency since the last (perf-test --reporting-interval).", 100,
                                            86_400_000),
    "workload.record_size": Field(int, 1024, "Record value size in bytes (the mean if a distribution is "
                                  "given).", 1, 100 * 2**20),
    "workload.record_size_max": Field(int, 0, "If > record_size: sizes uniform between 2·record_size − max "
                                      "and max (0 = fixed size).", 0, 100 * 2**20),
    "workload.key_size": Field(int, 0, "Key size in bytes (0 = null keys).", 0, 2**20),
    "workload.keys": Field(int, 0, "Distinct keys, hashed to partitions with murmur2 (0 = null keys).", 0, 10**12),
    "workload.payload": Field(("random-letters", "random-bytes", "text", "file", "repeated"), "random-letters",
                              "What the records hold; sets the compression ratio. random-letters is perf-test's "
                              "own payload; repeated is one random-letters value in every record, as perf-test "
                              "--record-size sent before Kafka 3.0 (KAFKA-12611)."),
    "workload.payload_file": Field(str, "", "Sample file of record values for payload: file."),
    "workload.partition_choice": Field(("partitioner", "per-thread", "round-robin"), "partitioner",
                                       "partitioner: the client's partitioner; per-thread: each worker thread "
                                       "writes explicit partitions of its own, disjoint from the other threads'; "
                                       "round-robin: explicit partitions from one counter the threads share, "
                                       "counter++ % partitions (the Java partitioner's choice up to 2.3)."),
    # --- topic
    "topic.name": Field(str, "kafkasim", "Topic name."),
    "topic.partitions": Field(int, 1, "Partitions of the topic.", 1, 100_000),
    "topic.replication.factor": Field(int, 1, "Replicas per partition.", 1, 100),
    "topic.min.insync.replicas": Field(int, 1, "Replicas that must be in sync for acks=all.", 1, 100),
    # --- cluster
    "producer.security.protocol": Field(SECURITY_PROTOCOLS, "plaintext", "How the producer's connections are "
                                        "secured: *_SSL encrypts every byte (TLS) on the Sender and the broker's "
                                        "network threads; SASL authenticates once a connection (not modelled)."),
    "cluster.brokers": Field(int, 1, "Brokers in the cluster.", 1, 1000),
    "cluster.offline_brokers": Field(int, 0, "Brokers of the cluster that are down (the highest ids): the topic "
                                     "was created with all of them, and each partition they led is led by its "
                                     "next in-sync replica, as after a controlled shutdown.", 0, 999),
    "cluster.background_bytes": Field(int, 1024, "Bytes per second each background partition receives, in one "
                                      "produce request a second.", 0, 10**9),
    "cluster.background_partitions": Field(int, 0, "Other partitions per broker, each with a light load, that "
                                           "cost the broker per-partition overhead.", 0, 10**6),
    "cluster.client_hosts": Field(int, 0, "Client hosts the producers and consumer instances run on, spread "
                                  "over them in turn: each host has hardware.client_cores cores and one NIC "
                                  "(hardware.nic_mbit each way) its processes share. 0: each on a host of its "
                                  "own.", 0, 10**4),
    "cluster.broker.num.network.threads": Field(int, 3, "Broker network processor threads.", 1, 256),
    "cluster.broker.num.io.threads": Field(int, 8, "Broker request handler threads.", 1, 256),
    "cluster.broker.queued.max.requests": Field(int, 500, "Requests queued before network threads stop "
                                                "reading.", 1, 10**6),
    "cluster.broker.compression.type": Field(("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
                                             "producer", "Broker codec; anything but producer recompresses."),
    "cluster.broker.group.initial.rebalance.delay.ms": Field(float, 3000, "How long the coordinator waits for "
                                                             "more members before a new group's first rebalance.",
                                                             0, INT_MAX),
    "cluster.broker.num.replica.fetchers": Field(int, 1, "Fetcher threads per source broker.", 1, 64),
    "cluster.broker.security.inter.broker.protocol": Field(SECURITY_PROTOCOLS, "plaintext", "How the brokers' "
                                                           "replication is secured: *_SSL encrypts it (the leader's "
                                                           "network thread, the follower's fetcher)."),
    "cluster.broker.replica.fetch.wait.max.ms": Field(float, 500, "How long a follower fetch is parked on the "
                                                      "leader waiting for data.", 0, INT_MAX),
    "cluster.broker.replica.fetch.min.bytes": Field(int, 1, "Bytes a follower fetch waits for.", 1, INT_MAX),
    "cluster.broker.replica.fetch.max.bytes": Field(int, 1048576, "Bytes per partition per follower fetch.",
                                                    1, INT_MAX),
    # --- network conditions added on top of the hardware (a live run emulates them)
    # --- consumers beside the producers (the classic Java consumer; consumer properties are Kafka's names)
    "consumers.groups": Field(int, 0, "Consumer groups reading the topic, each every record (0 = none).", 0, 100),
    "consumers.instances": Field(int, 1, "Consumer instances per group; the topic's partitions are assigned among "
                                 "them (beyond the partition count an instance gets none).", 1, 10_000),
    "consumers.prefilled_records": Field(int, 0, "Records the topic holds before the run, in full batches over its "
                                         "partitions: what a catch-up read (auto.offset.reset=earliest) starts "
                                         "with.", 0, 10**10),
    "consumers.messages": Field(int, 0, "Records each consumer instance reads before it stops "
                                "(kafka-consumer-perf-test --num-records; 0 = all the topic holds and the producers "
                                "write).", 0, 10**10),
    "consumers.app_record_us": Field(float, 0.0, "The application's own CPU per record between polls "
                                     "(kafka-consumer-perf-test: ≈ 0).", 0, 10**7),
    "consumers.start": Field(("with-producers", "before-producers"), "with-producers", "When the groups join: as "
                             "the run starts, beside the producers (the join and group.initial.rebalance.delay.ms "
                             "pass while records are sent), or before the producers send (their partitions assigned "
                             "at the run's start, as `kafkasim measure` runs a consumer tailing the producer)."),
    "consumer.auto.offset.reset": Field(("earliest", "latest"), "earliest", "Where a new group starts: the log's "
                                        "first record, or its end when it joins (perf-test's --from-latest)."),
    "consumer.fetch.min.bytes": Field(int, 1, "Bytes a fetch waits for on the broker.", 0, INT_MAX),
    "consumer.fetch.max.wait.ms": Field(float, 500, "How long the broker holds a fetch short of fetch.min.bytes.",
                                        0, INT_MAX),
    "consumer.max.partition.fetch.bytes": Field(int, 1048576, "Bytes per partition per fetch (at least one "
                                                "batch).", 1, INT_MAX),
    "consumer.fetch.max.bytes": Field(int, 52428800, "Bytes per fetch in all (at least one batch).", 1, INT_MAX),
    "consumer.max.poll.records": Field(int, 500, "Records one poll() returns at most.", 1, INT_MAX),
    "consumer.security.protocol": Field(SECURITY_PROTOCOLS, "plaintext", "How the consumer's connections are "
                                        "secured: *_SSL encrypts what the broker sends (no zero-copy sendfile) and "
                                        "the consumer decrypts it on its poll thread."),
    "consumer.partition.assignment.strategy": Field(("range", "roundrobin", "cooperative-sticky"), "range",
                                                    "How a group's partitions are spread over its instances."),
    "network.rtt_ms": Field(float, 0.0, "Round-trip delay added between clients and brokers.", 0, 10_000),
    "network.bandwidth_mbit": Field(float, 0.0, "Bandwidth cap between clients and brokers (0 = none).", 0, 10**6),
    "network.proxy": Field(bool, False, "The added delay and cap come from a TCP-terminating proxy, as `kafkasim "
                           "measure` emulates them (toxiproxy): the client's socket window never sees network.rtt_ms, "
                           "and the proxy adds hardware.proxy_ms of its own to every round trip."),
    # --- model run control
    "model.max_sim_seconds": Field(float, 600.0, "Stop simulating after this much simulated time.", 0.001, 10**6),
    "model.max_chunk": Field(int, 2048, "Most records a worker thread sends as one simulation step; 1 steps "
                             "record by record (slow, for checking the chunked model).", 1, 1 << 20),
    "model.fast_forward": Field(bool, True, "Once the run has settled (its windows alike, the JVM warm, the page "
                                "cache in its last regime), complete it as that stretch repeated rather than event "
                                "by event (model/steady.py); false simulates every event to the end."),
}
FIELDS.update({"hardware." + k: f for k, f in HARDWARE_FIELDS.items()})
# The codecs with a level, and each level's key (KIP-390); at their defaults they are left out of the properties a
# client is given (older clients and kafka-python do not know them).
LEVEL_KEYS = {codec: f"producer.compression.{codec}.level" for codec in ("gzip", "lz4", "zstd")}
# Client properties a live run passes to the client only away from their defaults (a user's --command-config may
# set them: security.protocol with SASL or SSL)
QUIET_AT_DEFAULT = (*LEVEL_KEYS.values(), "producer.security.protocol", "consumer.security.protocol")


def tls_seconds(hw, protocol: str, key: str) -> float:
    """A TLS cost (hardware `key`, in seconds) where a security.protocol encrypts the bytes (*_ssl), else 0."""
    return hw.seconds(key) if protocol.endswith("ssl") else 0.0


def given_to_client(key: str, value) -> bool:
    """Whether a live run passes this client property to the client (QUIET_AT_DEFAULT ones only away from their
    defaults)."""
    return not (key in QUIET_AT_DEFAULT and value == FIELDS[key].default)

SECTIONS = sorted({k.split(".")[0] for k in FIELDS})


def kafka_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


MAX_DEPTH, MAX_KEYS = 8, 2000     # no scenario nests deeper or holds more keys; YAML aliases can make both endless


def flatten(tree: Any, prefix: str = "", depth: int = 0, out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested mappings to dotted keys: {"producer": {"batch.size": 1}} -> {"producer.batch.size": 1}."""
    out = {} if out is None else out
    if not isinstance(tree, dict):
        out[prefix] = tree
        return out
    if depth >= MAX_DEPTH:
        raise ScenarioError(f"{prefix or 'the scenario'}: nested more than {MAX_DEPTH} levels deep (a YAML alias "
                            f"that refers to itself?); a scenario is sections of keys")
    for key, value in tree.items():
        full = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, dict):
            flatten(value, full, depth + 1, out)
        else:
            out[full] = value
        if len(out) > MAX_KEYS:
            raise ScenarioError(f"the scenario has more than {MAX_KEYS} keys (YAML aliases repeating mappings?)")
    return out


def parse_overrides(overrides: list[str] | tuple[str, ...]) -> dict[str, Any]:
    out = {}
    for item in overrides:
        if "=" not in item:
            raise ScenarioError(f"--set {clip(item)}: expected key=value, e.g. producer.batch.size=65536")
        key, text = item.split("=", 1)
        key = resolve_key(key) if key.strip() else key
        try:
            out[key.strip()] = yaml.safe_load(text) if text.strip() else ""
        except (yaml.YAMLError, RecursionError):
            raise ScenarioError(f"--set {clip(key.strip())[1:-1]}={clip(text)[1:-1]}: not a value (a number, a word, "
                                f"true/false)") from None
    return out


def resolve_key(key: str) -> str:
    """The flat scenario key for `key`: itself if known, else the producer's property of that name, else the one key
    ending in `.key` (batch.size -> producer.batch.size, partitions -> topic.partitions); otherwise check_key's
    unknown-key error. --set, sweep's --vary and the app take keys through it alike."""
    key = key.strip()
    if key in FIELDS or key.startswith("hardware.brokers."):
        check_key(key)
        return key
    if "producer." + key in FIELDS:         # a bare Kafka property is the producer's (compression.type)
        return "producer." + key
    matches = [k for k in FIELDS if k.endswith("." + key)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise ScenarioError(f"key {clip(key)} is ambiguous: it could be {', '.join(matches)}")
    check_key(key)           # raises ScenarioError with a did-you-mean
    return key


def field_of(key: str) -> Field:
    """The field of a flat key; a per-broker hardware key (hardware.brokers.<id>.<key>) has its key's field."""
    if key in FIELDS:
        return FIELDS[key]
    own = per_broker(key.removeprefix("hardware.")) if key.startswith("hardware.") else None
    if own is None:
        check_key(key)
    return FIELDS["hardware." + own[1]]


def check_key(key: str) -> None:
    if key in FIELDS or (key.startswith("hardware.brokers.") and per_broker(key.removeprefix("hardware."))):
        return
    if key.startswith("hardware.brokers."):
        raise ScenarioError(f"unknown key {clip(key)}: a broker's own hardware is hardware.brokers.<id>.<key>, "
                            f"<key> one of {', '.join(k for k in PER_BROKER if not k.startswith('broker.'))}, "
                            f"broker.*")
    # A bare Kafka producer property is a common slip: suggest its section.
    near = difflib.get_close_matches(key, FIELDS, n=1, cutoff=0.6)
    near = near or [k for k in FIELDS if k.endswith("." + key)][:1]
    hint = f"; did you mean {near[0]!r}?" if near else f"; sections are {', '.join(SECTIONS)}"
    raise ScenarioError(f"unknown key {clip(key)}{hint}")


def check_value(key: str, value: Any) -> Any:
    """The value converted to the field's kind, or ScenarioError naming key, value and what is allowed."""
    f = field_of(key)
    bad = ScenarioError(f"{key}={clip(value)} is not allowed: expected {f.allowed()}")
    if isinstance(f.kind, tuple):
        text = kafka_text(value).lower() if not isinstance(value, str) else value.lower()
        if text not in f.kind:
            raise bad
        return text
    if f.kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise bad
    if f.kind is str:
        if isinstance(value, (dict, list)):
            raise bad
        return str(value)
    if isinstance(value, bool) or isinstance(value, (dict, list)) or value is None:
        raise bad
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        raise bad from None
    if not math.isfinite(number):            # NaN passes every comparison, and infinity every upper bound
        raise bad
    if f.kind is int:
        if not number.is_integer():
            raise bad
        number = int(number)
    if (f.low is not None and number < f.low) or (f.high is not None and number > f.high):
        raise bad
    return number
