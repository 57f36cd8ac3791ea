"""Scenario files: every key and value is checked, Kafka's own cross-checks apply, client versions bring their own
defaults, `--set` overrides any field, and a bad input is one line naming the key, the value and what is allowed."""
import dataclasses

import pytest

from kafkasim.model import scenario as scenario_module
from kafkasim.model.hardware import HARDWARE_FIELDS
from kafkasim.model.scenario import ScenarioError, from_flat, load_scenario
from kafkasim.model.scenario_fields import FIELDS, field_of, parse_overrides

from conftest import EXAMPLES


def error_of(flat: dict) -> str:
    with pytest.raises(ScenarioError) as exc:
        from_flat(flat)
    message = str(exc.value)
    assert "\n" not in message, message
    return message


# --- unknown keys ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, suggestion", [
    ("producer.batch.sise", "producer.batch.size"),
    ("producr.acks", "producer.acks"),
    ("batch.size", "producer.batch.size"),                      # a bare Kafka property: its section is suggested
    ("linger.ms", "producer.linger.ms"),
    ("topic.partition", "topic.partitions"),
    ("hardware.broker.servce_cv", "hardware.broker.service_cv"),
    ("cluster.broker.num.io.thread", "cluster.broker.num.io.threads"),
])
def test_unknown_key_suggests_the_nearest(key, suggestion):
    message = error_of({key: 1})
    assert message == f"unknown key {key!r}; did you mean {suggestion!r}?"


def test_unknown_key_without_a_near_one_lists_the_sections():
    message = error_of({"zzzz": 1})
    assert message.startswith("unknown key 'zzzz'")
    for section in ("producer", "workload", "topic", "cluster", "hardware"):
        assert section in message


# --- bad values -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("key, value, allowed", [
    ("producer.batch.size", -1, "an integer from 0 to 2147483647"),
    ("producer.batch.size", "big", "an integer"),
    ("producer.batch.size", 1.5, "an integer"),
    ("producer.acks", 2, "one of 0, 1, all, -1"),
    ("producer.acks", "leader", "one of 0, 1, all, -1"),
    ("producer.compression.type", "brotli", "one of none, gzip, snappy, lz4, zstd"),
    ("producer.enable.idempotence", "yes", "true or false"),
    ("producer.linger.ms", -5, "a number from 0"),
    ("workload.throughput", -2, "a number from -1"),
    ("workload.payload", "zeros", "one of random-letters, random-bytes, text, file"),
    ("topic.partitions", 0, "an integer from 1"),
    ("threads", [1, 2], "an integer"),
    ("client.library", "go", "one of java, kafka-python"),
    ("hardware.rtt_ms", -1, "a number from 0"),
    ("hardware.broker.service_cv", 11, "a number from 0 to 10"),
    ("cluster.broker.compression.type", "brotli", "one of producer, uncompressed"),
])
def test_bad_value_names_key_value_and_what_is_allowed(key, value, allowed):
    message = error_of({key: value})
    assert message.startswith(f"{key}={value!r} is not allowed: expected "), message
    assert allowed in message


def test_bad_client_version_lists_the_modelled_versions():
    message = error_of({"client.version": "1.0"})
    assert message.startswith("client.version='1.0' is not allowed")
    assert "2.2" in message and "4.3" in message


def test_bad_profile_names_the_known_profiles():
    message = error_of({"hardware.profile": "no-such-profile"})
    assert "hardware.profile='no-such-profile'" in message and "generic-server" in message


def test_profile_file_with_bad_yaml_is_one_line(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("hardware: {rtt_ms: [1, \n")
    message = error_of({"hardware.profile": str(bad)})
    assert str(bad) in message or "broken.yaml" in message


def test_profile_file_with_unknown_key_names_it(tmp_path):
    bad = tmp_path / "typo.yaml"
    bad.write_text("hardware: {rtt_mss: 1}\n")
    message = error_of({"hardware.profile": str(bad)})
    assert "hardware.rtt_mss" in message


# --- Kafka's own cross-checks ---------------------------------------------------------------------------------

def test_delivery_timeout_must_cover_linger_plus_request_timeout():
    base = {"producer.linger.ms": 10, "producer.request.timeout.ms": 995}
    message = error_of({**base, "producer.delivery.timeout.ms": 1000})
    assert "producer.delivery.timeout.ms=1000" in message and "1005" in message
    # exactly equal is allowed
    s = from_flat({**base, "producer.delivery.timeout.ms": 1005})
    assert s.producer.delivery_timeout_ms == 1005


def test_idempotence_needs_acks_all():
    message = error_of({"producer.enable.idempotence": True, "producer.acks": "1"})
    assert "producer.enable.idempotence=true" in message and "acks=all" in message and "acks=1" in message


def test_idempotence_needs_at_most_five_in_flight():
    message = error_of({"producer.enable.idempotence": True, "producer.acks": "all",
                        "producer.max.in.flight.requests.per.connection": 6})
    assert "max.in.flight.requests.per.connection ≤ 5" in message and "6" in message
    ok = from_flat({"producer.enable.idempotence": True, "producer.acks": "all",
                    "producer.max.in.flight.requests.per.connection": 5})
    assert ok.producer.max_in_flight == 5


@pytest.mark.parametrize("flat", [
    {"client.version": "4.3", "producer.acks": "1"},
    {"client.version": "3.9", "producer.max.in.flight.requests.per.connection": 10},
])
def test_default_idempotence_gives_way_to_conflicting_settings(flat):
    """Java ≥ 3.0: idempotence that is only the default is switched off by acks≠all or max.in.flight > 5
    (ProducerConfig); set explicitly, the same settings are an error (above)."""
    s = from_flat(flat)
    assert s.producer.enable_idempotence is False


@pytest.mark.parametrize("flat, words", [
    ({"topic.replication.factor": 3, "cluster.brokers": 2}, ["topic.replication.factor=3", "cluster.brokers=2"]),
    ({"topic.replication.factor": 2, "cluster.brokers": 2, "topic.min.insync.replicas": 3},
     ["topic.min.insync.replicas=3"]),
    ({"topic.replication.factor": 2, "cluster.brokers": 3, "cluster.offline_brokers": 2},
     ["cluster.offline_brokers=2", "topic.replication.factor=2", "no leader"]),
    ({"topic.replication.factor": 3, "cluster.brokers": 3, "topic.min.insync.replicas": 2, "producer.acks": "all",
      "cluster.offline_brokers": 2}, ["cluster.offline_brokers=2", "topic.min.insync.replicas=2", "NOT_ENOUGH_REPLICAS"]),
    ({"workload.records": 0}, ["workload.records=0", "workload.seconds"]),
    ({"workload.records": 100, "workload.warmup_records": 100}, ["workload.warmup_records=100"]),
    ({"workload.record_size": 2000, "producer.max.request.size": 1000}, ["workload.record_size=2000",
                                                                         "producer.max.request.size=1000"]),
    ({"threads": 4, "topic.partitions": 2, "workload.partition_choice": "per-thread"}, ["per-thread"]),
    ({"producer.buffer.memory": 100, "workload.record_size": 1024}, ["producer.buffer.memory=100"]),
])
def test_model_cross_checks(flat, words):
    message = error_of(flat)
    for word in words:
        assert word in message


# --- client defaults ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version, linger, acks, idempotence", [
    ("4.3", 5.0, "all", True),
    ("4.0", 5.0, "all", True),
    ("3.9", 0.0, "all", True),
    ("3.0", 0.0, "all", True),
    ("2.8", 0.0, "1", False),
    ("2.4", 0.0, "1", False),
    ("2.2", 0.0, "1", False),
])
def test_java_defaults_by_version(version, linger, acks, idempotence):
    p = from_flat({"client.version": version}).producer
    assert (p.linger_ms, p.acks, p.enable_idempotence) == (linger, acks, idempotence)
    assert (p.batch_size, p.buffer_memory, p.max_in_flight) == (16384, 33554432, 5)


@pytest.mark.parametrize("flat, words", [
    ({"client.version": "3.7", "producer.compression.type": "zstd", "producer.compression.zstd.level": 9},
     ["producer.compression.zstd.level=9", "Java client ≥ 3.8", "java 3.7"]),
    ({"client.library": "kafka-python", "client.version": "3.0", "producer.compression.gzip.level": 1},
     ["producer.compression.gzip.level=1", "kafka-python"]),
    ({"client.version": "4.3", "producer.compression.gzip.level": 0}, ["gzip.level=0", "-1 (zlib's default) or 1"]),
])
def test_compression_levels_need_a_client_that_has_them(flat, words):
    message = error_of(flat)
    for word in words:
        assert word in message


def test_compression_levels_reach_the_client_only_when_set():
    """At their defaults the level properties stay out of what a client is given (older clients and kafka-python
    do not know them)."""
    default = from_flat({"client.version": "4.3", "producer.compression.type": "zstd"})
    assert default.flat()["producer.compression.zstd.level"] == 3
    assert not any(k.endswith(".level") for k in default.producer_properties())
    set_ = from_flat({"client.version": "3.8", "producer.compression.type": "lz4", "producer.compression.lz4.level": 1})
    assert set_.producer_properties()["compression.lz4.level"] == "1"


def test_kafka_python_defaults():
    s = from_flat({"client.library": "kafka-python", "client.version": "3.0"})
    p = s.producer
    assert p.buffer_memory == 0                  # unbounded accumulator
    assert p.enable_idempotence is True and p.acks == "all"
    assert p.linger_ms == 0.0 and p.batch_size == 16384
    # an unbounded buffer is left out of the properties a real client is given
    assert "buffer.memory" not in s.producer_properties()


def test_explicit_value_beats_the_client_default():
    s = from_flat({"client.version": "4.3", "producer.linger.ms": 0})
    assert s.producer.linger_ms == 0.0
    s = from_flat({"client.version": "2.2", "producer.acks": "all"})
    assert s.producer.acks == "all"


def test_acks_minus_one_means_all():
    assert from_flat({"producer.acks": -1}).producer.acks == "all"


def test_resolved_scenario_carries_every_field():
    flat = from_flat({}).flat()
    assert set(flat) == set(FIELDS)
    assert flat["producer.linger.ms"] == 5.0          # the 4.3 default, resolved
    assert set(k for k in flat if k.startswith("hardware.")) == {"hardware." + k for k in HARDWARE_FIELDS}


def test_profile_values_and_inline_overrides():
    s = from_flat({"hardware.profile": "kontur-2020"})
    assert s.hardware["rtt_ms"] == 0.8 and s.hardware["broker.request_us"] == 1100
    s = from_flat({"hardware.profile": "kontur-2020", "hardware.rtt_ms": 3})
    assert s.hardware["rtt_ms"] == 3.0
    # the profile's per-library section applies to that library only
    java = from_flat({"hardware.profile": "generic-server"})
    python = from_flat({"hardware.profile": "generic-server", "client.library": "kafka-python",
                        "client.version": "3.0"})
    assert python.hardware["worker.record_us"] > 5 * java.hardware["worker.record_us"]


def test_scenario_is_frozen_and_replace_makes_a_new_one():
    s = from_flat({"producer.batch.size": 1000})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.seed = 2
    t = s.replace(**{"producer.batch.size": 2000})
    assert (s.producer.batch_size, t.producer.batch_size) == (1000, 2000)
    with pytest.raises(ScenarioError):
        s.replace(**{"producer.batch.sise": 2000})


# --- files and --set ------------------------------------------------------------------------------------------

def test_nested_and_dotted_keys_are_the_same(tmp_scenario):
    a = load_scenario(tmp_scenario("producer: {batch.size: 65536}\n", "a.yaml"))
    b = load_scenario(tmp_scenario("producer.batch.size: 65536\n", "b.yaml"))
    c = load_scenario(tmp_scenario("producer:\n  batch:\n    size: 65536\n", "c.yaml"))
    assert a.producer.batch_size == b.producer.batch_size == c.producer.batch_size == 65536


def test_set_overrides_any_field(tmp_scenario):
    path = tmp_scenario("producer: {batch.size: 16384, acks: 1, enable.idempotence: false}\n"
                        "workload: {records: 500}\n")
    s = load_scenario(path, ["producer.batch.size=65536", "producer.acks=all", "workload.throughput=-1",
                             "hardware.rtt_ms=2.5", "producer.compression.type=lz4", "topic.partitions=6"])
    assert s.producer.batch_size == 65536 and s.producer.acks == "all"
    assert s.workload.throughput == -1 and s.hardware["rtt_ms"] == 2.5
    assert s.producer.compression_type == "lz4" and s.topic.partitions == 6
    assert s.workload.records == 500                   # untouched keys stay


@pytest.mark.parametrize("override, words", [
    ("producer.batch.size", ["--set", "key=value"]),
    ("producer.batch.sise=1", ["unknown key 'producer.batch.sise'", "producer.batch.size"]),
    ("producer.batch.size=-3", ["producer.batch.size=-3", "an integer from 0"]),
    ("producer.compression.type=brotli", ["brotli", "one of none"]),
])
def test_bad_set_is_one_line(tmp_scenario, override, words):
    path = tmp_scenario("workload: {records: 500}\n")
    with pytest.raises(ScenarioError) as exc:
        load_scenario(path, [override])
    message = str(exc.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_set_values_are_parsed_as_yaml():
    assert parse_overrides(["seed=1", "producer.enable.idempotence=true", "producer.compression.type=lz4",
                            "workload.throughput=2.5", "name="]) == {
        "seed": 1, "producer.enable.idempotence": True, "producer.compression.type": "lz4",
        "workload.throughput": 2.5, "name": ""}


def test_short_keys_resolve_to_their_section_everywhere():
    """--set batch.size=… is the producer's batch.size, as sweep's --vary takes it."""
    assert parse_overrides(["batch.size=32768", "partitions=6"]) == {"producer.batch.size": 32768,
                                                                     "topic.partitions": 6}


@pytest.mark.parametrize("text, words", [
    ("producer: {acks: 1\n", ["not valid YAML", "line"]),
    ("- just\n- a list\n", ["must be a mapping"]),
    ("producer: {batch.size: -1}\n", ["producer.batch.size=-1"]),
    ("producr: {acks: 1}\n", ["unknown key 'producr.acks'", "producer.acks"]),
])
def test_bad_files_are_one_line(tmp_scenario, text, words):
    with pytest.raises(ScenarioError) as exc:
        load_scenario(tmp_scenario(text))
    message = str(exc.value)
    assert "\n" not in message
    for word in words:
        assert word in message


def test_missing_file():
    with pytest.raises(ScenarioError, match="does not exist"):
        load_scenario("/nonexistent/scenario.yaml")


def test_payload_file_must_exist(tmp_scenario):
    with pytest.raises(ScenarioError, match="workload.payload_file"):
        load_scenario(tmp_scenario("workload: {payload: file, payload_file: nothing-here.txt}\n"))


def _examples() -> list[str]:
    """Every example file (snapshots are measured metrics for `kafkasim calibrate`, not scenarios)."""
    return [path.relative_to(EXAMPLES).as_posix() for path in sorted(EXAMPLES.rglob("*.yaml"))
            if "snapshots" not in path.parts]


@pytest.mark.parametrize("path", _examples())
def test_every_example_loads(path):
    s = load_scenario(EXAMPLES / path)
    assert s.workload.records > 0 or s.workload.seconds > 0
    # every field documented and every resolved key known (a broker's own hardware: its key's field)
    assert all(key in FIELDS or field_of(key) is FIELDS["hardware." + key.split(".", 3)[3]] for key in s.flat())


def test_every_field_has_a_doc_and_a_valid_default():
    for key, f in FIELDS.items():
        assert f.doc, key
        if f.default is not None:
            assert scenario_module.check_value(key, f.default) == f.default, key


def test_replace_resolves_a_new_profile_or_client_version_again():
    """replace() starts from the keys the scenario was given: another hardware profile brings its own costs, another
    client version its own defaults (a resolved copy would keep the old ones under the new name)."""
    s = load_scenario(EXAMPLES / "local-1broker.yaml", ["producer.linger.ms=null"])
    epyc = s.replace(**{"hardware.profile": "local-2core-epyc"})
    assert epyc.hardware["sender.request_us"] == load_scenario(
        EXAMPLES / "local-1broker.yaml", ["hardware.profile=local-2core-epyc"]).hardware["sender.request_us"]
    assert epyc.hardware["sender.request_us"] != s.hardware["sender.request_us"]
    assert s.producer.linger_ms == 5.0                                      # Java 4.x's default
    assert s.replace(**{"client.version": "2.4"}).producer.linger_ms == 0.0  # 2.4's
    assert s.replace(**{"producer.batch.size": 65536}).hardware == s.hardware


def test_a_shortened_run_keeps_its_warmup_share():
    """Scenario.shortened is the one rule the app's cap, sweep --records and the band use."""
    s = from_flat({"workload.records": 1_000_000, "workload.warmup_records": 100_000})
    short = s.shortened(30_000)
    assert (short.workload.records, short.workload.warmup_records) == (30_000, 3_000)
    assert s.shortened(7).workload.warmup_records == 0 and short.producer == s.producer
