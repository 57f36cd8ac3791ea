"""model.fast_forward: a run completed from its steady state gives the figures of the run simulated to its end.

The fast-forward repeats a settled stretch of the run (model/steady.py); these tests run shipped examples and
scenarios both ways (model.fast_forward true and false) and hold throughput, latency, the producer metrics and the
utilisations together within what one run's own noise moves them by.
"""
import numpy as np
import pytest
import simpy

from kafkasim.model.jvm import Jvm
from kafkasim.model.simulate import simulate
from kafkasim.model.steady import SteadyState

from conftest import capture, example, scenario

RATE, MEAN, TAIL, UTIL = 0.01, 0.05, 0.10, 0.03
# The in-flight window's figure is its fullest connection's share of the run: where a sticky partitioner moves
# between brokers, which connection that is, and by how much, moves from one stretch of the run to the next
# (Kontur V–X: 0.04–0.08 between the repeated stretch and the whole run).
WINDOW_UTIL = 0.08


def both(s):
    fast, slow = simulate(s), simulate(s.replace(**{"model.fast_forward": False}))
    return fast, slow


def _close(fast, slow, mean: float = MEAN) -> None:
    pf, ps = fast.perf_test, slow.perf_test
    assert pf["records_per_sec"] == pytest.approx(ps["records_per_sec"], rel=RATE)
    assert fast.steady_records_per_sec == pytest.approx(slow.steady_records_per_sec, rel=RATE)
    assert pf["avg_latency_ms"] == pytest.approx(ps["avg_latency_ms"], rel=mean, abs=0.5)
    for q in ("p50_ms", "p95_ms", "p99_ms"):
        assert pf[q] == pytest.approx(ps[q], rel=TAIL, abs=1.0), q
    for key in ("batch-size-avg", "records-per-request-avg", "request-latency-avg", "record-queue-time-avg"):
        assert fast.metrics[key] == pytest.approx(slow.metrics[key], rel=mean, abs=0.05), key
    for key, value in slow.utilisation.items():
        tolerance = WINDOW_UTIL if key == "sender in-flight window" else UTIL
        assert fast.utilisation[key] == pytest.approx(value, abs=tolerance), key
    assert fast.verdict["bottleneck"] == slow.verdict["bottleneck"]
    for bf, bs in zip(fast.brokers, slow.brokers):     # (the repeated requests, those created by the run's end)
        for stage, ms in bs["request_time_ms"].items():
            assert bf["request_time_ms"][stage] == pytest.approx(ms, rel=mean, abs=0.05), stage
    assert fast.records_acked == slow.records_acked and fast.records_sent == slow.records_sent
    assert fast.simulated_seconds == pytest.approx(slow.simulated_seconds, rel=RATE)


@pytest.mark.parametrize("path, mean", [
    # acks=all, three brokers: its buffer fills at 7.3 s; judged once its throttle has let every record go (10 s:
    # it sends at its own pace to the end, not catching up), it repeats from 8.7 s
    ("kontur-2020/I.yaml", MEAN),
    ("kontur-2020/IV.yaml", MEAN),            # a queue growing at a steady rate (the talk's 963 ms queue time)
    ("kontur-2020/VI.yaml", MEAN),            # threads sharing a producer
    ("kontur-2020/VIII.yaml", MEAN),          # the same, the sticky partitioner's window moving most
    ("kontur-2020/XI.yaml", MEAN),            # round-robin, record by record
    # throttled, one slow broker: the adaptive partitioner's queue there swings over seconds (repeated from 7.3 s
    # its mean latency came out 9 % low), too much for a stretch's mean wait to be known to 1 %
    ("kip-794/3-adaptive.yaml", MEAN),
    ("localhost/01-default.yaml", MEAN),      # small batches, linger 0, the page cache writing back from 5 s
    ("vm-2core/04-50k-b32768.yaml", MEAN),    # a cold JVM on two shared cores
    ("local-3broker-rf3.yaml", MEAN),
    # throttled, catching up on its schedule after a cold start until ≈ 11 s: repeated from 8.8 s (before it had
    # caught up) its mean latency came out 69 % high
    ("vm-2core/02-50k-b16384.yaml", MEAN),
])
def test_an_example_gives_the_figures_of_the_whole_run_either_way(path, mean):
    fast, slow = both(example(path))
    assert slow.steady_from is None
    _close(fast, slow, mean)


def test_a_settled_run_is_fast_forwarded_from_early_on():
    """localhost/02 (lz4, 100 KB batches): settled once its page cache writes back, at two thirds of the run."""
    fast, slow = both(example("localhost/02-tuned-lz4.yaml"))
    assert fast.steady_from is not None and fast.steady_from < 0.7 * fast.simulated_seconds
    assert fast.runtime_seconds < 0.8 * slow.runtime_seconds
    _close(fast, slow)


def test_a_run_with_nothing_in_flight_at_the_window_ends_is_repeated():
    """vm-2core/01 (2,000 records/s, each acknowledged within a millisecond): every record a window sent is
    acknowledged by its end, and its stretch is judged and repeated all the same."""
    fast, slow = both(example("vm-2core/01-2k.yaml"))
    assert fast.steady_from is not None and fast.steady_from < 0.5 * fast.simulated_seconds
    _close(fast, slow)


def test_a_full_buffers_queue_longer_than_the_windows_reach_is_repeated_once_full():
    """linkedin-2014/4 flat out with 16 MB buffers: each producer's buffer fills at ≈ 0.66 s and its records then
    wait ≈ 220 ms, over a hundred of the 2-ms windows its acknowledgements first ask for: the windows lengthen
    until the marks kept reach back past that wait, and the full buffer's stretch (sends and acknowledgements a
    response's worth at a time) is judged over merged windows and repeated."""
    s = example("linkedin-2014/4-three-producers-rf3-async.yaml",
                **{"producer.buffer.memory": 16 * 2**20, "workload.records": 1500000})
    fast, slow = both(s)
    assert fast.steady_from is not None and fast.steady_from < 0.5 * fast.simulated_seconds
    assert slow.perf_test["p50_ms"] > 200
    _close(fast, slow)


def test_a_queue_growing_at_a_steady_rate_is_repeated_with_its_waits_growing():
    """linkedin-2014/4 as shipped: three producers send ≈ 2.5 M records a second, the brokers acknowledge ≈ 1.85 M,
    and each producer's 64 MB buffer holds the difference to the last send. Its stretch repeats each window's
    sends a window later and their acknowledgements sent ÷ acknowledged windows later: the waits grow as they do
    in the run simulated to its end."""
    fast, slow = both(example("linkedin-2014/4-three-producers-rf3-async.yaml"))
    assert fast.steady_from is not None and fast.steady_from < 0.5 * fast.simulated_seconds
    assert slow.perf_test["p99_ms"] > 1.5 * slow.perf_test["p50_ms"]        # (the waits grow along the run)
    _close(fast, slow)


def test_a_growing_queue_that_would_fill_the_buffer_is_not_repeated_past_it():
    """The same producers with 16 MB buffers: full at ≈ 0.66 s, after which sends wait for memory; the growing
    stretch is not repeated past that (the full buffer's own stretch is, later), so the figures hold."""
    s = example("linkedin-2014/4-three-producers-rf3-async.yaml",
                **{"producer.buffer.memory": 16 * 2**20, "workload.records": 1000000})
    fast, slow = both(s)
    assert fast.steady_from is None or fast.steady_from > 0.66
    _close(fast, slow)


def test_a_consumer_reading_along_repeats_its_polls_and_end_to_end_latency():
    """linkedin-2014/7 at 3M records: one consumer tails the producer from ≈ 0.25 s; once its fetches and polls
    keep pace with the acknowledgements, its polls repeat a stretch later each time with the records a stretch's
    sends on, and its figures are those of the run simulated to its end (its fetch rate within 10 %: it wanders
    ±5 % over seconds)."""
    s = example("linkedin-2014/7-producer-and-consumer.yaml", **{"workload.records": 3000000})
    fast, slow = both(s)
    assert fast.steady_from is not None and fast.steady_from < 0.6 * fast.simulated_seconds
    _close(fast, slow)
    (cf,), (cs,) = fast.consumers, slow.consumers
    assert cf["perf_test"]["records"] == cs["perf_test"]["records"]
    assert cf["perf_test"]["records_per_sec"] == pytest.approx(cs["perf_test"]["records_per_sec"], rel=RATE)
    for q in ("avg", "p50", "p99"):
        assert cf["end_to_end_ms"][q] == pytest.approx(cs["end_to_end_ms"][q], rel=TAIL), q
    assert cf["metrics"]["fetch-rate"] == pytest.approx(cs["metrics"]["fetch-rate"], rel=0.1)
    assert cf["bottleneck"]["name"] == cs["bottleneck"]["name"]


def test_the_senders_cold_cpu_holds_the_repeat_until_it_takes_under_one_percent_of_its_time():
    """jvm.sender_cold_cpu_ms a·(1 − e^(−t/τ)): settled once its rate a/τ·e^(−t/τ) is at most 1 % of a core."""
    jvm = Jvm(simpy.Environment(), None, 0.0, 1.0, 0.0, sender_cold=1.4, sender_cold_s=4.0)
    assert not jvm.settled(10.0)          # 0.35 × e^−2.5 = 2.9 %
    assert jvm.settled(15.0)              # 0.35 × e^−3.75 = 0.8 %


def test_a_run_that_never_settles_is_simulated_to_its_end_unchanged():
    """Too few records to judge a window by: the watcher only looks, and the figures are those without it."""
    s = scenario({"workload.records": 5000})
    fast, slow = both(s)
    assert fast.steady_from is None
    fast_json, slow_json = fast.to_json(timeline=True), slow.to_json(timeline=True)
    for out in (fast_json, slow_json):
        out.pop("runtime_seconds")
        out["scenario"].pop("model.fast_forward")
    assert fast_json == slow_json


def test_under_a_cpu_limit_each_window_is_whole_quota_periods(monkeypatch):
    """A CFS quota is spent and waited for period by period: the watcher marks the run on the periods' boundaries
    (dcos-2018's half-core task, 100 ms periods), never between them."""
    times = []
    mark = SteadyState._mark
    monkeypatch.setattr(SteadyState, "_mark", lambda self: times.append(self.env.now) or mark(self))
    simulate(example("dcos-2018/2-lower-range.yaml"))
    assert len(times) > 5
    assert np.allclose(np.round(np.array(times) / 0.1) * 0.1, times, rtol=0, atol=1e-9)


def test_the_repeated_stretch_continues_each_threads_records_in_order():
    """Each thread's remaining records follow on from the stretch: sends and callbacks rise, none is left out."""
    s = example("kontur-2020/VI.yaml")
    run = capture(s)
    assert run.result.steady_from is not None
    send, done = run.records.send_start, run.records.completed
    assert not np.isnan(send).any() and not np.isnan(done).any()
    assert (done >= send).all()
    for wk in (w for p in run.producers for w in p.workers):
        mine = send[wk.first_id:wk.first_id + wk.count]
        assert (np.diff(mine) >= 0).all()


def test_a_disk_that_cannot_keep_up_holds_the_fast_forward_until_appends_wait_for_it():
    """Appends faster than the disk: once writeback starts its backlog grows to the dirty limit and appends wait
    for the disk, a regime of its own: no repeat before the brokers hold that much dirty data."""
    s = scenario({"workload.records": 400000, "workload.record_size": 1000, "producer.batch.size": 65536,
                  "producer.linger.ms": 5, "hardware.page_cache_gib": 0.25, "hardware.dirty_background_ratio": 10,
                  "hardware.dirty_ratio": 20, "hardware.disk_mb_s": 100})
    run = capture(s)
    assert all(b.page_cache.flushing and b.disk_wait_seconds > 0 for b in run.cluster.brokers)
    if run.result.steady_from is not None:
        written = run.records.send_start < run.result.steady_from
        assert run.records.size[written].sum() > 0.2 * 0.25 * 2**30
    _close(run.result, simulate(s.replace(**{"model.fast_forward": False})))


def test_a_page_cache_that_starts_writing_back_on_the_way_is_extended_in_closed_form():
    """A disk that keeps up: writeback starting later changes nothing the producer sees, so the run repeats from
    before it starts, and each disk ends as busy, as far booked and with as many bytes as in the whole run."""
    s = scenario({"workload.records": 1000000, "workload.record_size": 1000, "producer.batch.size": 65536,
                  "producer.linger.ms": 5, "hardware.page_cache_gib": 2, "hardware.dirty_background_ratio": 10,
                  "hardware.dirty_ratio": 20, "hardware.disk_mb_s": 400})
    fast, slow = capture(s), capture(s.replace(**{"model.fast_forward": False}))
    written_per_second = slow.result.perf_test["records_per_sec"] * 1000
    assert fast.result.steady_from < 0.5 * 0.1 * 2**31 / written_per_second      # (when writeback starts)
    for f, w in zip(fast.cluster.brokers, slow.cluster.brokers):
        assert f.page_cache.flushing and w.page_cache.flushing
        assert f.disk.bytes == pytest.approx(w.disk.bytes, rel=0.005)
        assert f.disk.busy_seconds == pytest.approx(w.disk.busy_seconds, rel=0.005)
        assert f.disk.free_at == pytest.approx(w.disk.free_at, abs=0.01)
    _close(fast.result, slow.result)
