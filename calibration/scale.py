"""A server profile derived from a measured one (`kafkasim calibrate scale`): the CPU costs a profile holds,
measured where `calibrate host` ran, scaled to a stated host by its per-core speed against the measured host's
(from a CPU benchmark the user names), with the host's cores. The scaling is written into the profile.

Scaled: every CPU cost (µs or ns per record, byte, batch, request, fetch, partition; the JIT's, a cold Sender's and
a cold consumer's extra CPU, and how long the Sender's lasts) ÷ the ratio. Kept: waits that are not CPU
(broker.handoff_us, rtt_ms, the first send()'s and a connection's set-up, a group join), ratios and counts. Simplified: one ratio for every thread, where a server's
memory, caches and turbo may speed some paths more than others.
"""
from __future__ import annotations

import datetime

from kafkasim.calibration.host_costs import CLIENT_PREFIXES
from kafkasim.model.hardware import HARDWARE_FIELDS, load_profile

NOT_CPU = {"broker.handoff_us"}                             # a wait between threads, not CPU
CPU_BOUND = {"jvm.sender_cold_s"}     # a time the compilers' CPU sets (how long the cold code lasts): scaled too


def cpu_keys() -> list[str]:
    """The hardware keys that are CPU time per unit of work, CPU counted in ms (named *_cpu_ms: the JIT's, a cold
    Sender's or consumer's extra), or a time CPU work sets."""
    return [k for k in HARDWARE_FIELDS
            if (k.endswith(("_us", "_ns")) and k not in NOT_CPU) or k.endswith("_cpu_ms") or k in CPU_BOUND]


def scaled(base: str, cores: int, ratio: float, benchmark: str, name: str) -> dict:
    """Profile `base` with its CPU costs ÷ `ratio` (the stated host's per-core speed ÷ the measured host's, by
    `benchmark`) and `cores` a host, clients and brokers on hosts of their own."""
    if not ratio > 0:
        raise ValueError(f"--speed-ratio {ratio}: expected a number > 0 (the stated host's per-core speed ÷ this "
                         f"profile's host's)")
    if cores < 1:
        raise ValueError(f"--cores {cores}: expected an integer ≥ 1")
    if not benchmark.strip():
        raise ValueError("--benchmark: name the CPU benchmark the speed ratio comes from")
    profile = load_profile(base)
    hardware = dict(profile.get("hardware") or {})
    clients = {lib: dict(keys or {}) for lib, keys in (profile.get("clients") or {"java": {}}).items()}
    for key in cpu_keys():
        if key.startswith(CLIENT_PREFIXES):
            for keys in clients.values():
                keys[key] = round(float(keys.get(key, hardware.get(key, HARDWARE_FIELDS[key].default))) / ratio, 6)
        else:
            hardware[key] = round(float(hardware.get(key, HARDWARE_FIELDS[key].default)) / ratio, 6)
    hardware.update({"colocated_cores": 0, "background_cores": 0.0, "client_cores": cores, "broker_cores": cores})
    host = profile.get("host") or {}
    measured = f"{host.get('cpu', 'its host')} ({host.get('cores', '?')} cores, speed {host.get('speed_score', '?')})"
    return {
        "name": name,
        "description": f"Derived by `kafkasim calibrate scale` from {base}, measured on {measured}: every CPU cost "
                       f"÷ {ratio:g} ({benchmark.strip()}), {cores} cores a host, clients and brokers apart. "
                       f"Network, disk and latencies as stated with --set or as in {base}.",
        "provenance": {"derived_from": base, "measured_on": host, "speed_ratio": ratio,
                       "benchmark": benchmark.strip(), "cores": cores, "scaled_keys": cpu_keys(),
                       "derived_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")},
        "uncertainty": profile.get("uncertainty") or {},
        "hardware": hardware,
        "clients": clients,
    }
