"""Arithmetic shortcuts give the same results as the mechanism they stand for.

Broker.serve_at_once computes the broker's _connection loop when a request is sent, where nothing but the
connection itself can make the request wait; turning it off (broker.SERVE_AT_ONCE) runs the loop event by event.
"""
import numpy as np
import pytest

from kafkasim.model import broker

from conftest import capture, scenario

ONE_BROKER = {"producer.acks": "1", "producer.batch.size": 16384, "producer.linger.ms": 5,
              "topic.partitions": 3, "workload.records": 20000, "workload.record_size": 256}


def _figures(result) -> dict:
    out = result.to_json(timeline=True)
    out.pop("runtime_seconds")
    return out


@pytest.mark.parametrize("overrides", [
    {},
    {"network.rtt_ms": 5, "producer.max.in.flight.requests.per.connection": 1},
    {"workload.throughput": 50000, "workload.record_size_max": 400},
    {"threads": 3, "producer.compression.type": "lz4"},
    {"hardware.broker.network_request_us": 0},                      # the response leaves after the append
    {"model.max_sim_seconds": 0.0123},                              # the run stops with requests at the broker
], ids=["plain", "rtt-mif1", "throttled-sizes", "threads-lz4", "no-network-cost", "cut-short"])
def test_broker_at_once_matches_the_event_loop(overrides, monkeypatch):
    s = scenario({**ONE_BROKER, **overrides})
    served = []
    original = broker.Broker.serve_at_once
    monkeypatch.setattr(broker.Broker, "serve_at_once", lambda self, conn, request: (
        served.append(request), original(self, conn, request)))
    fast = capture(s)
    assert len(served) > 10
    monkeypatch.setattr(broker, "SERVE_AT_ONCE", False)
    served.clear()
    slow = capture(s)
    assert not served
    assert _figures(fast.result) == _figures(slow.result)
    np.testing.assert_array_equal(fast.result.latencies_ms, slow.result.latencies_ms)
    assert [r.timing for r in fast.requests] == [r.timing for r in slow.requests]
