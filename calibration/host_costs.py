"""A host's CPU costs from its threads' CPU time: linear regression over a designed matrix of real runs.

Each run (validation/HostCosts.java) counts what a producer did — records, record bytes, batches, requests, bytes
on the wire and before compression — and the CPU each thread took: the worker (the thread calling send()), the
Sender, the leader broker's network threads and the rest of its process, the followers. Each thread's CPU is a sum
of the model's costs times those counts (the model charges exactly these terms), so the costs are the coefficients
of a non-negative least-squares fit, with standard errors from the residuals. Nothing here fits throughput.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear

from kafkasim.model.hardware import CODECS

US, NS = 1e-6, 1e-9
WARM_INVOCATIONS = 300.0          # jvm.warm_invocations: the e-folding the cold factor is measured against
# jvm.sender_cold_s: the e-folding time of the Sender's extra CPU in a fresh JVM, fitted over the transfer runs of
# four sessions on one host (3.85–5.5 s; validation/reports/cold-sender-2026-11-27-s22/): one cold run gives its size
SENDER_COLD_S = 4.3
# What the model charges a worker per record: worker.record_us and the two lock hold times. One thread's runs give
# their sum only; it is split as the fields' defaults split it (the locks matter to threads sharing a producer).
PER_RECORD_KEYS = ("worker.record_us", "worker.lock_us", "worker.metadata_lock_us")


@dataclass(frozen=True)
class Cost:
    value: float
    se: float
    runs: int


def regress(y: np.ndarray, columns: dict[str, np.ndarray], units: dict[str, float]) -> dict[str, Cost]:
    """Non-negative least squares of y (CPU-seconds) on the columns (counts × unit): coefficients in the units'
    terms (us or ns), each with its standard error from the residual variance."""
    names = list(columns)
    x = np.column_stack([columns[k] * units[k] for k in names])
    fit = lsq_linear(x, y, bounds=(0, np.inf))
    n, k = x.shape
    resid = y - x @ fit.x
    sigma2 = float(resid @ resid) / max(1, n - k)
    try:
        cov = sigma2 * np.linalg.inv(x.T @ x)
        se = np.sqrt(np.clip(np.diag(cov), 0, None))
    except np.linalg.LinAlgError:
        se = np.full(k, np.inf)
    return {name: Cost(float(fit.x[i]), float(se[i]), n) for i, name in enumerate(names)}


def _counts(run: dict) -> dict[str, float]:
    """A run's counts: records, record bytes, batches, requests, wire bytes, bytes before compression."""
    m = run["measured"]
    n = float(m["records"])                # (the record sent to connect came before the measured phase)
    return {"records": n, "record_bytes": n * run["size"], "batches": float(m["batches"]),
            "requests": float(m["request-total"]), "bytes": float(m["bytes"]), "uncompressed": float(m["uncompressed"])}


def _codec_columns(runs: list[dict], counts: list[dict], prefix: str, suffix: str) -> dict[str, np.ndarray]:
    return {f"{prefix}.{codec}.{suffix}": np.array([c["uncompressed"] if r["codec"] == codec else 0.0
                                                    for r, c in zip(runs, counts)])
            for codec in CODECS if any(r["codec"] == codec for r in runs)}


def host_costs(runs: list[dict]) -> tuple[dict[str, Cost], dict]:
    """The model's costs from HostCosts runs (each with its settings: size, codec, replicas, throttled), and what
    else the runs show (idle brokers) for the profile's record. A run of the real perf-test tool in a fresh JVM, if
    there is one, gives the JVM's start-up costs."""
    perfs = [r["perf_test"] for r in runs if "perf_test" in r]
    alone = next((r["codecs_alone"] for r in runs if "codecs_alone" in r), {})
    runs = [r for r in runs if "measured" in r]
    # (a throttled run's threads sleep and wake for every few records: it measures the hand-offs, not the costs)
    produce = [r for r in runs if r["replicas"] == 1 and not r.get("throttled") and r["measured"]["errors"] == 0
               and not r.get("tls")]
    counts = [_counts(r) for r in produce]
    col = lambda key: np.array([c[key] for c in counts])                                           # noqa: E731
    costs: dict[str, Cost] = {}

    # perf-test's own work before each send(): fresh random letters for the value (HostCosts times it alone); the
    # client's costs are the sending thread's beyond it
    fill_ns = float(alone.get("payload.fill_ns", 0.0))
    if fill_ns:
        costs["worker.payload_byte_ns"] = Cost(fill_ns, ALONE_SPREAD * fill_ns, len(produce))
    worker = {"worker.record_us": col("records"), "worker.byte_ns": col("record_bytes"),
              "worker.batch_us": col("batches"), **_codec_columns(produce, counts, "compression", "byte_ns")}
    y = np.array([r["measured"]["worker_cpu_s"] for r in produce]) - 1e-9 * fill_ns * col("record_bytes")
    costs.update(regress(y, worker, _units(worker)))

    sender = {"sender.request_us": col("requests"), "sender.batch_us": col("batches"),
              "sender.record_us": col("records"), "sender.byte_ns": col("bytes")}
    y = np.array([r["measured"]["sender_cpu_s"] for r in produce])
    costs.update(regress(y, sender, _units(sender)))

    # The client JVM's collector: per record sent (its allocations) and per record-second held (what it copies)
    collected = [r for r in runs if "gc_cpu_s" in r["measured"] and r["measured"]["errors"] == 0]
    if collected:
        gc = {"jvm.gc_record_ns": np.array([float(r["measured"]["records"]) for r in collected]),
              "jvm.gc_held_us": np.array([float(r["measured"]["held_record_s"]) for r in collected])}
        costs.update(regress(np.array([r["measured"]["gc_cpu_s"] for r in collected]), gc, _units(gc)))

    # The brokers: the leader's network threads, and the rest of its process (I/O threads, the collector, the
    # log's background work) less what an idle broker takes in the same time.
    # The first run's brokers are fresh JVMs still compiling their hot paths: they are left out.
    idle = _idle_cores(produce)
    warm = [i for i, r in enumerate(produce) if r is not runs[0]]
    produce, counts = [produce[i] for i in warm], [counts[i] for i in warm]
    leader = [r["measured"]["brokers"][r["leader"] - 1] for r in produce]
    seconds = np.array([r["measured"]["seconds"] for r in produce])
    network = {"broker.network_request_us": col("requests"), "broker.network_byte_ns": col("bytes")}
    costs.update(regress(np.array([b["network_cpu_s"] for b in leader]), network, _units(network)))
    io = {"broker.request_us": col("requests"), "broker.batch_us": col("batches"), "broker.record_us": col("records"),
          "broker.byte_ns": col("bytes"),
          **_codec_columns(produce, counts, "compression", "validate_ns")}
    y = np.array([_work(b) - b["network_cpu_s"] for b in leader]) - idle * seconds
    costs.update(regress(y, io, _units(io)))

    notes = {"idle_broker_cores": round(idle, 4), **({"codecs_alone_ns": alone} if alone else {})}
    costs.update(_sessions(runs, costs, idle))
    costs.update(_replication(runs, costs, idle))
    costs.update(_latencies(runs, costs, perfs))
    costs.update(_codec_jit(runs))
    costs.update(tls_costs(runs))
    notes.update(_validation_in_run(costs))
    costs.update(_codecs_alone(costs, alone))
    for codec in CODECS:
        ratios = [r["measured"]["bytes"] / r["measured"]["uncompressed"] for r in produce if r["codec"] == codec]
        if ratios:
            costs[f"compression.{codec}.ratio.random-letters"] = Cost(float(np.median(ratios)),
                                                                      float(np.std(ratios)), len(ratios))
    return costs, notes


def _validation_in_run(costs: dict[str, Cost]) -> dict:
    """The fit's leader validation per codec, kept in the profile's notes beside the cost alone it gives way to."""
    fitted = {codec: round(costs[f"compression.{codec}.validate_ns"].value, 3) for codec in CODECS
              if f"compression.{codec}.validate_ns" in costs}
    return {"validate_in_run_ns": fitted} if fitted else {}


def _codecs_alone(costs: dict[str, Cost], alone: dict[str, float]) -> dict[str, Cost]:
    """Each codec's costs from what it costs alone (HostCosts' CODECS: a batch compressed and read back on a thread
    with the host to itself). The worker's in-run cost per byte is at least its compression alone: a run's single
    codec term takes that run's noise, and the non-negative fit set snappy's to 0 in 7 of 12 calibrations. The
    leader's validation is its read-back alone: in the one codec run of a calibration the brokers still compile
    that codec's path (0.2–0.8 CPU-s of their compilers), and the fit came out 1.2–8× the read-back alone where
    warm brokers in the transfer runs paid 0.8–2× it (lz4, snappy, zstd; gzip 1.0–1.1×)."""
    out = {}
    for codec in CODECS:
        name, floor = f"compression.{codec}.byte_ns", alone.get(f"{codec}.compress_ns")
        if name in costs and floor is not None and costs[name].value < floor:
            out[name] = Cost(float(floor), costs[name].se, costs[name].runs)
        name, read = f"compression.{codec}.validate_ns", alone.get(f"{codec}.decompress_ns")
        if name in costs and read is not None:
            out[name] = Cost(float(read), ALONE_SPREAD * float(read), costs[name].runs)
    return out


# How far two JVMs' codec costs alone differ, a minute apart on one host (up to 25 %): their standard error
ALONE_SPREAD = 0.25


def _codec_jit(runs: list[dict]) -> dict[str, Cost]:
    """compression.<codec>.jit_cpu_ms: the JIT compilers' CPU while the warm JVM first runs a codec (its warm-up
    and measured phases) beyond what they spend in a run of the same JVM without one (the median of the others,
    the JVM's first run left out): the codec's stream and library compiled. Measured over 12 calibrations on two
    hosts: lz4 0.7–1.9 CPU-s, snappy 0.5–1.1, zstd 0.2–0.6, gzip 0.03–0.4 (whose records are few). Likewise
    jvm.tls_jit_cpu_ms, in the JVM's first run through TLS (SSLEngine, AES-GCM: 2.7 CPU-s here, 2026-11-27)."""
    jit = lambda r: sum(r.get(p, {}).get("phase_jit_cpu_s", 0.0) for p in ("warmup", "measured"))   # noqa: E731
    plain = [jit(r) for r in runs[1:] if r["codec"] == "none" and "phase_jit_cpu_s" in r["measured"]
             and not r.get("tls")]
    if not plain:
        return {}
    base = float(np.median(plain))
    out = {f"compression.{codec}.jit_cpu_ms": Cost(1000 * max(0.0, float(np.median(own)) - base), 0.0, len(own))
           for codec in CODECS for own in [[jit(r) for r in runs if r["codec"] == codec and not r.get("tls")]] if own}
    first_tls = next((r for r in runs if r.get("tls")), None)       # (the JVM's TLS code compiles in the first)
    if first_tls is not None:
        out["jvm.tls_jit_cpu_ms"] = Cost(1000 * max(0.0, jit(first_tls) - base), 0.0, 1)
    return out


def tls_costs(runs: list[dict]) -> dict[str, Cost]:
    """What TLS adds per byte, from each run through the SSL listener against its PLAINTEXT twin (the same
    configuration; its id without "-tls"): the Sender's CPU and the leader's network threads' per byte written
    (sender.tls_byte_ns, broker.tls_read_byte_ns: encrypting, decrypting), and in reads of the same fetch size the
    consumer's poll thread and the leader's network threads per byte read (consumer.tls_byte_ns: decrypting;
    broker.tls_write_byte_ns: the page cache copied out and encrypted, where PLAINTEXT sends it with sendfile)."""
    per_byte = lambda cpu, nbytes: cpu / nbytes / NS if nbytes else 0.0                             # noqa: E731
    out: dict[str, list[float]] = {k: [] for k in ("sender.tls_byte_ns", "broker.tls_read_byte_ns",
                                                   "consumer.tls_byte_ns", "broker.tls_write_byte_ns")}
    for r in runs:
        twin = _twin(runs, r, "-tls")
        if not r.get("tls") or twin is None:
            continue
        (m, n), (m0, n0) = ((x["measured"], x["measured"]["bytes"]) for x in (r, twin))
        leader, leader0 = m["brokers"][r["leader"] - 1], m0["brokers"][twin["leader"] - 1]
        out["sender.tls_byte_ns"].append(per_byte(m["sender_cpu_s"], n) - per_byte(m0["sender_cpu_s"], n0))
        out["broker.tls_read_byte_ns"].append(per_byte(leader["network_cpu_s"], n)
                                              - per_byte(leader0["network_cpu_s"], n0))
        plain = {read["fetch_size"]: read for read in twin.get("consumed", [])}
        for read in r.get("consumed", []):
            read0 = plain.get(read["fetch_size"])
            if read0 is None:
                continue
            (b, b0) = (x["bytes-consumed-total"] for x in (read, read0))
            out["consumer.tls_byte_ns"].append(per_byte(read["poll_cpu_s"], b) - per_byte(read0["poll_cpu_s"], b0))
            out["broker.tls_write_byte_ns"].append(per_byte(read["brokers"][r["leader"] - 1]["network_cpu_s"], b)
                                                   - per_byte(read0["brokers"][r["leader"] - 1]["network_cpu_s"], b0))
    return _medians(out)


def _twin(runs: list[dict], run: dict, suffix: str) -> dict | None:
    """The run of the same configuration without what `suffix` names in this run's id (-tls, -bg), if there is one."""
    return next((t for t in runs if t.get("id") == run.get("id", "").removesuffix(suffix) and t is not run), None)


def _medians(values: dict[str, list[float]]) -> dict[str, Cost]:
    """Each cost's median over its runs (at least 0), with their spread; costs without runs left out."""
    return {k: Cost(max(0.0, float(np.median(v))), float(np.std(v)), len(v)) for k, v in values.items() if v}


def _work(broker: dict) -> float:
    """A broker's CPU in a run less its JIT compilers' (a one-off warming of its code, not a cost of the work)."""
    return broker["process_cpu_s"] - broker.get("jit_cpu_s", 0.0)


def _units(columns: dict) -> dict[str, float]:
    return {k: US if k.endswith("_us") else NS for k in columns}


def _idle_cores(runs: list[dict]) -> float:
    """An idle broker's CPU (controller heartbeats, metrics, log checks), in cores: the brokers that neither lead
    nor follow anything in single-replica runs."""
    idle = [_work(b) / r["measured"]["seconds"] for r in runs
            for i, b in enumerate(r["measured"]["brokers"]) if i + 1 != r["leader"]]
    return float(np.median(idle)) if idle else 0.0


def _beyond_data(r: dict, c: dict[str, float], idle: float) -> tuple[float, list[float], float]:
    """A replicated run's CPU beyond what its data costs: the leader's beyond its produce work and the fetches'
    reads (network_request a fetch, network_byte a byte sent), each follower's beyond the append the model charges
    it at the leader's batch and byte costs; and the fetches the leader served."""
    m = r["measured"]
    k = _counts(r)
    fetches = m["brokers"][r["leader"] - 1]["fetch_follower.requests"]
    produce = (k["requests"] * (c["broker.request_us"] + c["broker.network_request_us"]) * US
               + k["batches"] * c["broker.batch_us"] * US + k["records"] * c["broker.record_us"] * US
               + k["bytes"] * (c["broker.byte_ns"] + c["broker.network_byte_ns"]) * NS
               + k["uncompressed"] * c.get(f"compression.{r['codec']}.validate_ns", 0.0) * NS)
    read = (fetches * c["broker.network_request_us"] * US
            + (r["replicas"] - 1) * k["bytes"] * c["broker.network_byte_ns"] * NS)
    append = k["batches"] * c["broker.batch_us"] * US + k["bytes"] * c["broker.byte_ns"] * NS
    leader = _work(m["brokers"][r["leader"] - 1]) - idle * m["seconds"] - produce - read
    followers = [_work(b) - idle * m["seconds"] - append for i, b in enumerate(m["brokers"])
                 if i + 1 != r["leader"] and b.get("fetcher_cpu_s", 0) > 0]
    return leader, followers, fetches


def _sessions(runs: list[dict], costs: dict[str, Cost], idle: float) -> dict[str, Cost]:
    """broker.fetch_partition_us and broker.follower_partition_us from a replicated run beside an idle topic
    (`background_led` of its partitions led by our leader, so in each follower's fetch session with it) against
    the same run without (the id without "-bg"): the leader's and each follower's CPU a fetch beyond its data's,
    the difference per partition the idle topic added to the session."""
    c = {k: v.value for k, v in costs.items()}
    out: dict[str, list[float]] = {"broker.fetch_partition_us": [], "broker.follower_partition_us": []}
    for r in runs:
        added = r.get("background_led", 0)
        twin = _twin(runs, r, "-bg")
        if not added or twin is None:
            continue
        copies = r["replicas"] - 1
        (lead, follow, fetches), (lead0, follow0, fetches0) = _beyond_data(r, c, idle), _beyond_data(twin, c, idle)
        out["broker.fetch_partition_us"].append((lead / fetches - lead0 / fetches0) / added / US)
        out["broker.follower_partition_us"] += [(f / fetches - f0 / fetches0) * copies / added / US
                                                for f, f0 in zip(follow, follow0)]
    return _medians(out)


def _replication(runs: list[dict], costs: dict[str, Cost], idle: float) -> dict[str, Cost]:
    """The replicated runs: broker.fetch_us, the leader's CPU beyond its produce work per follower fetch it served,
    less the read the model charges apart (network_request + network_byte per byte fetched) and the session's
    partitions (here the run's own, all led by one broker); and the followers' own costs (broker.follower_fetch_us,
    broker.follower_byte_ns): their CPU beyond the append the model charges them at the leader's batch and byte
    costs and their session's, by regression on the fetches each made and the bytes it fetched."""
    c = {k: v.value for k, v in costs.items()}
    per_fetch, follower_y, follower_fetches, follower_bytes = [], [], [], []
    for r in runs[1:]:                 # (the first run's brokers are cold)
        if (r["replicas"] == 1 or r["measured"]["brokers"][r["leader"] - 1]["fetch_follower.requests"] <= 0
                or r.get("background_led")):
            continue
        leader, followers, fetches = _beyond_data(r, c, idle)
        session, copies, nbytes = r.get("partitions", 1), r["replicas"] - 1, _counts(r)["bytes"]
        per_fetch.append(max(0.0, leader / fetches / US - session * c.get("broker.fetch_partition_us", 0.0)))
        for extra in followers:
            follower_y.append(extra - fetches / copies * session * c.get("broker.follower_partition_us", 0.0) * US)
            follower_fetches.append(fetches / copies)
            follower_bytes.append(nbytes)
    if not per_fetch:
        return {}
    out = {"broker.fetch_us": Cost(float(np.median(per_fetch)), float(np.std(per_fetch)), len(per_fetch))}
    follower = {"broker.follower_fetch_us": np.array(follower_fetches),
                "broker.follower_byte_ns": np.array(follower_bytes)}
    out.update(regress(np.array(follower_y), follower, _units(follower)))
    return out


def _latencies(runs: list[dict], costs: dict[str, Cost], perfs: list[dict]) -> dict[str, Cost]:
    """The hand-off (broker.handoff_us: a produce request's wait on the request queue and its response's on the
    response queue, halved), at low load, where no thread waits for a core; the cold JVM (jvm.*) from the fresh
    perf-test runs (the median of each figure over them), or else from the first run, which starts the JVM."""
    out: dict[str, Cost] = {}
    calm = [r for r in runs if r.get("throttled") and r["replicas"] == 1]
    if calm:
        waits = [(b["produce.request_queue_ms.mean"] + b["produce.response_queue_ms.mean"]) / 2 * 1000
                 for r in calm for b in [r["measured"]["brokers"][r["leader"] - 1]]]
        out["broker.handoff_us"] = Cost(float(np.median(waits)), float(np.std(waits)), len(waits))
    first = _warmup_counts(runs[0]) if "warmup" in runs[0] else None
    # (a perf-test run stored before its metadata wait was takes the first run's first send)
    fallback = first["first_send_ms"] if first else None
    cold = [_perf_counts(p, fallback) for p in perfs if p.get("request-total") and p.get("batch-size-avg")]
    cold = cold or ([first] if first else [])
    c = {k: v.value for k, v in costs.items()}
    fresh = [_cold_jvm(run, c) for run in cold]
    for key in (fresh[0] if fresh else ()):
        values = [f[key] for f in fresh if key in f]
        out[key] = Cost(float(np.median(values)), float(np.std(values)), len(values) if key in PER_JVM else 0)
    return out


# The cold JVM's figures: those measured per fresh run (the others are the model's constants, stored beside them)
PER_JVM = ("jvm.jit_cpu_ms", "worker.first_send_ms", "jvm.cold_factor", "jvm.sender_cold_cpu_ms")


def _warmup_counts(first: dict) -> dict:
    """The first HostCosts run's producer, which starts the JVM (runs stored before the fresh perf-test run)."""
    cold = first["warmup"]
    # the compilers' CPU while the first producer sends, as a fresh perf-test JVM's run (what they compile before,
    # starting the JVM and the producer, is done before perf-test's clock starts)
    return {"jit_ms": 1000 * float(cold.get("phase_jit_cpu_s", first["jit_cpu_s"])),
            "first_send_ms": float(cold["first_send_ms"]), "records": float(cold["records"]),
            "requests": float(cold["request-total"]), "batches": float(cold["batches"]), "wire": float(cold["bytes"]),
            "sender": float(cold["sender_cpu_s"]), "seconds": float(cold["seconds"])}


def _perf_counts(perf: dict, first_send_ms: float | None) -> dict:
    """A fresh kafka-producer-perf-test run's counters and threads' CPU from its clock's start on (what the compilers
    did before, starting the JVM and the producer, is not the run's: the model's run starts with the clock)."""
    threads, before = perf["threads"], perf.get("threads_at_start", {})
    jit = lambda t: t.get("C1", 0.0) + t.get("C2", 0.0)                                          # noqa: E731
    wire = float(perf["outgoing-byte-total"])
    return {"jit_ms": 1000 * (jit(threads) - jit(before)),
            # (the first send()'s wait for metadata, in a fresh JVM as every run's; stored from session 29 on)
            "first_send_ms": (float(perf["metadata-wait-time-ns-total"]) / 1e6
                              if perf.get("metadata-wait-time-ns-total") else first_send_ms),
            "records": float(perf["records"]), "requests": float(perf["request-total"]),
            "batches": wire / float(perf["batch-size-avg"]), "wire": wire, "sender": threads.get("sender", 0.0),
            "seconds": float(perf["seconds"])}


def _cold_jvm(run: dict, c: dict[str, float]) -> dict[str, float]:
    """One fresh JVM's start-up figures: its compilers' CPU, its first send()'s wait, and its Sender's CPU beyond
    the warm costs `c` — as the model's count-based cold factor and as its by-time excess."""
    out = {"jvm.jit_cpu_ms": run["jit_ms"]}
    if run["first_send_ms"] is not None:
        out["worker.first_send_ms"] = run["first_send_ms"]
    n, requests, batches = run["records"], run["requests"], run["batches"]
    warm = (requests * c["sender.request_us"] * US + batches * c["sender.batch_us"] * US
            + n * c["sender.record_us"] * US + run["wire"] * c["sender.byte_ns"] * NS)
    excess = max(0.0, run["sender"] - warm)
    # The model slows each path by 1 + (f − 1)·exp(−i / W) over its i-th run, which adds (f − 1)·W·(1 − exp(−i/W))
    # runs' cost: a request's building, a batch's drain into it and its completion, a record's callback.
    reach = lambda runs: WARM_INVOCATIONS * (1 - np.exp(-runs / WARM_INVOCATIONS))              # noqa: E731
    slowed = US * (c["sender.request_us"] * reach(requests) + 2 * c["sender.batch_us"] * reach(batches)
                   + c["sender.record_us"] * reach(n))
    out["jvm.cold_factor"] = float(min(100.0, 1 + excess / slowed if slowed > 0 else 1.0))
    out["jvm.warm_invocations"] = WARM_INVOCATIONS
    # ... and the same excess as the Sender spends it, by time: what a run of `seconds` took of a·(1 − e^(−t/τ))
    out["jvm.sender_cold_cpu_ms"] = float(1000 * excess / (1 - np.exp(-run["seconds"] / SENDER_COLD_S)))
    out["jvm.sender_cold_s"] = SENDER_COLD_S
    return out


def consumer_costs(reads: list[dict], costs: dict[str, Cost], idle: float = 0.0) -> tuple[dict[str, Cost], dict]:
    """The Java consumer's costs from reads of HostCosts topics (a warm consumer polling on the measured thread):
    per fetch, record and byte (bytes-consumed-total); and the leader's CPU per consumer fetch beyond its network
    threads' per-request and per-byte costs (`costs`, from the produce runs) and an idle broker's (`idle` cores) —
    the model's broker.fetch_us — kept as a note beside the value the follower fetches give."""
    consumer = {"consumer.fetch_us": np.array([r["fetch-total"] for r in reads]),
                "consumer.record_us": np.array([r["records"] for r in reads]),
                "consumer.byte_ns": np.array([r["bytes-consumed-total"] for r in reads])}
    measured = regress(np.array([r["poll_cpu_s"] for r in reads]), consumer, _units(consumer))
    network = costs["broker.network_request_us"].value * US, costs["broker.network_byte_ns"].value * NS
    served = [(_work(b) - idle * r["seconds"] - network[0] * r["fetch-total"] - network[1] * r["bytes-consumed-total"])
              / r["fetch-total"] * 1e6 for r in reads for b in [max(r["brokers"], key=_work)]]
    return measured, {"broker_fetch_us_from_consumer_reads": round(float(np.median(served)), 1)}


def consumer_cold(reads: list[dict], costs: dict[str, Cost]) -> Cost:
    """consumer.cold_cpu_ms: what a fresh consumer JVM's poll thread spends reading a topic beyond its warm costs
    (`costs`), from two fresh reads — one record (start, construction, join, a first fetch) and every record — as
    the difference of their main threads' CPU less the warm costs of what the longer one did beyond the shorter."""
    short, full = reads
    warm = sum(costs[key].value * unit * (full[count] - short[count]) for key, count, unit in (
        ("consumer.fetch_us", "fetch-total", US), ("consumer.record_us", "records", US),
        ("consumer.byte_ns", "bytes-consumed-total", NS)))
    return Cost(max(0.0, 1000 * (full["main_cpu_s"] - short["main_cpu_s"] - warm)), 0.0, 2)


def consumer_jit(reads: list[dict]) -> dict[str, Cost]:
    """consumer.jit_cpu_ms and consumer.start_jit_cpu_ms: the compilers' CPU (C1 and C2 threads) of the same two
    fresh reads, the one of every record and the one of one record (start, join, a first fetch)."""
    short, full = (1000 * sum(read["threads"].get(k, 0.0) for k in ("C1", "C2")) for read in reads)
    return {"consumer.jit_cpu_ms": Cost(full, 0.0, 1), "consumer.start_jit_cpu_ms": Cost(min(short, full), 0.0, 1)}


def client_costs(runs: list[dict]) -> dict[str, Cost]:
    """A Python client's costs (kafka-python: its main thread is the worker, its I/O thread the Sender) from its
    perf-test runs' thread CPU and counters: worker per record and byte; Sender per request, record and byte."""
    counts = [{"records": r["records"], "record_bytes": r["records"] * r["size"], "requests": r["request-total"],
               "bytes": r["outgoing-byte-total"]} for r in runs]
    col = lambda key: np.array([float(c[key]) for c in counts])                                    # noqa: E731
    worker = {"worker.record_us": col("records"), "worker.byte_ns": col("record_bytes")}
    sender = {"sender.request_us": col("requests"), "sender.record_us": col("records"), "sender.byte_ns": col("bytes")}
    costs = regress(np.array([r["worker_cpu_s"] for r in runs]), worker, _units(worker))
    costs.update(regress(np.array([r["sender_cpu_s"] for r in runs]), sender, _units(sender)))
    return costs


# Where each cost goes in a profile: the machine's (hardware:) or the Java client's (clients: java:)
CLIENT_PREFIXES = ("worker.", "sender.", "compression.", "jvm.", "consumer.")


def profile_sections(costs: dict[str, Cost], defaults: dict[str, float]) -> tuple[dict, dict, dict]:
    """(hardware, java client, standard errors) as a profile writes them: the measured cost per record split over
    PER_RECORD_KEYS; a broker's validate cost under hardware."""
    costs = dict(costs)
    if "worker.record_us" in costs:
        total, share = costs.pop("worker.record_us"), sum(defaults[k] for k in PER_RECORD_KEYS)
        for k in PER_RECORD_KEYS:
            costs[k] = Cost(total.value * defaults[k] / share, total.se * defaults[k] / share, total.runs)
    hardware, java, errors = {}, {}, {}
    for key, cost in costs.items():
        target = java if key.startswith(CLIENT_PREFIXES) and not key.endswith("validate_ns") else hardware
        target[key] = round(cost.value, 4)
        errors[key] = round(cost.se, 4)
    return hardware, java, errors
