"""A scenario's broker settings (cluster.broker.*) on the clusters kafkasim starts: written into each node's
server.properties, part of a run's stored settings (so its prediction uses them), and a reason to start a cluster
of their own rather than take one running without them."""
from __future__ import annotations

import pytest

from kafkasim.model.scenario import load_scenario
from kafkasim.validation.cluster import TUNED, Cluster
from kafkasim.validation.measure import measured_settings
from kafkasim.validation.targets import broker_settings

from conftest import EXAMPLES


def _scenario(*overrides: str):
    return load_scenario(EXAMPLES / "local-3broker-rf3.yaml", list(overrides))


def test_settings_away_from_the_defaults_reach_every_nodes_properties(tmp_path):
    sc = _scenario("cluster.broker.replica.fetch.min.bytes=65536", "cluster.broker.replica.fetch.wait.max.ms=100",
                   "cluster.broker.group.initial.rebalance.delay.ms=0", "cluster.broker.num.io.threads=8")
    settings = broker_settings(sc)
    # (the delay is what kafkasim's clusters run with anyway, and 8 I/O threads is Kafka's default: neither is new)
    assert settings == {"replica.fetch.min.bytes": "65536", "replica.fetch.wait.max.ms": "100"}
    assert broker_settings(_scenario()) == {}
    cluster = Cluster(tmp_path / "c", 3, 29000, settings=settings)
    for node in range(3):
        lines = cluster._server_properties(node).splitlines()
        assert "replica.fetch.min.bytes=65536" in lines and "replica.fetch.wait.max.ms=100" in lines
        assert f"group.initial.rebalance.delay.ms={TUNED['group.initial.rebalance.delay.ms']}" in lines


def test_a_runs_settings_keep_its_broker_settings_and_leave_the_defaults_out():
    tuned = measured_settings(_scenario("cluster.broker.replica.fetch.min.bytes=65536"))
    assert tuned["cluster.broker.replica.fetch.min.bytes"] == 65536
    assert not any(k.startswith("cluster.broker.") for k in measured_settings(_scenario()))


def test_a_run_on_kafkasims_cluster_records_the_broker_settings_it_ran_with():
    """kafkasim's clusters assign a group's first member at once (group.initial.rebalance.delay.ms 0): a consumer run
    there is predicted with that, not Kafka's 3 s, in which a fresh consumer JVM would have finished compiling. A
    user's cluster is taken as the scenario describes it."""
    from kafkasim.validation.measure import ran_with
    from kafkasim.validation.runners import Target
    settings = measured_settings(_scenario("consumers.groups=1"))
    ours = ran_with(settings, Target("127.0.0.1:9092", "127.0.0.1:9092", 3, managed=True))
    assert ours["cluster.broker.group.initial.rebalance.delay.ms"] == 0
    assert ran_with(settings, Target("10.0.0.1:9092", "10.0.0.1:9092", None)) == settings
    tuned = ran_with({**settings, "cluster.broker.group.initial.rebalance.delay.ms": 250.0},
                     Target("127.0.0.1:9092", "127.0.0.1:9092", 3, managed=True))
    assert tuned["cluster.broker.group.initial.rebalance.delay.ms"] == 250.0     # (the scenario's own, kept)


def test_background_partitions_are_part_of_a_runs_key_and_must_be_idle_live():
    from kafkasim.model.errors import UserError
    from kafkasim.validation.runners import check_supported
    assert not any(k.startswith("cluster.background_") for k in measured_settings(_scenario()))
    idle = _scenario("cluster.background_partitions=500", "cluster.background_bytes=0")
    assert measured_settings(idle)["cluster.background_partitions"] == 500
    check_supported(idle)
    loaded = _scenario("cluster.background_partitions=500")
    with pytest.raises(UserError, match="cluster.background_bytes=1024 with background partitions; allowed: 0"):
        check_supported(loaded)
