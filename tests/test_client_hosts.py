"""cluster.client_hosts: producers (and consumer instances) spread over a few client hosts share their cores and NIC,
as several load-generator processes on one machine do (the published multi-host benchmarks)."""
from __future__ import annotations

import pytest

from kafkasim.model.scenario import ScenarioError

from conftest import capture, scenario

# Six producers of 1 KiB records, unthrottled, onto 3 brokers with 10 GbE; client hosts with 1 GbE.
SIX = {"producers": 6, "workload.records": 30000, "workload.record_size": 1024, "producer.acks": "1",
       "producer.batch.size": 65536, "producer.linger.ms": 5, "topic.partitions": 6, "cluster.brokers": 3,
       "hardware.profile": "generic-server", "hardware.nic_mbit": 1000, "hardware.brokers.0.nic_mbit": 10000,
       "hardware.brokers.1.nic_mbit": 10000, "hardware.brokers.2.nic_mbit": 10000}


def _rate(run) -> float:
    return run.result.steady_records_per_sec


def test_producers_on_one_client_host_share_its_nic():
    apart, together = capture(scenario(SIX)), capture(scenario(SIX, **{"cluster.client_hosts": 1}))
    nic = 1000e6 / 8 / 1024                   # records a second through one 1 GbE NIC (values alone)
    assert nic * 0.95 <= _rate(together) <= nic
    assert _rate(apart) > 3 * _rate(together)
    assert len({id(p.machine) for p in together.producers}) == 1
    assert together.result.verdict["bottleneck"] == "network"
    assert "client-host-0 NIC out" in together.result.verdict["evidence"]


def test_processes_take_the_client_hosts_in_turn_and_share_their_cores():
    """Four worker-bound producers on two client hosts of one core each run at half their own-host rate."""
    flat = {**SIX, "producers": 4, "hardware.nic_mbit": 100000, "hardware.client_cores": 1,
            "hardware.worker.record_us": 20}
    apart, two = capture(scenario(flat)), capture(scenario(flat, **{"cluster.client_hosts": 2}))
    hosts = [p.machine.host.name for p in two.producers]
    assert hosts == ["client-host-0", "client-host-1", "client-host-0", "client-host-1"]
    assert _rate(two) == pytest.approx(_rate(apart) / 2, rel=0.15)


def test_client_hosts_need_clients_apart_from_the_brokers():
    with pytest.raises(ScenarioError, match=r"^cluster.client_hosts=2 needs clients apart from the brokers, not "
                                            r"hardware.colocated_cores=2 \(every process on one host\)$"):
        scenario({"cluster.client_hosts": 2, "hardware.colocated_cores": 2})


def test_a_cpu_limit_on_client_hosts_with_other_load_is_one_line():
    with pytest.raises(ScenarioError, match=r"^hardware.client_cpu_limit=0.5 on the clients' own hosts needs "
                                            r"hardware.background_cores=0 \(others' load there would spend its "
                                            r"quota\), or the clients beside the brokers \(hardware.colocated_cores "
                                            r"> 0\)$"):
        scenario({"hardware.client_cpu_limit": 0.5, "hardware.background_cores": 2})


def test_a_cpu_limit_beside_the_brokers_holds_the_clients_alone():
    """Two cores shared with a broker, the client held to half a core (a container's quota, as `kafkasim measure`
    applies it): the client's CPU is at most half a core, the shared host's cores count its work and the
    broker's, and the client's quota is the verdict's limit when it is spent."""
    flat = {"hardware.colocated_cores": 2, "workload.throughput": -1, "workload.records": 100000}
    free, limited = capture(scenario(flat)), capture(scenario(flat, **{"hardware.client_cpu_limit": 0.5}))
    shared = limited.cluster.brokers[0].host
    [group] = shared.groups
    assert {p.host for p in limited.producers} == {group} and group.parent is shared
    # (within 2 %: the run's steady stretch is repeated to its end at its own rate)
    assert group.busy_seconds <= 0.5 * limited.env.now * 1.02 and group.throttled_seconds > 0
    assert shared.throttled_seconds == 0                      # (the brokers are not held to it)
    assert _rate(limited) < 0.8 * _rate(free)
    assert limited.result.utilisation["host cpu"] > 0.9

