"""The perf-test parser against output recorded from real runs (tests/data/), and kafkasim's Python clone of the
tool against the Java tool's formulas."""
from pathlib import Path

import pytest

from kafkasim.validation import perftest, pyperf
from kafkasim.validation.properties import read_properties, redact, secret_values

DATA = Path(__file__).parent / "data"


def test_java_unthrottled_run():
    """Kafka 4.3.1 ProducerPerformance, 300k × 1 KiB, --print-metrics --reporting-interval 1000."""
    out = perftest.parse((DATA / "perf-test-4.3.1-unthrottled.txt").read_text())
    assert len(out.windows) == 15
    assert out.windows[0] == perftest.Window(1396, 1396.0, 1.36, 173.8, 538.0)
    t = out.total
    assert (t.records, t.records_per_sec, t.mb_per_sec) == (300000, 19882.033269, 19.42)
    assert (t.latency_avg_ms, t.latency_max_ms) == (1387.94, 3115.0)
    assert (t.latency_p50_ms, t.latency_p95_ms, t.latency_p99_ms, t.latency_p999_ms) == (1268, 2675, 2942, 3104)
    assert out.steady_state is None
    m = out.metrics
    assert m["producer-metrics:record-send-total"] == 300000.0
    assert m["producer-metrics:batch-size-avg"] == 15556.003
    assert m["producer-node-metrics:request-latency-avg{node-id=node-1}"] == 3.569
    assert m["producer-node-metrics:request-latency-avg{node-id=node--1}"] is None  # Java printed NaN
    assert m["producer-topic-metrics:record-send-total{topic=t1}"] == 300000.0
    assert m["app-info:version"] == "4.3.1"


def test_java_throttled_run_with_warmup_has_steady_state_line():
    out = perftest.parse((DATA / "perf-test-4.3.1-throttled-warmup.txt").read_text())
    assert out.windows == []  # a 5 s run prints its first window line only after 5 s
    assert out.total.records == 100000 and out.total.latency_p50_ms == 4
    s = out.steady_state
    assert (s.records, s.records_per_sec, s.latency_p999_ms) == (80000, 20986.358867, 337)
    assert out.metrics["producer-metrics:compression-rate-avg"] == pytest.approx(0.999, abs=0.001)


def test_threaded_tool_prints_what_the_parser_reads():
    """validation/ProducerThreads.java, 3 threads, round-robin over 6 partitions: perf-test's lines plus the time
    the threads spent in send()."""
    out = perftest.parse((DATA / "producer-threads-4.3.1-round-robin.txt").read_text())
    assert out.total.records == 300000 and out.total.records_per_sec == 122900.450635
    assert out.worker_latency_us == 16.211
    assert out.windows == [] and out.steady_state is None
    assert out.metrics["producer-metrics:record-send-total"] == 300000.0


def test_kafka_python_clone_prints_what_the_parser_reads():
    """kafkasim.validation.pyperf with kafka-python 3.0.12: same lines, record-queue-time converted to ms."""
    out = perftest.parse((DATA / "pyperf-kafka-python-3.0.12-throttled-gzip.txt").read_text())
    assert len(out.windows) == 3
    assert out.total.records == 30000 and out.steady_state.records == 25000
    assert out.metrics["producer-metrics:record-queue-time-avg"] == 205.423  # ms; kafka-python said 0.205 s
    assert out.metrics["producer-topic-metrics:record-send-rate{topic=t1}"] == 825.834
    assert out.metrics["producer-metrics:compression-rate-avg"] == 0.635


def test_stats_percentiles_follow_the_java_tool():
    """sorted samples at (int)(p · n); every (n / 500000)-th completion is sampled."""
    stats = pyperf.Stats(num_records=1000, reporting_interval_ms=10**9)
    for latency in range(1000, 0, -1):
        stats.record(latency, 100, stats.start)
    ordered = sorted(stats.latencies)
    assert [ordered[int(p * len(ordered))] for p in (0.5, 0.95, 0.99, 0.999)] == [501, 951, 991, 1000]
    assert pyperf.Stats(2_000_000, 5000).sampling == 4


def test_throttler_waits_only_when_ahead_of_target():
    t = pyperf.ThroughputThrottler(1000, start_ms=0)
    assert not t.should_throttle(999, 1000)  # 999 records in 1 s: behind 1000/s
    assert t.should_throttle(1001, 1000)
    assert not pyperf.ThroughputThrottler(-1, 0).should_throttle(10**9, 1)


def test_kafka_python_config_mapping():
    config, ignored = pyperf._kafka_python_config({"acks": "1", "linger.ms": "10", "compression.type": "none",
                                                   "enable.idempotence": "false", "buffer.memory": "33554432",
                                                   "send.buffer.bytes": "-1"})
    assert config == {"acks": 1, "linger_ms": 10, "compression_type": None, "enable_idempotence": False,
                      "send_buffer_bytes": None}
    assert ignored == ["buffer.memory"]


def test_kafka_python_takes_tls_from_kafkas_properties():
    """security.protocol in any case, as Java takes it; a PEM truststore as its CA file (a JKS one it cannot read)."""
    config, ignored = pyperf._kafka_python_config({"security.protocol": "ssl", "ssl.truststore.type": "PEM",
                                                   "ssl.truststore.location": "/c/ca.pem"})
    assert config == {"security_protocol": "SSL", "ssl_cafile": "/c/ca.pem"} and ignored == ["ssl.truststore.type"]
    config, ignored = pyperf._kafka_python_config({"ssl.truststore.location": "/c/trust.jks"})
    assert config == {} and ignored == ["ssl.truststore.location"]


def test_command_config_secrets_are_redacted(tmp_path):
    path = tmp_path / "client.properties"
    path.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                    'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
                    'username="alice" password="s3cr3t-pw";\nssl.truststore.password=changeit\n')
    props = read_properties(path)
    assert props["security.protocol"] == "SASL_SSL"
    text = redact("connecting as alice with s3cr3t-pw and changeit", secret_values(props))
    assert "s3cr3t-pw" not in text and "changeit" not in text and "alice" not in text
