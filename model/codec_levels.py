"""Compression levels (KIP-390, Java ≥ 3.8) and client versions: what a codec costs and saves beside a profile's.

A profile's `compression.<codec>.byte_ns` and `.ratio.<payload>` are for the codec's default level and for the Java
client `compression.client_version`. Another level multiplies them by what that level measured against the default
through the Kafka client's own codec streams (model/codec_levels.yaml, written by `python -m
kafkasim.validation.codec_levels`): its CPU per byte and its ratio, for random letters (perf-test's payload) and for
text. Another Java client version multiplies the CPU per byte by what its codec library measured against the
profile's version's (model/codec_versions.yaml, `python -m kafkasim.validation.codec_versions`: older zstd-jni costs
up to 1.8× more; the ratios did not differ). Simplified: the factors measured on this project's machine are taken to
hold on any hardware, and every payload but text is taken to behave as random letters does.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from kafkasim.model.scenario_fields import LEVEL_KEYS

TABLE = Path(__file__).resolve().parent / "codec_levels.yaml"
VERSIONS = Path(__file__).resolve().parent / "codec_versions.yaml"


@cache
def _table(path: Path = TABLE) -> dict:
    return yaml.safe_load(path.read_text())


def of(s, codec: str) -> tuple[float, float]:
    """The (CPU per byte, compressed size) factors for `codec` at the level scenario `s` sets for it and its client
    version (1, 1 at the default level and the profile's version)."""
    key = LEVEL_KEYS.get(codec)
    cost, ratio = (1.0, 1.0) if key is None else factors(codec, s.flat()[key], s.workload.payload)
    if s.client.library == "java":
        cost *= version_factor(codec, s.client.version, s.hardware["compression.client_version"])
    return cost, ratio


def version_factor(codec: str, version: str, reference: str) -> float:
    """CPU per byte of Java client `version`'s codec against client `reference`'s."""
    measured = _table(VERSIONS)["factors"]
    version, reference = (".".join(v.split(".")[:2]) for v in (version, reference))
    return measured[version][codec] / measured[reference][codec]


def factors(codec: str, level: int, payload: str) -> tuple[float, float]:
    """(CPU per byte, compressed size) of `level` relative to the codec's default, for this payload."""
    entry = _table().get(codec)
    # (libzstd takes level 0 for its default, 3)
    if entry is None or level == entry["default"] or (codec == "zstd" and level == 0):
        return 1.0, 1.0
    measured = entry["levels"]
    # zstd's negative levels are measured at a few of them (down to −131072 they all but store the bytes): the
    # nearest measured one stands for the others
    nearest = level if level in measured else min(measured, key=lambda known: abs(known - level))
    column = "text" if payload == "text" else "random-letters"
    (ns, ratio), (ns_default, ratio_default) = measured[nearest][column], measured[entry["default"]][column]
    return ns / ns_default, ratio / ratio_default
