"""TLS for kafkasim's private clusters: a throwaway self-signed certificate for 127.0.0.1, in PEM, so that neither
the brokers nor the clients need a keystore password (Kafka reads PEM stores since 2.7, KIP-651).

The private key stays in the cluster's directory (mode 0600) and is deleted with it; nothing here is a secret a
user gave. A user's own cluster brings its own TLS settings (`--command-config`).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from kafkasim.model.errors import LiveError

KEY_AND_CERT = "broker.pem"      # the brokers' keystore: private key, then certificate
CERT = "ca.pem"                  # every client's (and follower's) truststore: the same certificate


def make_certificate(directory: Path) -> None:
    """A 2-day self-signed RSA certificate for IP 127.0.0.1 (clients verify the host name) in `directory`."""
    if shutil.which("openssl") is None:
        raise LiveError("a TLS cluster needs the openssl command to make its certificate; install it (Debian: "
                        "apt-get install openssl)")
    directory.mkdir(parents=True, exist_ok=True)
    key, cert = directory / "broker.key", directory / CERT
    run = subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                          "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                          "-keyout", str(key), "-out", str(cert)], capture_output=True, text=True)
    if run.returncode != 0:
        raise LiveError(f"openssl could not make the cluster's certificate: {run.stderr.strip()[-300:]}")
    store = directory / KEY_AND_CERT
    store.touch(mode=0o600)
    store.write_text(key.read_text() + cert.read_text())
    key.unlink()


def broker_properties(directory: Path) -> dict[str, str]:
    """A broker's SSL listener's stores."""
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(directory / KEY_AND_CERT),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(directory / CERT)}


def client_properties(directory: Path) -> dict[str, str]:
    """What a client of the SSL listener sets: security.protocol and the truststore."""
    return {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": str(directory / CERT)}


def client_config(directory: Path) -> Path:
    """client_properties as a file, as Kafka's tools take it (--command-config)."""
    path = directory / "client.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in client_properties(directory).items()))
    return path


def client_protocols(sc) -> set[str]:
    """The security.protocol values a scenario's clients use."""
    return {p for p, used in ((sc.producer.security_protocol, sc.producers),
                              (sc.consumer.security_protocol, sc.consumers.groups)) if used}
