"""A slow broker (hardware.brokers.<id>.extra_latency_ms) from scenario to live run: what the network lab emulates,
the run's key, the warm-up of a restarted cluster, and what validation predicts for such a run."""
from types import SimpleNamespace

from kafkasim.calibration.fit import scenario_for
from kafkasim.calibration.runs import Observation
from kafkasim.model.scenario import load_scenario
from kafkasim.validation.measure import measured_settings, warmth
from kafkasim.validation.network import NetworkLab
from kafkasim.validation.targets import emulated, network_of

from conftest import EXAMPLES


def test_a_slow_broker_is_emulated_on_its_own_proxy():
    slow = load_scenario(EXAMPLES / "slow-broker.yaml")
    network = network_of(slow)
    assert network["slow_brokers"] == ((1, 20.0),) and emulated(network)
    even = load_scenario(EXAMPLES / "slow-broker.yaml", ["hardware.brokers.1.extra_latency_ms=0"])
    assert network_of(even)["slow_brokers"] == () and not emulated(network_of(even))
    lab = NetworkLab(rtt_ms=5, slow_brokers=dict(network["slow_brokers"]))
    assert [lab.toxics(b) for b in range(3)] == [[("upstream", 2), ("downstream", 3)],
                                                 [("upstream", 2), ("downstream", 23)],
                                                 [("upstream", 2), ("downstream", 3)]]


def test_the_extra_latency_is_part_of_a_runs_key_and_of_its_prediction():
    slow = load_scenario(EXAMPLES / "slow-broker.yaml")
    settings = measured_settings(slow)
    assert settings["hardware.brokers.1.extra_latency_ms"] == 20.0
    assert not any(k.startswith("hardware.") and "brokers" not in k for k in settings)
    obs = Observation.__new__(Observation)
    obs.scenario, obs.runs, obs.background_cores = settings, [], 0.0
    predicted = scenario_for(obs, "generic-server", {}, 10_000)
    assert predicted.hardware.broker(1)["extra_latency_ms"] == 20.0 and predicted.network.proxy


def test_a_restarted_cluster_on_the_same_ports_is_warmed_again():
    def target(cluster_id):
        return SimpleNamespace(bootstrap="127.0.0.1:19092", nodes=SimpleNamespace(state=SimpleNamespace(
            cluster_id=cluster_id)))
    assert warmth(target("a")) != warmth(target("b"))
    assert warmth(target("a")) == warmth(target("a"))
