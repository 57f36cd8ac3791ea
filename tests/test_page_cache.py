"""The page cache's dirty pages: writeback starts at vm.dirty_background_ratio (or when pages expire), appends wait
once vm.dirty_ratio is reached, so a bigger cache lets a run write above the disk's rate for longer."""
from __future__ import annotations

import pytest

from kafkasim.model.pipes import Pipe
from kafkasim.model.page_cache import PageCache

from conftest import capture, scenario

GIB = 2**30


def _first_wait(cache: PageCache, chunk: int = 10**6, every: float = 0.005) -> float:
    """When appends of `chunk` bytes every `every` seconds first wait for the disk."""
    t = 0.0
    while cache.write(t, chunk) <= 0:
        t += every
    return t


def test_writes_above_the_disk_rate_run_free_until_the_dirty_limit():
    """200 MB/s onto a 50 MB/s disk, 1 GiB of cache: free for bg/in + (limit − bg)/(in − disk) with writeback
    starting at 10 %, for limit/(in − disk) with writeback from the first byte (background 0)."""
    limit, bg, rate_in, disk = 0.2 * GIB, 0.1 * GIB, 200e6, 50e6
    late = _first_wait(PageCache(Pipe("disk", disk), GIB, 20, 1, background_ratio=10, expire=30))
    early = _first_wait(PageCache(Pipe("disk", disk), GIB, 20, 1, background_ratio=0, expire=30))
    assert late == pytest.approx(bg / rate_in + (limit - bg) / (rate_in - disk), rel=0.01)
    assert early == pytest.approx(limit / (rate_in - disk), rel=0.01)
    assert late < early          # the disk idles until the background threshold


def test_a_slow_writer_leaves_the_disk_idle_until_its_pages_expire():
    cache = PageCache(Pipe("disk", 50e6), GIB, 20, 1, background_ratio=10, expire=30)
    for second in range(30):
        cache.write(float(second), 10**6)
    assert cache.disk.busy_seconds == 0
    cache.write(30.0, 10**6)
    assert cache.disk.busy_seconds == pytest.approx(31 * 10**6 / 50e6)


def test_a_broker_with_more_memory_waits_less_for_its_disk():
    """Unthrottled 1 KiB records onto a 20 MB/s disk: 1 GiB of page cache against 64 MiB."""
    base = {"workload.records": 300_000, "workload.record_size": 1024, "producer.acks": "1",
            "producer.batch.size": 65536, "producer.linger.ms": 5, "hardware.disk_mb_s": 20}
    small = capture(scenario(base, **{"hardware.page_cache_gib": 1 / 16})).cluster.brokers[0]
    large = capture(scenario(base, **{"hardware.page_cache_gib": 1})).cluster.brokers[0]
    assert small.disk_wait_seconds > 0 and large.disk_wait_seconds < small.disk_wait_seconds
