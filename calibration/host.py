"""A host's fingerprint (CPU model, cores, speed score) and whether a profile was measured on a host like this one.

The speed score is the rate of a fixed piece of the Java client's hot paths (validation/HostCosts.java --speed):
hosts that report the same CPU model ran the same Kafka configurations 1.4–1.7× apart, so the model name alone
does not say whether a profile's costs hold here. `kafkasim calibrate host` and `kafkasim measure` measure it and
keep this boot's in the cache, where predict, validate, plan and the app read it without measuring.
"""
from __future__ import annotations

import json
import os
import platform
from pathlib import Path

# Two scores within this factor of each other are the same speed: best-of-7 scores of one host varied by up to 5 %
# between calls here; hosts of one CPU model were 1.4–1.7× apart.
SAME_SPEED = 1.10


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict:
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release()}


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return "unknown"


def cache_file() -> Path:
    from kafkasim.model.hardware import cache_dir
    return cache_dir() / "host.json"


def this_host() -> dict | None:
    """This host's fingerprint as last measured since it booted, or None."""
    try:
        data = json.loads(cache_file().read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("boot_id") == boot_id() else None


def remember(fingerprint: dict) -> None:
    path = cache_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**fingerprint, "boot_id": boot_id()}, indent=1) + "\n")


def fingerprint(speed: dict) -> dict:
    """This host's fingerprint from a speed measurement (HostCosts --speed's SPEED line), with the boot it was
    taken in."""
    return {**machine(), "speed_score": round(float(speed["score"]), 1),
            "speed_spread": round(float(speed.get("spread", 0.0)), 3), "boot_id": boot_id()}


def profile_line(profile: str, hardware_profile: dict | None = None) -> str | None:
    """mismatch() of a profile (by name or path) against this host as last measured; None if this host has no
    measured fingerprint yet or the profile cannot be read."""
    from kafkasim.model.hardware import load_profile
    here = this_host()
    if here is None:
        return None
    try:
        data = hardware_profile if hardware_profile is not None else load_profile(profile)
    except ValueError:
        return None
    return mismatch(profile, data.get("host"), here)


def speed_ratio(profile_host: dict | None, other: dict | None) -> float | None:
    """other's speed score ÷ the profile's, where both have one."""
    try:
        return float(other["speed_score"]) / float(profile_host["speed_score"])
    except (TypeError, KeyError, ValueError, ZeroDivisionError):
        return None


def mismatch(profile_name: str, profile_host: dict | None, other: dict | None, other_name: str = "this host"
             ) -> str | None:
    """One line when the host a profile was measured on (its `host:` fingerprint) and `other` (this host, or the
    runs' host) differ in speed beyond the noise; None when they match or either has no speed score. (A profile
    without a fingerprint describes hardware given by hand or fitted elsewhere: there is nothing to compare.) Both
    taken in one boot of one machine are the same host whatever their scores: on one VM the score moved 1.8× within
    90 minutes while the costs `calibrate host` measured moved ≤ 1.3×, and each session's profile predicted the
    other session's runs 5–7 % off (docs/fidelity.md)."""
    if profile_host and other and profile_host.get("boot_id") and profile_host.get("boot_id") == other.get("boot_id"):
        return None
    ratio = speed_ratio(profile_host, other)
    if ratio is None or 1 / SAME_SPEED <= ratio <= SAME_SPEED:
        return None
    from kafkasim.model.hardware import THIS_HOST, this_host_path
    measure = ("`--set hardware.profile=this-host` uses the profile measured here"
               if this_host_path().is_file() and profile_name != THIS_HOST and other_name == "this host"
               else "`kafkasim calibrate host -o PROFILE.yaml` measures this host's costs")
    return (f"kafkasim: warning: {other_name} runs the client's hot paths {ratio:.2f}× as fast as the host profile "
            f"{profile_name} was measured on (speed {other['speed_score']:.0f} against "
            f"{profile_host['speed_score']:.0f}); its costs may be off by as much; {measure}")
