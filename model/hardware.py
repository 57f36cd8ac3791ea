"""Hardware profiles: the machine's cost parameters the model runs on.

A profile is a YAML file (model/profiles/NAME.yaml, or a path) holding flat keys from HARDWARE_FIELDS, with a
`clients:` section of per-library costs (the Java producer and kafka-python differ ten-fold per record). A scenario
names a profile under `hardware.profile` and may override any key inline (`hardware.rtt_ms: 5`). Times are in
microseconds (us) or nanoseconds per byte (ns), as the keys say.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkasim.model.clients import JAVA_VERSIONS
from kafkasim.model.fields import Field, clip, read_mapping

PROFILE_DIR = Path(__file__).parent / "profiles"
CODECS = ("gzip", "snappy", "lz4", "zstd")
PAYLOADS = ("random-letters", "random-bytes", "text", "file")


_f = Field
HARDWARE_FIELDS: dict[str, Field] = {
    "profile": _f(str, "generic-server", "Named hardware profile (model/profiles/) or a path to one."),
    "colocated_cores": _f(int, 0, "If > 0: clients and brokers share one host with this many cores "
                          "(a laptop, a 2-core VM, this machine).", 0, 4096),
    "client_cores": _f(int, 16, "Cores per client host (when not co-located).", 1, 4096),
    "broker_cores": _f(int, 16, "Cores per broker host (when not co-located).", 1, 4096),
    "background_cores": _f(float, 0.0, "Cores' worth of CPU other processes take on each client host (on the "
                           "shared host when co-located) throughout the run: a noisy neighbour. `kafkasim "
                           "measure` records it per run (environment.cpu_during_run.other_cores).", 0, 4096),
    "client_cpu_limit": _f(float, 0.0, "CPU each client host's processes may use together, in cores: a "
                           "container's or task's limit (Kubernetes, Mesos), enforced as Linux's CFS quota — "
                           "limit × cpu_period_ms of CPU each period, then its threads wait for the next; 0 = none. "
                           "Beside the brokers (colocated_cores) the clients share their cores under it; "
                           "`kafkasim measure` applies it to the live client (a cgroup).", 0, 4096),
    "cpu_period_ms": _f(float, 100.0, "The CFS period of client_cpu_limit, ms (Linux's default).", 0.1, 10_000),
    "rtt_ms": _f(float, 0.2, "Network round trip between hosts, ms.", 0, 10_000),
    "nic_mbit": _f(float, 10_000, "NIC bandwidth per host and direction, Mbit/s.", 0.001, 10**7),
    "proxy_ms": _f(float, 0.0, "Round-trip latency a network-emulation proxy adds by itself (scenarios with "
                   "network.proxy).", 0, 10_000),
    "disk_mb_s": _f(float, 500, "Broker log write bandwidth sustained to disk, MB/s (reads share it).",
                    0.001, 10**6),
    "page_cache_gib": _f(float, 5.0, "Memory the kernel gives a broker's page cache (its RAM less the JVM heap "
                         "and other processes), GiB: the newest log data, which consumers read without the "
                         "disk.", 0.001, 10**5),
    "dirty_ratio": _f(float, 20.0, "vm.dirty_ratio: the % of the page cache that may hold written data not yet "
                      "on disk before appends wait for the disk.", 0.1, 100),
    "dirty_background_ratio": _f(float, 10.0, "vm.dirty_background_ratio: the % of the page cache dirty pages "
                                 "reach before the kernel starts writing them back (the disk idles until then).",
                                 0, 100),
    "dirty_expire_s": _f(float, 30.0, "vm.dirty_expire_centisecs ÷ 100: how old a dirty page may get before "
                         "writeback starts anyway, seconds.", 0, 10**6),
    "extra_latency_ms": _f(float, 0.0, "Latency a broker adds to everything it sends (produce and fetch "
                           "responses, its own fetches): a slow broker, as in KIP-794's experiment. Usually set "
                           "for one: hardware.brokers.<id>.extra_latency_ms.", 0, 10**5),
    "response_delay_ms": _f(float, 0.0, "Time a broker holds each produce response before sending it, its "
                            "connection muted meanwhile, so that one connection's requests take it one after "
                            "another (a broker slow inside: KIP-794's experiment slept 20 ms in each). Usually set "
                            "for one: hardware.brokers.<id>.response_delay_ms.", 0, 10**5),
    # worker thread (the thread calling send())
    "worker.record_us": _f(float, 2.0, "CPU per send() outside the locks: serialise, partition, "
                           "bookkeeping.", 0, 10**6),
    "worker.app_us": _f(float, 0.0, "CPU per record the application itself spends between send() calls "
                        "(building the record, a load generator's own loop): busy, but not in send().",
                        0, 10**6),
    "worker.byte_ns": _f(float, 0.2, "CPU per record byte copied into the batch.", 0, 10**6),
    "worker.payload_byte_ns": _f(float, 0.0, "CPU per value byte perf-test spends drawing fresh random letters "
                                 "before each send() (payload: random-letters only; calibrate host measures it "
                                 "alone, ≈ 3 ns): the load generator's work, like worker.app_us.", 0, 10**6),
    "worker.batch_us": _f(float, 0.0, "CPU on the sending thread per batch it starts: sender.wakeup() and the "
                          "batch's set-up (measured here: ≈ 8 us, python -m kafkasim.validation.jit).",
                          0, 10**6),
    "worker.lock_us": _f(float, 0.5, "Time per record holding the partition deque lock (append).", 0, 10**6),
    "worker.metadata_lock_us": _f(float, 0.3, "Time per record holding the producer-wide lock "
                                  "(metadata, partitioner state).", 0, 10**6),
    "worker.contention_us": _f(float, 0.0, "Extra time per record under the partition deque lock for each "
                               "other thread waiting on it (cache-line transfer, lock inflation).", 0, 10**6),
    "worker.transfer_us": _f(float, 0.0, "Extra time per record under the partition deque lock when another "
                             "thread held it last (the batch's cache lines move between cores).", 0, 10**6),
    "worker.metadata_contention_us": _f(float, 0.0, "Extra time per record under the producer-wide lock for "
                                        "each other thread waiting on it.", 0, 10**6),
    "worker.first_send_ms": _f(float, 0.0, "How long the first send() of a freshly started producer blocks "
                               "in waitOnMetadata (class loading, connecting, fetching the topic's metadata) "
                               "beyond its 3 network round trips; perf-test counts it in its elapsed time. "
                               "0 = a warm producer.", 0, 10**6),
    # the producer's JVM (Java clients only)
    "jvm.jit_cpu_ms": _f(float, 0.0, "CPU a freshly started producer JVM's JIT compilers (C1 and C2) spend "
                         "in its first seconds, competing for the client host's cores. 0 = a warm JVM.",
                         0, 10**7),
    "jvm.tls_jit_cpu_ms": _f(float, 0.0, "CPU a fresh client JVM's compilers spend on its TLS code (SSLEngine, "
                             "AES-GCM) beside jvm.jit_cpu_ms, where its connections are encrypted (measured by "
                             "`kafkasim calibrate host`). 0 = not counted.", 0, 10**7),
    "jvm.cold_factor": _f(float, 1.0, "How many times its warm CPU cost the producer's Java code takes before "
                          "the JIT has compiled it (falling to 1 as each thread's path is used: see "
                          "jvm.warm_invocations).", 1, 100),
    "jvm.warm_invocations": _f(float, 300.0, "Runs through a thread's path (records for a worker, requests for "
                               "the Sender) over which its slowdown falls by a factor e.", 0, 10**9),
    "jvm.sender_cold_cpu_ms": _f(float, 0.0, "CPU a fresh JVM's Sender thread spends beyond its warm costs as "
                                 "its code warms, a·(1 − exp(−t / jvm.sender_cold_s)) by time t, however busy it "
                                 "is (measured by `kafkasim calibrate host`); it then replaces jvm.cold_factor "
                                 "for the Sender. 0 = the Sender's cold factor.", 0, 10**7),
    "jvm.sender_cold_s": _f(float, 4.3, "Seconds over which a fresh Sender's extra CPU (jvm.sender_cold_cpu_ms) "
                            "comes, e-folding.", 0.001, 10**4),
    "jvm.gc_record_ns": _f(float, 0.0, "The producer JVM's garbage collector's CPU per record sent (its "
                           "allocations), on the client host's cores. 0 = not modelled.", 0, 10**7),
    "jvm.gc_held_us": _f(float, 0.0, "The collector's CPU per second for each record the producer holds (sent, "
                         "not yet acknowledged: young collections copy what is alive).", 0, 10**6),
    # the consumer (classic Java consumer: its poll loop's thread); measured here with kafka-consumer-perf-test
    # 4.3.1 on a prefilled topic, main thread's CPU between runs of 0.25-3M records of 100 B and 1 KiB and
    # 1 MiB or 64 KiB fetches (Intel Xeon, 2 cores, 2026-11-25)
    "consumer.fetch_us": _f(float, 49.0, "Consumer CPU per fetch (build the request, read the response).",
                            0, 10**7),
    "consumer.record_us": _f(float, 0.12, "Consumer CPU per record poll() returns.", 0, 10**6),
    "consumer.byte_ns": _f(float, 0.83, "Consumer CPU per byte fetched (CRC32C, copying values out).", 0, 10**6),
    "consumer.tls_byte_ns": _f(float, 0.28, "Consumer CPU per byte fetched through TLS (decrypting it), beyond "
                               "consumer.byte_ns.", 0, 10**6),
    "consumer.cold_cpu_ms": _f(float, 0.0, "CPU a fresh consumer JVM's poll thread spends reading beyond its "
                               "warm costs while its code is cold (interpreted, then C1 code): it runs at half "
                               "speed until it has spent this much more. `kafkasim calibrate host` measures it "
                               "with two fresh kafka-consumer-perf-test reads.", 0, 10**7),
    "consumer.jit_cpu_ms": _f(float, 0.0, "CPU a fresh consumer JVM's JIT compilers spend starting and reading a "
                              "topic (a fresh kafka-consumer-perf-test read's C1 and C2 threads). 0 = the "
                              "producer JVM's (jvm.jit_cpu_ms).", 0, 10**7),
    "consumer.start_jit_cpu_ms": _f(float, 0.0, "... of which the JVM's start and the group's join take, before "
                                    "its first records: done before the run by a consumer that starts before "
                                    "the producers.", 0, 10**7),
    "consumer.join_ms": _f(float, 250.0, "From a consumer's start to its partitions assigned, beyond the "
                           "coordinator's delay and round trips (perf-test's rebalance.time.ms).", 0, 10**7),
    # sender thread
    "sender.request_us": _f(float, 30.0, "Sender CPU per produce request (build, write, read the "
                            "response).", 0, 10**7),
    "sender.batch_us": _f(float, 5.0, "Sender CPU per batch drained and completed.", 0, 10**7),
    "sender.connect_ms": _f(float, 0.0, "How long a freshly started producer takes from its first batch for a "
                            "broker to its first request there, beyond 2 round trips (TCP, ApiVersions): "
                            "connecting and the cold first request path. 0 = connections already up.", 0, 10**6),
    "sender.record_us": _f(float, 0.1, "Sender CPU per record completed (the user callback).", 0, 10**6),
    "sender.byte_ns": _f(float, 0.0, "Sender CPU per byte of request written to the socket (the kernel's "
                         "send path; on loopback also the receiving side's, which runs on the sending thread).",
                         0, 10**6),
    # TLS's defaults (sender.tls_byte_ns, consumer.tls_byte_ns, broker.tls_*): `calibrate host` on this project's
    # 2-core Intel Xeon KVM with AES-NI/VAES, Java 17, 2026-11-27 (validation/profiles/host-2026-11-27-s28b.yaml)
    "sender.tls_byte_ns": _f(float, 0.78, "Sender CPU per byte of request written through TLS (encrypting it), "
                             "beyond sender.byte_ns.", 0, 10**6),
    # broker
    "broker.request_us": _f(float, 40.0, "Broker I/O-thread CPU per produce request.", 0, 10**7),
    "broker.batch_us": _f(float, 10.0, "Broker CPU per partition batch appended (under the log lock).",
                          0, 10**7),
    "broker.record_us": _f(float, 0.0, "Broker I/O-thread CPU per record appended as leader (LogValidator "
                           "checks every record of a batch: offsets, timestamps, sizes).", 0, 10**6),
    "broker.byte_ns": _f(float, 0.5, "Broker CPU per byte appended (validation, CRC, page-cache copy).",
                         0, 10**6),
    "broker.network_request_us": _f(float, 10.0, "Broker network-thread CPU per request (read + "
                                    "response).", 0, 10**7),
    "broker.network_byte_ns": _f(float, 0.2, "Broker network-thread CPU per request byte read.", 0, 10**6),
    "broker.tls_read_byte_ns": _f(float, 1.1, "Broker CPU per byte it reads through TLS (decrypting a produce "
                                  "request on a network thread, a follower's fetched bytes on its fetcher).",
                                  0, 10**6),
    "broker.tls_write_byte_ns": _f(float, 0.86, "Broker network-thread CPU per byte of fetch response sent through "
                                   "TLS: read from the page cache into the heap and encrypted, where PLAINTEXT "
                                   "sends it with sendfile (zero-copy).", 0, 10**6),
    "broker.fetch_us": _f(float, 20.0, "Broker CPU per follower fetch request it serves as leader.", 0, 10**7),
    "broker.follower_fetch_us": _f(float, 0.0, "A follower's own CPU per fetch it makes (its fetcher thread "
                                   "builds the request, handles the response, appends; the collector's share): "
                                   "measured by `kafkasim calibrate host`.", 0, 10**7),
    "broker.follower_byte_ns": _f(float, 0.0, "A follower's CPU per byte it fetches beyond the append's "
                                  "broker.byte_ns (reading the response into the heap, the collector).",
                                  0, 10**6),
    # Measured here (2026-11-26, 3 nodes, RF 3, acks=all, 3 partitions led by one broker, 100k records of 1 KiB in
    # ≈ 4,200 follower fetches): 2,000 idle RF-3 partitions beside them (≈ 670 in each follower's session with that
    # leader) took the leader's I/O threads from 0.7 to 10.5 CPU-s and its collector from 0.03 to 7.3, each
    # follower's fetcher from 0.35 to 1.4, and throughput from 30–42k to 6.5–6.8k records/s.
    "broker.fetch_partition_us": _f(float, 6.3, "Leader's CPU per partition in a follower's or consumer's fetch "
                                    "session, every fetch: it reads each for new data (a KIP-227 session leaves the unchanged ones "
                                    "out of the response, not out of the work), and the collector's share.",
                                    0, 10**6),
    "broker.follower_partition_us": _f(float, 0.7, "A follower's CPU per partition in its fetch session, every "
                                       "fetch.", 0, 10**6),
    "broker.handoff_us": _f(float, 0.0, "Latency, not CPU, of each hand-off between a broker's network and "
                            "I/O threads: a request waits it on the request queue and again on the response "
                            "queue (a thread waking up), on a host with a core per thread; times threads per core on a host short "
                            "of cores.", 0, 10**7),
    "broker.service_cv": _f(float, 0.0, "Variability of broker I/O-thread service times: the coefficient of "
                            "variation of a gamma distribution (0 = fixed, 1 = exponential).", 0, 10),
    "broker.partition_us": _f(float, 2.0, "Broker CPU per partition it hosts per second of run "
                              "(background work: fetch sessions, log checks, metrics).", 0, 10**7),
}


def _codec_fields() -> dict[str, Field]:
    """Each codec's costs and its ratio on each payload."""
    f: dict[str, Field] = {"compression.client_version": _f(
        JAVA_VERSIONS, "4.3", "The Java client version the profile's compression.<codec>.byte_ns are for "
        "(`calibrate host` measures with 4.3): another version's codecs cost what model/codec_versions.yaml "
        "measured against this one's.")}
    for codec in CODECS:
        f[f"compression.{codec}.byte_ns"] = _f(float, {"gzip": 20.0, "snappy": 2.0, "lz4": 1.5, "zstd": 4.0}[codec],
                                               f"CPU per uncompressed byte to compress with {codec}.", 0, 10**6)
        f[f"compression.{codec}.jit_cpu_ms"] = _f(float, 0.0, f"CPU a fresh producer JVM's JIT compilers spend on "
                                                  f"{codec}'s code (its stream and codec library) beyond "
                                                  f"jvm.jit_cpu_ms; 0: not counted.", 0, 10**7)
        f[f"compression.{codec}.validate_ns"] = _f(float, 0.0, f"Leader broker's CPU per uncompressed byte of a "
                                                   f"{codec} batch it validates (LogValidator decompresses every "
                                                   f"record); 0: not counted.", 0, 10**6)
        for payload, ratio in zip(PAYLOADS, {"gzip": (0.62, 1.0, 0.1, 0.3), "snappy": (0.8, 1.0, 0.2, 0.45),
                                             "lz4": (0.8, 1.0, 0.15, 0.4), "zstd": (0.6, 1.0, 0.08, 0.3)}[codec]):
            f[f"compression.{codec}.ratio.{payload}"] = _f(float, ratio, f"Compressed/uncompressed size of "
                                                           f"{payload} records with {codec}.", 0.001, 2)
        # A repeat of the batch's first value compresses to back-references (per ~1 KiB record: gzip's 258-byte
        # matches, snappy's 64-byte copies, one lz4 or zstd match) plus the record header's few literals.
        f[f"compression.{codec}.ratio.repeated"] = _f(
            float, {"gzip": 0.015, "snappy": 0.06, "lz4": 0.01, "zstd": 0.005}[codec],
            f"Compressed/uncompressed size with {codec} of each record after a batch's first when every record holds "
            f"the same value (payload: repeated; the first compresses like random-letters).", 0.0001, 2)
    return f


HARDWARE_FIELDS.update(_codec_fields())

# What one broker may have of its own: hardware.brokers.<id>.<key> overrides <key> for broker <id>.
PER_BROKER = ("broker_cores", "nic_mbit", "disk_mb_s", "page_cache_gib", "dirty_ratio", "dirty_background_ratio",
              "dirty_expire_s", "extra_latency_ms", "response_delay_ms") + tuple(
    k for k in HARDWARE_FIELDS if k.startswith("broker."))


def per_broker(key: str) -> tuple[int, str] | None:
    """(broker id, key) for a per-broker hardware key 'brokers.<id>.<key>' (without 'hardware.'), else None."""
    parts = key.split(".", 2)
    if len(parts) == 3 and parts[0] == "brokers" and parts[1].isdigit() and parts[2] in PER_BROKER:
        return int(parts[1]), parts[2]
    return None


@dataclass(frozen=True)
class Hardware:
    """Resolved hardware values; `cost(key)` reads one in seconds (us and ns keys converted)."""
    profile: str
    values: tuple = field(repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_map", dict(self.values))

    def __getitem__(self, key: str) -> Any:
        return self._map[key]

    def own(self, b: int) -> dict[str, Any]:
        """Broker b's own values (brokers.<b>.<key>), by key."""
        prefix = f"brokers.{b}."
        return {k[len(prefix):]: v for k, v in self.values if k.startswith(prefix)}

    def broker(self, b: int) -> "Hardware":
        """The values broker b runs with: its own overrides over the cluster's."""
        mine = self.own(b)
        return Hardware(self.profile, tuple(sorted({**self._map, **mine}.items()))) if mine else self

    def seconds(self, key: str) -> float:
        value = self._map[key]
        if key.endswith("_us"):
            return value * 1e-6
        if key.endswith("_ns"):
            return value * 1e-9
        if key.endswith("_ms"):
            return value * 1e-3
        raise KeyError(f"{key} is not a time")


THIS_HOST = "this-host"      # the profile `kafkasim calibrate host` last measured on this machine


def cache_dir() -> Path:
    """kafkasim's cache: ~/.cache/kafkasim, or $XDG_CACHE_HOME/kafkasim (Kafka, clients, this host's profile)."""
    import os
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "kafkasim"


def this_host_path() -> Path:
    """Where `kafkasim calibrate host` keeps this machine's profile."""
    return cache_dir() / "profiles" / f"{THIS_HOST}.yaml"


def profile_path(name: str) -> Path:
    """A built-in profile's file, this host's measured one (this-host), or the path itself for a .yaml path."""
    if name == THIS_HOST:
        return this_host_path()
    return Path(name) if name.endswith((".yaml", ".yml")) else PROFILE_DIR / f"{name}.yaml"


def profile_names() -> list[str]:
    """The built-in profiles, by name."""
    return sorted(p.stem for p in PROFILE_DIR.glob("*.yaml"))


def load_profile(name: str) -> dict[str, Any]:
    path = profile_path(name)
    try:
        exists = path.is_file()
    except OSError:                  # (a name too long for a file name)
        exists = False
    if name == THIS_HOST and not exists:
        raise ValueError(f"hardware.profile={THIS_HOST} is not allowed yet: this host has not been measured; "
                         f"`kafkasim calibrate host -o PROFILE.yaml` measures it (≈ 1–2 min) and keeps it as {THIS_HOST}")
    if not exists:
        known = ", ".join(profile_names())
        raise ValueError(f"hardware.profile={clip(name)} is not allowed: expected one of {known} or a .yaml path")
    return read_mapping(path, f"hardware.profile={name!r}", "a profile must be a mapping of keys to values")
