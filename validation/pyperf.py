"""kafka-producer-perf-test for Python clients (kafka-python 3.x, confluent-kafka), with the Java tool's semantics.

Run as a subprocess (`python -m kafkasim.validation.pyperf ...`) so a hung client can be timed out. It takes the
Java tool's flags and prints the Java tool's lines (window, total, steady state, and a `--print-metrics` table), so
one parser reads both. What it copies from ProducerPerformance.java:
- one sending thread; latency = callback time − the time taken just before send(), in whole ms;
- a window line every --reporting-interval ms, from the completion callbacks;
- percentiles from at most 500000 samples, taken every (n / 500000)-th completion, at sorted[(int)(p·count)];
- ThroughputThrottler: after each send, if records/elapsed exceeds --throughput, sleep off a deficit of
  1/throughput per record once it reaches 2 ms;
- --record-size payloads: fresh random upper-case letters per record.
Metrics: kafka-python's record-queue-time-* are in seconds; they are converted to Kafka's ms.
"""
from __future__ import annotations

import argparse
import random
import sys
import threading
import time

from kafkasim.validation.properties import read_properties

MAX_SAMPLES = 500_000
MIN_SLEEP_NS = 2_000_000
CLIENT_ID = "perf-producer-client"
# kafka-python metrics that it keeps in seconds where Kafka's Java client uses ms.
SECONDS_METRICS = {"record-queue-time-avg", "record-queue-time-max"}
_LETTERS = bytes(65 + (b % 26) for b in range(256))  # byte -> 'A'..'Z' (a 22/256 tilt to A..V; harmless)


def now_ms() -> int:
    return time.time_ns() // 1_000_000  # System.currentTimeMillis()


class Stats:
    """ProducerPerformance.Stats."""

    def __init__(self, num_records: int, reporting_interval_ms: int, steady: bool = False):
        self.start = self.window_start = now_ms()
        self.sampling = max(1, num_records // min(max(num_records, 1), MAX_SAMPLES))
        self.latencies: list[int] = []
        self.reporting_interval = reporting_interval_ms
        self.steady = steady
        self.iteration = self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_total_latency = self.window_max_latency = 0

    def record(self, latency: int, nbytes: int, when: int) -> None:
        self.count += 1
        self.bytes += nbytes
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += nbytes
        self.window_total_latency += latency
        self.window_max_latency = max(self.window_max_latency, latency)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency)
        self.iteration += 1
        if when - self.window_start >= self.reporting_interval and not self.steady:
            self.print_window(when)
            self.window_start, self.window_count, self.window_bytes = when, 0, 0
            self.window_total_latency = self.window_max_latency = 0

    def print_window(self, when: int) -> None:
        elapsed = max(when - self.window_start, 1)
        rate = 1000.0 * self.window_count / elapsed
        mb = 1000.0 * self.window_bytes / elapsed / (1024 * 1024)
        avg = self.window_total_latency / max(self.window_count, 1)
        print(f"{self.window_count} records sent, {rate:.1f} records/sec ({mb:.2f} MB/sec), {avg:.1f} ms avg "
              f"latency, {float(self.window_max_latency):.1f} ms max latency.", flush=True)

    def print_total(self) -> None:
        elapsed = max(now_ms() - self.start, 1)
        rate = 1000.0 * self.count / elapsed
        mb = 1000.0 * self.bytes / elapsed / (1024 * 1024)
        ordered = sorted(self.latencies)
        pct = [ordered[int(p * len(ordered))] if ordered else 0 for p in (0.5, 0.95, 0.99, 0.999)]
        what = "steady state records sent" if self.steady else "records sent"
        print(f"{self.count} {what}, {rate:f} records/sec ({mb:.2f} MB/sec), "
              f"{self.total_latency / max(self.count, 1):.2f} ms avg latency, {float(self.max_latency):.2f} ms max "
              f"latency, {pct[0]} ms 50th, {pct[1]} ms 95th, {pct[2]} ms 99th, {pct[3]} ms 99.9th.", flush=True)


class ThroughputThrottler:
    """org.apache.kafka.tools.ThroughputThrottler."""

    def __init__(self, target: float, start_ms: int):
        self.target, self.start_ms, self.deficit_ns = target, start_ms, 0
        self.sleep_ns = int(1e9 / target) if target > 0 else 0

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target < 0:
            return False
        elapsed_s = (send_start_ms - self.start_ms) / 1000.0
        return elapsed_s > 0 and amount_so_far / elapsed_s > self.target

    def throttle(self) -> None:
        self.deficit_ns += self.sleep_ns
        if self.deficit_ns >= MIN_SLEEP_NS:
            time.sleep(self.deficit_ns / 1e9)
            self.deficit_ns = 0


# ---- clients -------------------------------------------------------------------------------------------------

def _kafka_python_config(props: dict[str, str]) -> tuple[dict, list[str]]:
    """Kafka property names and text values -> kafka-python keyword arguments; returns (config, ignored keys)."""
    from kafka import KafkaProducer
    config, ignored = {}, []
    for key, value in props.items():
        name = key.replace(".", "_")
        if key == "sasl.jaas.config":  # Java's way of giving SASL PLAIN/SCRAM credentials
            import re
            for field, arg in (("username", "sasl_plain_username"), ("password", "sasl_plain_password")):
                m = re.search(rf'{field}="([^"]*)"', value)
                if m:
                    config[arg] = m.group(1)
            continue
        if key == "ssl.truststore.location" and props.get("ssl.truststore.type", "").upper() == "PEM":
            config["ssl_cafile"] = value   # (a JKS or PKCS12 store kafka-python cannot read: left out below)
            continue
        if name not in KafkaProducer.DEFAULT_CONFIG:
            ignored.append(key)  # e.g. buffer.memory (kafka-python 3.x has no bound), partitioner.* (Java only)
            continue
        config[name] = _kafka_python_value(key, value)
    return config, ignored


def _kafka_python_value(key: str, value: str):
    if key == "acks":
        return "all" if value in ("all", "-1") else int(value)
    if key == "compression.type":
        return None if value == "none" else value
    if key == "security.protocol":
        return value.upper()       # (Java takes any case, kafka-python only Kafka's own)
    if key == "send.buffer.bytes" and int(value) < 0:
        return None  # -1 = the OS default, which kafka-python spells None
    if value in ("true", "false"):
        return value == "true"
    try:
        number = float(value)
        return int(number) if number.is_integer() else number
    except ValueError:
        return value


class KafkaPythonClient:
    name = "kafka-python"

    def __init__(self, bootstrap: str, props: dict[str, str]):
        from kafka import KafkaProducer
        import kafka
        self.version = kafka.__version__
        config, ignored = _kafka_python_config(props)
        if ignored:
            print(f"kafka-python has no setting for: {', '.join(sorted(ignored))} (ignored)", file=sys.stderr)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap.split(","), client_id=CLIENT_ID, **config)

    def send(self, topic: str, value: bytes, on_success, on_error) -> None:
        future = self.producer.send(topic, value)
        future.add_callback(on_success)
        future.add_errback(on_error)

    def flush(self) -> None:
        self.producer.flush()

    def close(self) -> None:
        self.producer.close()

    def metrics(self) -> list[tuple[str, str, dict, object]]:
        out = []
        for metric_name, metric in (self.producer.metrics(raw=True) or {}).items():
            value = metric.value()
            if metric_name.name in SECONDS_METRICS and isinstance(value, (int, float)):
                value = value * 1000.0
            group, tags = metric_name.group, dict(metric_name.tags or {})
            # kafka-python puts the topic or node in the group name; Java has it as a tag
            for prefix, tag in (("producer-topic-metrics.", "topic"), ("producer-node-metrics.", "node-id")):
                if group.startswith(prefix):
                    group, tags[tag] = prefix[:-1], group[len(prefix):]
            out.append((group, metric_name.name, tags, value))
        return out


class ConfluentKafkaClient:
    """librdkafka. Its callbacks run inside poll()/flush() on the sending thread, so it polls after every send."""
    name = "confluent-kafka"

    def __init__(self, bootstrap: str, props: dict[str, str]):
        try:
            import confluent_kafka
        except ImportError:
            print("confluent-kafka is not installed (pip install 'kafkasim[live]')", file=sys.stderr)
            raise SystemExit(2)
        self.version = confluent_kafka.__version__
        # librdkafka takes Kafka's property names, except these Java-only ones.
        java_only = {"buffer.memory", "max.block.ms", "max.request.size", "send.buffer.bytes",
                     "partitioner.adaptive.partitioning.enable", "partitioner.availability.timeout.ms",
                     "partitioner.ignore.keys", "sasl.jaas.config"}
        config = {k: v for k, v in props.items() if k not in java_only}
        if "send.buffer.bytes" in props:  # librdkafka's name; its 0 is Java's -1 (the OS default)
            config["socket.send.buffer.bytes"] = str(max(int(props["send.buffer.bytes"]), 0))
        config.update({"bootstrap.servers": bootstrap, "client.id": CLIENT_ID, "statistics.interval.ms": 0})
        self.producer = confluent_kafka.Producer(config)

    def send(self, topic: str, value: bytes, on_success, on_error) -> None:
        def delivered(err, msg):
            (on_error(err) if err is not None else on_success(msg))
        while True:
            try:
                self.producer.produce(topic, value, on_delivery=delivered)
                break
            except BufferError:  # queue.buffering.max.* reached: Java would block in send(); so do we
                self.producer.poll(0.01)
        self.producer.poll(0)

    def flush(self) -> None:
        self.producer.flush()

    def close(self) -> None:
        self.producer.flush()

    def metrics(self) -> list[tuple[str, str, dict, object]]:
        return []  # librdkafka's statistics are JSON with other names; not mapped (yet)


CLIENTS = {"kafka-python": KafkaPythonClient, "confluent-kafka": ConfluentKafkaClient}


# ---- the tool ------------------------------------------------------------------------------------------------

def print_metrics(metrics: list[tuple[str, str, dict, object]]) -> None:
    """ToolsUtils.printMetrics: `group:name:{tags}  : value`, sorted."""
    rows = []
    for group, name, tags, value in metrics:
        tag_text = ", ".join(f"{k}={v}" for k, v in sorted({"client-id": CLIENT_ID, **tags}.items()))
        shown = f"{value:.3f}" if isinstance(value, (int, float)) else str(value)
        rows.append((f"{group}:{name}:{{{tag_text}}}", shown))
    if not rows:
        return
    width = max(len(r[0]) for r in rows) + 2
    print(f"\n{'Metric Name':<{width}}Value")
    for key, shown in sorted(rows):
        print(f"{key:<{width}}: {shown}")


def run(args: argparse.Namespace) -> int:
    props = {}
    if args.command_config:
        props.update(read_properties(args.command_config))
    for item in args.command_property or []:
        key, _, value = item.partition("=")
        props[key] = value
    props.pop("bootstrap.servers", None)
    client = CLIENTS[args.client](args.bootstrap_server, props)
    print(f"# client {client.name} {client.version}", file=sys.stderr, flush=True)

    n, warmup = args.num_records, args.warmup_records
    stats = Stats(n, args.reporting_interval)
    steady: list[Stats] = []  # created when the first steady-state record is sent
    errors = [0]
    lock = threading.Lock()  # confluent-kafka calls back on this thread, kafka-python on its sender thread

    def callbacks(start: int, is_steady: bool):
        def ok(_metadata):
            when = now_ms()
            with lock:
                stats.record(when - start, args.record_size, when)
                if is_steady:
                    steady[0].record(when - start, args.record_size, when)

        def failed(exc):
            with lock:
                errors[0] += 1
                if errors[0] <= 20:
                    print(f"delivery error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return ok, failed

    if warmup:
        print(f"Warmup first {warmup} records. Steady state results will print after the complete test summary.",
              flush=True)
    rng = random.Random()  # like java.util.Random in the Java tool: fast, not cryptographic
    throttler = ThroughputThrottler(args.throughput, now_ms())
    for i in range(n):
        payload = rng.randbytes(args.record_size).translate(_LETTERS)
        if warmup and i == warmup:
            steady.append(Stats(n - warmup, args.reporting_interval, steady=True))
        send_start = now_ms()
        ok, failed = callbacks(send_start, bool(warmup) and i >= warmup)
        client.send(args.topic, payload, ok, failed)
        if throttler.should_throttle(i, send_start):
            throttler.throttle()
    client.flush()
    stats.print_total()
    if steady:
        steady[0].print_total()
    if errors[0]:
        print(f"{errors[0]} delivery errors", file=sys.stderr, flush=True)
    if args.print_metrics:
        print_metrics(client.metrics())
    client.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="kafkasim-pyperf", description=__doc__.splitlines()[0])
    p.add_argument("--client", choices=sorted(CLIENTS), default="kafka-python")
    p.add_argument("--bootstrap-server", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--num-records", type=int, required=True)
    p.add_argument("--record-size", type=int, required=True)
    p.add_argument("--throughput", type=float, required=True)
    p.add_argument("--command-property", nargs="*")
    p.add_argument("--command-config")
    p.add_argument("--print-metrics", action="store_true")
    p.add_argument("--warmup-records", type=int, default=0)
    p.add_argument("--reporting-interval", type=int, default=5000)
    return run(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
