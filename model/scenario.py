"""Scenario files: one validated, frozen description of producers, workload, topic, cluster and hardware.

A scenario file is YAML. Nested mappings are flattened with dots, so `producer: {batch.size: 65536}` and
`producer.batch.size: 65536` are the same key, and `--set producer.batch.size=65536` overrides it. Every key is
checked against the field table (scenario_fields.py); a bad key or value raises ScenarioError with one line naming the key, the
value and what is allowed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


from kafkasim.model import clients
from kafkasim.model.errors import ScenarioError
from kafkasim.model.fields import clip, fmt as _fmt, read_mapping
from kafkasim.model.hardware import Hardware, HARDWARE_FIELDS, load_profile, per_broker
from kafkasim.model.scenario_fields import (FIELDS, LEVEL_KEYS, check_key, check_value, flatten, given_to_client,
                                            kafka_text, parse_overrides)


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
    security_protocol: str = "plaintext"


@dataclass(frozen=True)
class WorkloadConfig:
    records: int
    seconds: float
    warmup_records: int
    throughput: float
    reporting_interval_ms: int
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
    security_inter_broker_protocol: str = "plaintext"


@dataclass(frozen=True)
class ClusterConfig:
    brokers: int
    offline_brokers: int
    background_partitions: int
    background_bytes: int
    client_hosts: int
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
    security_protocol: str = "plaintext"


@dataclass(frozen=True)
class ConsumersConfig:
    groups: int
    instances: int
    prefilled_records: int
    app_record_us: float
    start: str = "with-producers"
    messages: int = 0


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
    fast_forward: bool
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
                if not given_to_client(key, value):
                    continue
                out[key[len("producer."):]] = kafka_text(value)
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
                out.append(f"{key}={kafka_text(flat[key])} is not modelled ({why}): the prediction is the same "
                           f"for any value")
        return out

    @property
    def length(self) -> int:
        """The records a run goes over: each producer's, or with no producers those the consumers find in the topic
        (what `shortened` shortens)."""
        return self.workload.records if self.producers else self.consumers.prefilled_records

    def shortened(self, records: int) -> "Scenario":
        """The scenario with `records` records per producer (fewer than its own) and its warm-up shortened in
        proportion, so the warm-up stays the same part of the run: the one rule for a quicker, shorter run. With no
        producers, the records the consumers find in the topic."""
        w = self.workload
        if not self.producers:
            c = self.consumers
            return self.replace(**{"consumers.prefilled_records": records,
                                   "consumers.messages": c.messages * records // max(1, c.prefilled_records)})
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
    "cluster.broker.queued.max.requests": "the model's request queue never blocks the network threads",
}




# ---------------------------------------------------------------------------------------------------------------
# Loading.


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
                              v["cluster.background_bytes"], v["cluster.client_hosts"],
                              section(BrokerConfig, "cluster.broker")),
        network=NetworkConfig(v["network.rtt_ms"], v["network.bandwidth_mbit"], v["network.proxy"]),
        hardware=hardware,
        consumers=ConsumersConfig(v["consumers.groups"], v["consumers.instances"], v["consumers.prefilled_records"],
                                  v["consumers.app_record_us"], v["consumers.start"], v["consumers.messages"]),
        consumer=section(ConsumerConfig, "consumer"),
        max_sim_seconds=v["model.max_sim_seconds"],
        max_chunk=v["model.max_chunk"],
        fast_forward=v["model.fast_forward"],
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
        (not s.hardware["client_cpu_limit"] or s.hardware["colocated_cores"] or not s.hardware["background_cores"],
         f"hardware.client_cpu_limit={s.hardware['client_cpu_limit']} on the clients' own hosts needs "
         f"hardware.background_cores=0 (others' load there would spend its quota), or the clients beside the "
         f"brokers (hardware.colocated_cores > 0)"),
        (s.cluster.client_hosts == 0 or s.hardware["colocated_cores"] == 0,
         f"cluster.client_hosts={s.cluster.client_hosts} needs clients apart from the brokers, not "
         f"hardware.colocated_cores={s.hardware['colocated_cores']} (every process on one host)"),
        (s.producers > 0 or s.consumers.groups > 0,
         "producers=0 needs consumers.groups > 0: a run with neither does nothing"),
        (s.producers > 0 or s.consumers.prefilled_records > 0,
         "producers=0 needs consumers.prefilled_records > 0: the consumers would have nothing to read"),
        (s.producers > 0 or s.consumers.messages <= s.consumers.prefilled_records // s.consumers.instances,
         f"consumers.messages={s.consumers.messages} is more than an instance's share of the "
         f"{s.consumers.prefilled_records} prefilled records with no producers; allowed: 0 to "
         f"{s.consumers.prefilled_records // s.consumers.instances}"),
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

