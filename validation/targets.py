"""Which cluster a measurement runs against: the user's (--bootstrap-server), the one `kafkasim cluster up` started,
or one kafkasim starts just for the measurement (needed for network conditions and for a matrix that mixes 1 and 3
brokers). Clusters started here are stopped when the measurement ends, however it ends."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from kafkasim.model.errors import UserError
from kafkasim.model.scenario_fields import FIELDS, kafka_text
from kafkasim.validation import tls
from kafkasim.validation.cluster import TUNED, Cluster, free_base_port
from kafkasim.validation.kafka_dist import cache_dir
from kafkasim.validation.runners import Target, stopping_brokers_error, unreachable

PRIVATE_BASE_PORT = 19092  # clear of `cluster up`'s 9092..


def network_of(sc) -> dict:
    """What the live network must emulate: RTT, a bandwidth cap, and each slow broker's extra latency (a scenario's
    hardware.brokers.<id>.extra_latency_ms: added to everything that broker sends the client)."""
    extra = [(b, sc.hardware.broker(b)["extra_latency_ms"]) for b in range(sc.cluster.brokers)]
    slow = tuple((b, ms) for b, ms in extra if ms > 0)
    return {"rtt_ms": sc.network.rtt_ms, "bandwidth_mbit": sc.network.bandwidth_mbit, "slow_brokers": slow}


def broker_settings(sc) -> dict[str, str]:
    """The scenario's broker properties (cluster.broker.*) away from their defaults and from what kafkasim's clusters
    run with (TUNED), as a cluster kafkasim starts takes them in its server.properties."""
    flat = sc.flat()
    wanted = {key.removeprefix("cluster.broker."): kafka_text(flat[key]) for key, f in sorted(FIELDS.items())
              if key.startswith("cluster.broker.") and key in flat and flat[key] != f.default}
    return {k: v for k, v in wanted.items() if TUNED.get(k) != v}      # (what the cluster runs with anyway)


def emulated(network: dict) -> bool:
    return bool(network["rtt_ms"] or network["bandwidth_mbit"] or network.get("slow_brokers"))


class ClusterPool:
    """At most one private cluster at a time, restarted only when (brokers, network) changes. Each measurement's
    has its own directory and, unless given, the first free block of ports from PRIVATE_BASE_PORT, so two
    measurements at once never touch each other's brokers."""

    def __init__(self, directory: Path | None = None, base_port: int | None = None,
                 command_config: Path | None = None, say=print):
        self.own_directory = directory is None
        self.directory = Path(directory or cache_dir() / f"measure-cluster-{os.getpid()}")
        self.base_port = base_port
        self.command_config = command_config
        self.say = say
        self.current: tuple | None = None
        self.cluster: Cluster | None = None
        self.lab = None
        self.target_: Target | None = None

    def target(self, brokers: int, network: dict, settings: dict[str, str] | None = None,
               encrypted: bool = False, tls_listener: bool = False) -> Target:
        """The private cluster for these brokers, network and broker settings, with an SSL listener if asked (for
        the brokers' replication: cluster.broker.security.inter.broker.protocol); with `encrypted`, every client
        of the measurement uses it."""
        settings = dict(settings or {})
        want = (brokers, network["rtt_ms"], network["bandwidth_mbit"], network.get("slow_brokers", ()),
                tuple(sorted(settings.items())), encrypted, tls_listener)
        if want == self.current and self.target_ is not None:
            return self.target_
        self.close()
        if self.base_port is None:
            self.base_port = free_base_port(PRIVATE_BASE_PORT, 3)
        self.say(f"starting a private {brokers}-broker cluster in {self.directory} on ports {self.base_port}.."
                 + (f" behind {_describe_network(network)}" if emulated(network) else "")
                 + (f" with {', '.join(f'{k}={v}' for k, v in settings.items())}" if settings else ""))
        if emulated(network) and tls_listener:
            raise UserError("network conditions and TLS together are not emulated here; allowed: one of them")
        if emulated(network):
            from kafkasim.validation.network import NetworkLab
            self.lab = NetworkLab(rtt_ms=network["rtt_ms"], bandwidth_mbit=network["bandwidth_mbit"],
                                  slow_brokers=dict(network.get("slow_brokers", ())))
            self.lab.create()
            self.cluster = Cluster(self.directory, brokers, self.base_port, netns=self.lab.broker_ns,
                                   external_advertised=self.lab.advertised(brokers, self.base_port),
                                   settings=settings)
            self.cluster.up(quiet=True)
            self.lab.start_proxies(brokers, self.base_port)
            bootstrap = self.lab.advertised(brokers, self.base_port)[0]
            client_prefix = self.lab.client_prefix
        else:
            self.cluster = Cluster(self.directory, brokers, self.base_port, settings=settings, tls=tls_listener)
            self.cluster.up(quiet=True)
            bootstrap, client_prefix = self.cluster.state.bootstrap, ()
        self.current = want
        state, config = self.cluster.state, self.command_config
        admin_bootstrap = state.bootstrap
        if encrypted:
            bootstrap = admin_bootstrap = state.ssl_bootstrap
            config = tls.client_config(state.tls_directory)
        self.target_ = Target(bootstrap, admin_bootstrap, brokers, client_prefix, state.prefix, config, managed=True,
                              network=dict(network), nodes=self.cluster)
        return self.target_

    def close(self) -> None:
        """Stop the cluster, then the proxies and namespaces; safe to call twice."""
        try:
            if self.cluster is not None:
                self.cluster.down()
                if self.own_directory:           # (a per-measurement directory: nothing to keep once stopped)
                    shutil.rmtree(self.directory, ignore_errors=True)
        finally:
            self.cluster, self.current, self.target_ = None, None, None
            if self.lab is not None:
                lab, self.lab = self.lab, None
                lab.destroy()


def _describe_network(network: dict) -> str:
    parts = []
    if network["rtt_ms"]:
        parts.append(f"+{network['rtt_ms']:g} ms RTT")
    if network["bandwidth_mbit"]:
        parts.append(f"{network['bandwidth_mbit']:g} Mbit/s")
    for broker, ms in network.get("slow_brokers", ()):
        parts.append(f"broker {broker} +{ms:g} ms")
    return " and ".join(parts)


def resolve(sc, bootstrap_server: str | None, command_config: Path | None, pool: ClusterPool) -> Target:
    network = network_of(sc)
    offline = sc.cluster.offline_brokers
    if bootstrap_server:
        if emulated(network):
            raise UserError("network.rtt_ms, network.bandwidth_mbit and a broker's extra_latency_ms can only be "
                            "emulated on a cluster kafkasim starts itself; drop --bootstrap-server or set them to 0")
        if offline:
            raise stopping_brokers_error(sc, "; drop --bootstrap-server or set it to 0")
        why = unreachable(bootstrap_server)
        if why:
            raise UserError(f"--bootstrap-server {bootstrap_server}: no broker answered ({why})")
        return Target(bootstrap_server, bootstrap_server, None, command_config=command_config, network=network)
    running = Cluster.load()
    settings = broker_settings(sc)
    encrypted = private_tls(sc)
    inter = sc.cluster.broker.security_inter_broker_protocol
    # (nodes are stopped only in a private cluster, never in the one `kafkasim cluster up` started for the user)
    if running is not None and not emulated(network) and not offline and running.status()["up"] \
            and running.state.brokers == sc.cluster.brokers and running.state.netns is None \
            and running.state.settings == settings and not encrypted and inter == "plaintext":
        return Target(running.state.bootstrap, running.state.bootstrap, running.state.brokers,
                      command_config=command_config, managed=True, network=network)
    return pool.target(sc.cluster.brokers, network, settings, encrypted, tls_listener=encrypted or inter == "ssl")


def private_tls(sc) -> bool:
    """Whether the clients reach a cluster kafkasim starts through TLS: producer and consumer alike, plaintext or
    ssl (it has no SASL)."""
    clients = tls.client_protocols(sc)
    used = clients | {sc.cluster.broker.security_inter_broker_protocol}
    if any(p.startswith("sasl") for p in used):
        raise UserError(f"security.protocol {'/'.join(sorted(used))}: kafkasim's own clusters have no SASL; allowed: "
                        f"plaintext or ssl (measure your SASL cluster with --bootstrap-server and --command-config)")
    if len(clients) > 1:
        raise UserError("producer.security.protocol and consumer.security.protocol differ; allowed on a cluster "
                        "kafkasim starts: the same, plaintext or ssl (its clients share one listener)")
    return clients == {"ssl"}
