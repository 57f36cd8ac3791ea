"""TLS: what encrypting each flow costs in the model, how `calibrate host` measures it, and how a live run gets it."""
from __future__ import annotations

import numpy as np
import pytest

from kafkasim.calibration.host_costs import tls_costs
from kafkasim.model.errors import UserError
from kafkasim.model.simulate import simulate
from kafkasim.validation import tls
from kafkasim.validation.cluster import SSL_OFFSET, Cluster
from kafkasim.validation.consumerperf import consumer_properties
from kafkasim.validation.targets import private_tls

from conftest import capture, scenario

# a 2-core host shared by client and broker, CPU-bound: what TLS costs shows in the rate (TLS's costs a byte set)
COSTS = {"hardware.sender.tls_byte_ns": 3.0, "hardware.broker.tls_read_byte_ns": 3.0,
         "hardware.broker.tls_write_byte_ns": 4.0, "hardware.consumer.tls_byte_ns": 3.0}
SHARED = {"workload.records": 60_000, "workload.record_size": 1024, "producer.batch.size": 65536,
          "producer.linger.ms": 5, "producer.acks": "1", "hardware.profile": "local-2core", **COSTS}


def test_an_encrypting_producer_pays_per_byte_on_its_sender_and_the_brokers_network_thread():
    plain = capture(scenario(SHARED))
    ssl = capture(scenario(SHARED, **{"producer.security.protocol": "ssl"}))
    free = capture(scenario(SHARED, **{"producer.security.protocol": "ssl", "hardware.sender.tls_byte_ns": 0,
                                       "hardware.broker.tls_read_byte_ns": 0}))
    assert ssl.result.perf_test["records_per_sec"] < 0.97 * plain.result.perf_test["records_per_sec"]
    assert free.result.perf_test["records_per_sec"] == pytest.approx(plain.result.perf_test["records_per_sec"])
    [b_plain], [b_ssl] = plain.cluster.brokers, ssl.cluster.brokers
    assert b_ssl.network_busy - b_plain.network_busy > 0.9 * 3.0e-9 * 60_000 * 1024   # tls_read_byte_ns (3 ns) a byte


def test_a_consumer_through_tls_loses_zero_copy_on_the_broker_and_decrypts_on_its_poll_thread():
    read = {"producers": 0, "consumers.groups": 1, "consumers.prefilled_records": 200_000,
            "workload.record_size": 1024, "producer.batch.size": 65536, "hardware.profile": "local-2core",
            "cluster.broker.group.initial.rebalance.delay.ms": 0, **COSTS}
    plain = capture(scenario(read))
    ssl = capture(scenario(read, **{"consumer.security.protocol": "ssl"}))
    [c_plain], [c_ssl] = plain.consumers, ssl.consumers
    nbytes = 200_000 * 1024
    assert c_ssl.busy_seconds - c_plain.busy_seconds == pytest.approx(3.0e-9 * nbytes, rel=0.05)
    [b_plain], [b_ssl] = plain.cluster.brokers, ssl.cluster.brokers
    assert b_ssl.network_busy - b_plain.network_busy == pytest.approx(4.0e-9 * nbytes, rel=0.05)
    rate = lambda r: r.result.consumers[0]["perf_test"]["fetch_records_per_sec"]                   # noqa: E731
    assert rate(ssl) < rate(plain)


def test_replication_through_tls_costs_the_leader_and_every_follower():
    replicated = {**SHARED, "cluster.brokers": 3, "topic.replication.factor": 3, "producer.acks": "all",
                  "hardware.profile": "generic-server"}
    plain, ssl = (capture(scenario(replicated, **{"cluster.broker.security.inter.broker.protocol": p}))
                  for p in ("plaintext", "ssl"))
    copied = plain.cluster.replication.bytes                 # what the followers fetched
    busy = lambda run: sum(h.busy_seconds for h in run.cluster.hosts)                            # noqa: E731
    # the leaders encrypt (tls_write 4 ns) and the followers decrypt (tls_read 3 ns) every byte they copy
    assert busy(ssl) - busy(plain) == pytest.approx(7.0e-9 * copied, rel=0.1)


def _run(id_, tls_, sender, network, reads):
    return {"id": id_, "leader": 1, **({"tls": True} if tls_ else {}),
            "measured": {"bytes": 1e8, "sender_cpu_s": sender, "brokers": [{"network_cpu_s": network}]},
            "consumed": [{"fetch_size": f, "bytes-consumed-total": 1e8, "poll_cpu_s": poll,
                          "brokers": [{"network_cpu_s": out}]} for f, poll, out in reads]}


def test_calibrate_host_takes_what_tls_adds_per_byte_from_each_ssl_run_against_its_plaintext_twin():
    runs = [_run("s512-b64k", False, 0.30, 0.20, [(65536, 0.50, 0.10), (1048576, 0.30, 0.05)]),
            _run("s512-b64k-tls", True, 0.55, 0.50, [(65536, 0.60, 0.45), (1048576, 0.40, 0.40)]),
            _run("other", False, 9.0, 9.0, [])]
    costs = tls_costs(runs)
    assert costs["sender.tls_byte_ns"].value == pytest.approx(2.5)
    assert costs["broker.tls_read_byte_ns"].value == pytest.approx(3.0)
    assert costs["consumer.tls_byte_ns"].value == pytest.approx(1.0)
    assert costs["broker.tls_write_byte_ns"].value == pytest.approx(3.5)
    assert tls_costs([runs[0], runs[2]]) == {}          # no SSL run: nothing measured, the profile keeps defaults


def test_a_private_cluster_serves_tls_clients_one_protocol_and_refuses_sasl():
    base = {"consumers.groups": 1}
    assert private_tls(scenario(base, **{"producer.security.protocol": "ssl", "consumer.security.protocol": "ssl"}))
    assert not private_tls(scenario(base, **{"cluster.broker.security.inter.broker.protocol": "ssl"}))
    with pytest.raises(UserError, match="differ; allowed"):
        private_tls(scenario(base, **{"producer.security.protocol": "ssl"}))
    with pytest.raises(UserError, match="no SASL; allowed: plaintext or ssl"):
        private_tls(scenario(base, **{"producer.security.protocol": "sasl_ssl",
                                      "consumer.security.protocol": "sasl_ssl"}))
    # a consumer-only read does not count the producer's (there is none)
    assert private_tls(scenario(base, **{"producers": 0, "consumers.prefilled_records": 1000,
                                         "consumer.security.protocol": "ssl"}))


def test_a_tls_cluster_has_an_ssl_listener_and_replicates_through_it_when_asked(tmp_path):
    cluster = Cluster(tmp_path / "c", 3, 29092, tls=True, settings={"security.inter.broker.protocol": "ssl"})
    props = dict(line.split("=", 1) for line in cluster._server_properties(0).splitlines())
    assert f"SSL://127.0.0.1:{29092 + SSL_OFFSET}" in props["listeners"].split(",")
    assert props["inter.broker.listener.name"] == "SSL" and "security.inter.broker.protocol" not in props
    assert props["ssl.keystore.type"] == "PEM" and props["ssl.keystore.location"].endswith(tls.KEY_AND_CERT)
    plain = Cluster(tmp_path / "d", 1, 29092)
    props = dict(line.split("=", 1) for line in plain._server_properties(0).splitlines())
    assert "SSL://" not in props["listeners"] and props["inter.broker.listener.name"] == "PLAINTEXT"


def test_the_certificate_is_for_loopback_and_its_key_only_the_owners(tmp_path):
    tls.make_certificate(tmp_path)
    store = tmp_path / tls.KEY_AND_CERT
    assert store.stat().st_mode & 0o077 == 0
    text = store.read_text()
    assert "PRIVATE KEY" in text and "CERTIFICATE" in text
    assert "PRIVATE KEY" not in (tmp_path / tls.CERT).read_text()
    config = tls.client_config(tmp_path).read_text()
    assert "security.protocol=SSL" in config and str(tmp_path / tls.CERT) in config


def test_clients_are_given_security_protocol_only_away_from_plaintext():
    """A user's --command-config may set security.protocol (SASL_SSL): a run at the default passes none."""
    plain = scenario({"consumers.groups": 1})
    ssl = scenario({"consumers.groups": 1, "producer.security.protocol": "ssl", "consumer.security.protocol": "ssl"})
    assert "security.protocol" not in plain.producer_properties()
    assert "security.protocol" not in consumer_properties(plain)
    assert ssl.producer_properties()["security.protocol"] == consumer_properties(ssl)["security.protocol"] == "ssl"
    assert np.isfinite(simulate(ssl).perf_test["records_per_sec"])
