"""Scenario files: one validated, frozen description of producers, workload, topic, cluster and hardware.

A scenario file is YAML. Nested mappings are flattened with dots, so `producer: {batch.size: 65536}` and
`producer.batch.size: 65536` are the same key, and `--set producer.batch.size=65536` overrides it. Every key is
checked against the field table below; a bad key or value raises ScenarioError with one line naming the key, the
value and what is allowed.
"""
from __future__ import annotations

import math

import dataclasses
import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kafkasim.model import clients
from kafkasim.model.fields import Field, clip, fmt as _fmt, read_mapping
from kafkasim.model.hardware import Hardware, HARDWARE_FIELDS, PER_BROKER, load_profile, per_broker


class ScenarioError(ValueError):
    """Bad scenario input; the message is one line naming the key, the value and what is allowed."""


# ---------------------------------------------------------------------------------------------------------------
# The field table. Each entry: flattened key -> Field. Producer and broker keys are Kafka's property names.

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

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
    "cluster.brokers": Field(int, 1, "Brokers in the cluster.", 1, 1000),
    "cluster.offline_brokers": Field(int, 0, "Brokers of the cluster that are down (the highest ids): the topic "
                                     "was created with all of them, and each partition they led is led by its "
                                     "next in-sync replica, as after a controlled shutdown.", 0, 999),
    "cluster.background_bytes": Field(int, 1024, "Bytes per second each background partition receives, in one "
                                      "produce request a second.", 0, 10**9),
    "cluster.background_partitions": Field(int, 0, "Other partitions per broker, each with a light load, that "
                                           "cost the broker per-partition overhead.", 0, 10**6),
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
}
FIELDS.update({"hardware." + k: f for k, f in HARDWARE_FIELDS.items()})
# The codecs with a level, and each level's key (KIP-390); at their defaults they are left out of the properties a
# client is given (older clients and kafka-python do not know them).
LEVEL_KEYS = {codec: f"producer.compression.{codec}.level" for codec in ("gzip", "lz4", "zstd")}

SECTIONS = sorted({k.split(".")[0] for k in FIELDS})


# ---------------------------------------------------------------------------------------------------------------
# The frozen scenario object.

@dataclass(frozen=True)
class ClientConfig:
    library: str
    version: str

    @property
    def version_tuple(self) -> tuple[int, int]:
        major, minor = (self.version.split(".") + ["0"])[:2]
        return int(major), int(minor)


@dataclass(frozen=True)
class ProducerConfig:
    acks: str                     # "0", "1" or "all"
    batch_size: int
    linger_ms: float
    compression_type: str
    max_in_flight: int
    buffer_memory: int            # 0 = unbounded (kafka-python ≥ 2.1.5)
    max_block_ms: float
    max_request_size: int
    send_buffer_bytes: int
    enable_idempotence: bool
    adaptive_partitioning: bool
    availability_timeout_ms: float
    ignore_keys: bool
    request_timeout_ms: float
    delivery_timeout_ms: float
    retries: int


@dataclass(frozen=True)
class WorkloadConfig:
    records: int
    seconds: float
    warmup_records: int
    throughput: float
    record_size: int
    record_size_max: int
    key_size: int
    keys: int
    payload: str
    payload_file: str
    partition_choice: str


@dataclass(frozen=True)
class TopicConfig:
    name: str
    partitions: int
    replication_factor: int
    min_insync_replicas: int


@dataclass(frozen=True)
class BrokerConfig:
    num_network_threads: int
    num_io_threads: int
    queued_max_requests: int
    compression_type: str
    num_replica_fetchers: int
    replica_fetch_wait_max_ms: float
    replica_fetch_min_bytes: int
    replica_fetch_max_bytes: int
    group_initial_rebalance_delay_ms: float


@dataclass(frozen=True)
class ClusterConfig:
    brokers: int
    offline_brokers: int
    background_partitions: int
    background_bytes: int
    broker: BrokerConfig


@dataclass(frozen=True)
class ConsumerConfig:
    auto_offset_reset: str
    fetch_min_bytes: int
    fetch_max_wait_ms: float
    max_partition_fetch_bytes: int
    fetch_max_bytes: int
    max_poll_records: int
    partition_assignment_strategy: str


@dataclass(frozen=True)
class ConsumersConfig:
    groups: int
    instances: int
    prefilled_records: int
    app_record_us: float
    start: str = "with-producers"


@dataclass(frozen=True)
class NetworkConfig:
    rtt_ms: float
    bandwidth_mbit: float
    proxy: bool = False


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    seed: int
    client: ClientConfig
    producers: int
    threads: int
    producer: ProducerConfig
    workload: WorkloadConfig
    topic: TopicConfig
    cluster: ClusterConfig
    network: NetworkConfig
    hardware: Hardware
    consumers: ConsumersConfig
    consumer: ConsumerConfig
    max_sim_seconds: float
    max_chunk: int
    values: tuple = field(repr=False, compare=False, default=())   # the resolved flat (key, value) pairs
    given: tuple = field(repr=False, compare=False, default=())    # the flat pairs it was made from (replace())

    def flat(self) -> dict[str, Any]:
        """The resolved scenario as flat Kafka-named keys (what `--set` takes and JSON output carries)."""
        return dict(self.values)

    def producer_properties(self) -> dict[str, str]:
        """The producer's Kafka properties with client defaults resolved, as a client config file would hold them."""
        out = {}
        for key, value in self.values:
            if key.startswith("producer."):
                if key == "producer.buffer.memory" and value == 0:
                    continue  # unbounded: a client that has a bound keeps its own default
                if key in LEVEL_KEYS.values() and value == FIELDS[key].default:
                    continue
                out[key[len("producer."):]] = _kafka_text(value)
        return out

    def not_modelled(self) -> list[str]:
        """A line for each setting given away from its default that the model leaves out (NOT_MODELLED): the
        prediction is the same whatever its value."""
        given, flat = dict(self.given), self.flat()
        defaults = clients.producer_defaults(self.client.library, self.client.version)
        out = []
        for key, why in NOT_MODELLED.items():
            default = FIELDS[key].default
            if default is None:
                default = defaults.get(key.removeprefix("producer."))
            if key in given and flat[key] != default:
                out.append(f"{key}={_kafka_text(flat[key])} is not modelled ({why}): the prediction is the same "
                           f"for any value")
        return out

    def shortened(self, records: int) -> "Scenario":
        """The scenario with `records` records per producer (fewer than its own) and its warm-up shortened in
        proportion, so the warm-up stays the same part of the run: the one rule for a quicker, shorter run."""
        w = self.workload
        return self.replace(**{"workload.records": records,
                               "workload.warmup_records": w.warmup_records * records // max(1, w.records)})

    def replace(self, **overrides: Any) -> "Scenario":
        """A new scenario with flat keys overridden, e.g. replace(**{"producer.batch.size": 65536}). What was
        resolved from the keys given (a client version's defaults, a hardware profile's values) is resolved again:
        replace(**{"hardware.profile": "local-2core-epyc"}) takes that profile's costs."""
        return from_flat({**dict(self.given), **overrides}, source=f"scenario {self.name}")


# Settings the model accepts (a pasted client or broker config keeps working) but leaves out, and why.
NOT_MODELLED = {
    "producer.retries": "the model has no failed requests to retry",
    "producer.partitioner.availability.timeout.ms": "the model has no unavailable partition leaders",
    "cluster.broker.queued.max.requests": "the model's request queue never blocks the network threads",
    "cluster.broker.replica.fetch.min.bytes": "a follower fetch returns with any new data",
}


def _kafka_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


# ---------------------------------------------------------------------------------------------------------------
# Loading.

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


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    """Read a scenario file and apply `key=value` overrides."""
    path = Path(path)
    if not path.is_file():
        raise ScenarioError(f"scenario file {str(path)!r} does not exist")
    try:
        tree = read_mapping(path, str(path), "a scenario file must be a mapping of sections (producer:, workload:, ...)")
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    raw = flatten(tree)
    raw.update(parse_overrides(overrides))
    return from_flat(raw, source=str(path), base_dir=path.parent)


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
        text = _kafka_text(value).lower() if not isinstance(value, str) else value.lower()
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


def resolve_hardware(inline: dict[str, Any], library: str) -> tuple[Hardware, dict[str, Any]]:
    """Field defaults < named profile < the profile's section for this client library < inline scenario values."""
    name = inline.get("profile", HARDWARE_FIELDS["profile"].default)
    profile = load_profile(name)
    clients = profile.pop("clients", {}) or {}
    merged = {k: f.default for k, f in HARDWARE_FIELDS.items()}
    layers = [flatten(profile.get("hardware", profile)), flatten(clients.get(library, {})), inline]
    for layer in layers:
        for key, value in layer.items():
            if key.split(".")[0] in ("name", "description", "provenance", "uncertainty"):
                continue
            full = "hardware." + key
            if full not in FIELDS and not per_broker(key):
                raise ValueError(f"unknown key {full!r} in hardware profile {name!r}")
            merged[key] = check_value(full, value)
    merged["profile"] = name
    return Hardware(name, tuple(sorted(merged.items()))), merged


def from_flat(raw: dict[str, Any], source: str = "scenario", base_dir: Path | None = None) -> Scenario:
    """Validate flat keys, fill defaults (the client version's for producer properties) and freeze."""
    values: dict[str, Any] = {}
    for key, value in raw.items():
        check_key(key)
        if value is not None:
            values[key] = check_value(key, value)
    given = dict(values)
    for key, f in FIELDS.items():
        if key not in values and f.default is not None and not key.startswith("hardware."):
            values[key] = f.default
    library, version = values["client.library"], values["client.version"]
    try:
        defaults = clients.producer_defaults(library, version)
    except ValueError as exc:
        raise ScenarioError(f"client.version={clip(version)} is not allowed: {exc}") from None
    idempotence_set = "producer.enable.idempotence" in values
    for prop, default in defaults.items():
        values.setdefault("producer." + prop, default)
    if values["producer.acks"] == "-1":
        values["producer.acks"] = "all"
    if not idempotence_set and (values["producer.acks"] != "all"
                                or values["producer.max.in.flight.requests.per.connection"] > 5):
        # ProducerConfig: idempotence that is only a default gives way to conflicting settings silently.
        values["producer.enable.idempotence"] = False
    hardware_raw = {k[len("hardware."):]: v for k, v in values.items() if k.startswith("hardware.")}
    try:
        hardware, hardware_values = resolve_hardware(hardware_raw, library)
    except ValueError as exc:
        raise ScenarioError(str(exc)) from None
    values.update({"hardware." + k: v for k, v in hardware_values.items()})
    if values["workload.payload"] == "file":
        sample = Path(values["workload.payload_file"])
        if base_dir is not None and not sample.is_absolute():
            sample = base_dir / sample
        if not sample.is_file():
            raise ScenarioError(f"workload.payload_file={values['workload.payload_file']!r}: no such file "
                                f"(needed by workload.payload: file)")
        values["workload.payload_file"] = given["workload.payload_file"] = str(sample)
    scenario = _build(values, hardware, given)
    _cross_check(scenario)
    return scenario


def _build(v: dict[str, Any], hardware: Hardware, given: dict[str, Any]) -> Scenario:
    def section(cls: type, prefix: str, names: dict[str, str] | None = None) -> Any:
        names = names or {}
        kwargs = {}
        for f in dataclasses.fields(cls):
            kafka = names.get(f.name, f.name.replace("_", "."))
            key = f"{prefix}.{kafka}"
            kwargs[f.name] = v[key] if key in v else v[f"{prefix}.{f.name}"]
        return cls(**kwargs)

    producer = section(ProducerConfig, "producer", {
        "max_in_flight": "max.in.flight.requests.per.connection",
        "adaptive_partitioning": "partitioner.adaptive.partitioning.enable",
        "availability_timeout_ms": "partitioner.availability.timeout.ms",
        "ignore_keys": "partitioner.ignore.keys",
    })
    return Scenario(
        name=v["name"], description=v["description"], seed=v["seed"],
        client=ClientConfig(v["client.library"], v["client.version"]),
        producers=v["producers"], threads=v["threads"],
        producer=producer,
        workload=section(WorkloadConfig, "workload"),
        topic=section(TopicConfig, "topic", {"min_insync_replicas": "min.insync.replicas",
                                       "replication_factor": "replication.factor"}),
        cluster=ClusterConfig(v["cluster.brokers"], v["cluster.offline_brokers"], v["cluster.background_partitions"],
                              v["cluster.background_bytes"], section(BrokerConfig, "cluster.broker")),
        network=NetworkConfig(v["network.rtt_ms"], v["network.bandwidth_mbit"], v["network.proxy"]),
        hardware=hardware,
        consumers=ConsumersConfig(v["consumers.groups"], v["consumers.instances"], v["consumers.prefilled_records"],
                                  v["consumers.app_record_us"], v["consumers.start"]),
        consumer=section(ConsumerConfig, "consumer"),
        max_sim_seconds=v["model.max_sim_seconds"],
        max_chunk=v["model.max_chunk"],
        values=tuple(sorted(v.items())),
        given=tuple(sorted(given.items())),
    )


def _cross_check(s: Scenario) -> None:
    """Kafka's own cross-checks (ProducerConfig) plus the ones the model needs."""
    p = s.producer
    checks: list[tuple[bool, str]] = [
        (p.delivery_timeout_ms >= p.linger_ms + p.request_timeout_ms,
         f"producer.delivery.timeout.ms={_fmt(p.delivery_timeout_ms)} must be ≥ linger.ms + request.timeout.ms "
         f"= {_fmt(p.linger_ms + p.request_timeout_ms)}"),
        (not p.enable_idempotence or p.acks == "all",
         f"producer.enable.idempotence=true needs acks=all, not acks={p.acks}"),
        (not p.enable_idempotence or p.max_in_flight <= 5,
         f"producer.enable.idempotence=true needs max.in.flight.requests.per.connection ≤ 5, "
         f"not {p.max_in_flight}"),
        (s.producers > 0 or s.consumers.groups > 0,
         "producers=0 needs consumers.groups > 0: a run with neither does nothing"),
        (s.producers > 0 or s.consumers.prefilled_records > 0,
         "producers=0 needs consumers.prefilled_records > 0: the consumers would have nothing to read"),
        (s.workload.records > 0 or s.workload.seconds > 0,
         "workload.records=0 needs workload.seconds > 0: the run must end somewhere"),
        (s.workload.warmup_records < s.workload.records or s.workload.records == 0,
         f"workload.warmup_records={s.workload.warmup_records} must be less than workload.records="
         f"{s.workload.records}"),
        (s.topic.replication_factor <= s.cluster.brokers,
         f"topic.replication.factor={s.topic.replication_factor} needs at least that many brokers, "
         f"not cluster.brokers={s.cluster.brokers}"),
        (s.cluster.offline_brokers < s.topic.replication_factor,
         f"cluster.offline_brokers={s.cluster.offline_brokers} must be less than topic.replication.factor="
         f"{s.topic.replication_factor}: a partition whose replicas are all down has no leader"),
        (p.acks != "all" or s.topic.replication_factor - s.cluster.offline_brokers >= s.topic.min_insync_replicas,
         f"cluster.offline_brokers={s.cluster.offline_brokers} can leave a partition of topic.replication.factor="
         f"{s.topic.replication_factor} with {s.topic.replication_factor - s.cluster.offline_brokers} in-sync "
         f"replicas, fewer than topic.min.insync.replicas={s.topic.min_insync_replicas}: acks=all would fail "
         f"with NOT_ENOUGH_REPLICAS"),
        (s.topic.min_insync_replicas <= s.topic.replication_factor,
         f"topic.min.insync.replicas={s.topic.min_insync_replicas} must be ≤ topic.replication.factor="
         f"{s.topic.replication_factor} or acks=all can never succeed"),
        (s.workload.record_size <= p.max_request_size,
         f"workload.record_size={s.workload.record_size} exceeds producer.max.request.size={p.max_request_size}: "
         f"every send() would fail with RecordTooLargeException"),
        (s.workload.record_size_max == 0 or s.workload.record_size < s.workload.record_size_max < 2 * s.workload.record_size,
         f"workload.record_size_max={s.workload.record_size_max} must be 0 or between record_size and "
         f"2 × record_size"),
        (s.workload.partition_choice != "per-thread" or s.topic.partitions >= s.threads,
         f"workload.partition_choice=per-thread needs topic.partitions ≥ threads, not "
         f"{s.topic.partitions} < {s.threads}"),
        (p.buffer_memory == 0 or p.buffer_memory >= s.workload.record_size,
         f"producer.buffer.memory={p.buffer_memory} is smaller than one record ({s.workload.record_size} B)"),
    ]
    flat, client = s.flat(), s.client
    too_old = client.library != "java" or clients.major_minor(client.version) < (3, 8)
    for key in LEVEL_KEYS.values():
        checks.append((not too_old or flat[key] == FIELDS[key].default,
                       f"{key}={flat[key]} needs the Java client ≥ 3.8 (KIP-390), not {client.library} "
                       f"{client.version}"))
    checks.append((flat[LEVEL_KEYS["gzip"]] != 0,
                   f"{LEVEL_KEYS['gzip']}=0 is not allowed: -1 (zlib's default) or 1 … 9"))
    for key in flat:
        own = per_broker(key.removeprefix("hardware.")) if key.startswith("hardware.brokers.") else None
        checks.append((own is None or own[0] < s.cluster.brokers,
                       f"{key} names broker {own and own[0]}, but cluster.brokers={s.cluster.brokers} numbers them "
                       f"0 … {s.cluster.brokers - 1}"))
    for ok, message in checks:
        if not ok:
            raise ScenarioError(message)

