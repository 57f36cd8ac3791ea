"""Network conditions for live runs: brokers and client in two network namespaces joined by a veth pair.

    client ns (10.231.K.2) ──veth, tbf both ways──▶ broker ns (10.231.K.1): toxiproxy :base+300+i
                                                          ──▶ broker i's EXTERNAL listener 127.0.0.1:base+200+i
- bandwidth_mbit: a tbf qdisc on each end of the veth pair (egress both ways);
- rtt_ms: toxiproxy "latency" toxics, half upstream and half downstream; a slow broker's extra latency
  (hardware.brokers.<id>.extra_latency_ms) is added downstream on its proxy alone (what it sends the client). This kernel has no netem, so delay comes
  from a proxy; every emulated run goes through the proxy, with 0 ms when only bandwidth is capped, so runs at
  different RTTs share one path.
Only addresses inside the two namespaces created here are used; destroy() (also registered with atexit) deletes
the namespaces, which takes the veth pair and every address with them.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafkasim.model.errors import LiveError, UserError
from kafkasim.validation.kafka_dist import cache_dir
from kafkasim.validation.runners import last_line

TOXIPROXY_VERSION = "2.5.0"
TOXIPROXY_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
PROXY_OFFSET = 300  # proxy for broker i listens on base+300+i; the broker's EXTERNAL listener is base+200+i
API_PORT = 8474


def ensure_toxiproxy() -> Path:
    """toxiproxy's server, built once with `go install` into the cache (the Go module proxy serves the source)."""
    gobin = cache_dir() / f"toxiproxy-{TOXIPROXY_VERSION}"
    binary = gobin / "server"  # go install names the binary after the package directory
    if binary.exists():
        return binary
    go = shutil.which("go")
    if go is None:
        raise UserError("network.rtt_ms needs toxiproxy, built with Go; 'go' is not on PATH (install golang)")
    gobin.mkdir(parents=True, exist_ok=True)
    print(f"kafkasim: building toxiproxy {TOXIPROXY_VERSION} with go install (once)", file=sys.stderr, flush=True)
    proc = subprocess.run([go, "install", f"{TOXIPROXY_MODULE}@v{TOXIPROXY_VERSION}"], capture_output=True,
                          text=True, env={**os.environ, "GOBIN": str(gobin)}, cwd=gobin)
    if proc.returncode != 0 or not binary.exists():
        raise LiveError(f"building toxiproxy failed: {last_line(proc.stderr)}")
    return binary


def _ip(*args: str, netns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", netns] if netns else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise LiveError(f"network setup step '{' '.join(args)}' failed: {proc.stderr.strip()}")
    return proc


class NetworkLab:
    def __init__(self, rtt_ms: float = 0, bandwidth_mbit: float = 0, tag: str | None = None,
                 slow_brokers: dict[int, float] | None = None):
        self.rtt_ms, self.bandwidth_mbit = rtt_ms, bandwidth_mbit
        self.slow_brokers = slow_brokers or {}
        tag = tag or str(os.getpid() % 100000)
        self.broker_ns, self.client_ns = f"kafkasim-b{tag}", f"kafkasim-c{tag}"
        self.veth_broker, self.veth_client = f"ksb{tag}", f"ksc{tag}"  # interface names: ≤ 15 characters
        subnet = os.getpid() % 250 + 1
        self.broker_ip, self.client_ip = f"10.231.{subnet}.1", f"10.231.{subnet}.2"
        self.proxy: subprocess.Popen | None = None
        self.created = False

    @property
    def client_prefix(self) -> tuple[str, ...]:
        return ("ip", "netns", "exec", self.client_ns)

    def advertised(self, brokers: int, base_port: int) -> list[str]:
        """Where clients reach broker i: its proxy in the broker namespace."""
        return [f"{self.broker_ip}:{base_port + PROXY_OFFSET + i}" for i in range(brokers)]

    def create(self) -> None:
        if os.geteuid() != 0:
            raise UserError("network emulation creates network namespaces and needs root; run as root or set "
                            "network.rtt_ms and network.bandwidth_mbit to 0")
        for program in ("ip", "tc"):
            if shutil.which(program) is None:
                raise UserError(f"network emulation needs '{program}' (apt-get install iproute2)")
        self.binary = ensure_toxiproxy()
        atexit.register(self.destroy)
        self.created = True
        try:
            for ns in (self.broker_ns, self.client_ns):
                _ip("ip", "netns", "add", ns)
                _ip("ip", "link", "set", "lo", "up", netns=ns)
            _ip("ip", "link", "add", self.veth_broker, "type", "veth", "peer", "name", self.veth_client)
            for dev, ns, addr in ((self.veth_broker, self.broker_ns, self.broker_ip),
                                  (self.veth_client, self.client_ns, self.client_ip)):
                _ip("ip", "link", "set", dev, "netns", ns)
                _ip("ip", "addr", "add", f"{addr}/24", "dev", dev, netns=ns)
                _ip("ip", "link", "set", dev, "up", netns=ns)
                if self.bandwidth_mbit:
                    rate_bytes = self.bandwidth_mbit * 1e6 / 8
                    # burst ≥ one 64 KiB GSO segment train; limit = 100 ms of queue at the rate
                    burst = max(int(rate_bytes * 0.005), 65536)
                    _ip("tc", "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{self.bandwidth_mbit:g}mbit",
                        "burst", str(burst), "latency", "100ms", netns=ns)
        except BaseException:
            self.destroy()
            raise

    def start_proxies(self, brokers: int, base_port: int) -> None:
        """Start toxiproxy in the broker namespace, one proxy per broker, with the RTT split over both directions."""
        config_dir = cache_dir() / "measure-cluster"
        config_dir.mkdir(parents=True, exist_ok=True)
        config = config_dir / f"toxiproxy-{self.broker_ns}.json"
        config.write_text(json.dumps([
            {"name": f"broker{i + 1}", "listen": self.advertised(brokers, base_port)[i],
             "upstream": f"127.0.0.1:{base_port + 200 + i}", "enabled": True} for i in range(brokers)]))
        log = open(config_dir / f"toxiproxy-{self.broker_ns}.log", "ab")
        self.proxy = subprocess.Popen(["ip", "netns", "exec", self.broker_ns, str(self.binary), "-host", "127.0.0.1",
                                       "-port", str(API_PORT), "-config", str(config)],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      start_new_session=True)
        log.close()
        for i in range(brokers):
            for stream, latency in self.toxics(i):
                if latency:
                    self._api_post(f"/proxies/broker{i + 1}/toxics",
                                   {"name": f"latency_{stream}", "type": "latency", "stream": stream,
                                    "attributes": {"latency": latency, "jitter": 0}})

    def toxics(self, broker: int) -> list[tuple[str, int]]:
        """The latency (ms) of broker i's proxy each way: half the RTT each, and a slow broker's extra on the way
        back (what it sends the client)."""
        up_ms = int(self.rtt_ms // 2)
        return [("upstream", up_ms),
                ("downstream", int(round(self.rtt_ms - up_ms + self.slow_brokers.get(broker, 0))))]

    def _api_post(self, path: str, body: dict, attempts: int = 50) -> None:
        # The API listens inside the broker namespace: call it from there.
        script = ("import json,sys,urllib.request as u; r=u.Request(sys.argv[1], data=sys.argv[2].encode(), "
                  "method='POST', headers={'Content-Type': 'application/json'}); u.urlopen(r, timeout=5)")
        url = f"http://127.0.0.1:{API_PORT}{path}"
        for _ in range(attempts):
            if self.proxy is not None and self.proxy.poll() is not None:
                raise LiveError(f"toxiproxy exited (status {self.proxy.returncode}); see its log in the cache")
            if _ip(sys.executable, "-c", script, url, json.dumps(body), netns=self.broker_ns,
                   check=False).returncode == 0:
                return
            time.sleep(0.2)
        raise LiveError(f"toxiproxy API did not accept POST {path}")

    def destroy(self) -> None:
        """Stop the proxy and anything else left in the namespaces, then delete them. Safe to call twice."""
        if self.proxy is not None:
            try:
                os.killpg(self.proxy.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proxy.wait()
            self.proxy = None
        if not self.created:
            return
        for ns in (self.broker_ns, self.client_ns):
            pids = _ip("ip", "netns", "pids", ns, check=False).stdout.split()
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _ip("ip", "netns", "del", ns, check=False)
        _ip("ip", "link", "del", self.veth_broker, check=False)  # only if the move into a namespace never happened
        self.created = False
