"""Compression levels (KIP-390, Java ≥ 3.8) and client versions: what a codec costs and saves beside a profile's.

A profile's `compression.<codec>.byte_ns` is for random letters, it and `.ratio.<payload>` for the codec's default
level and the Java client `compression.client_version`. Another level multiplies them by what that level measured
against the default through the Kafka client's own codec streams (model/codec_levels.yaml, written by `python -m
kafkasim.validation.codec_levels`): its CPU per byte and its ratio, for random letters (perf-test's payload) and for
text. Another Java client version multiplies the CPU per byte by what its codec library measured against the
profile's version's (model/codec_versions.yaml, `python -m kafkasim.validation.codec_versions`: older zstd-jni costs
up to 1.8× more; the ratios did not differ). Another payload multiplies the CPU per byte by what it measured against
random letters at the default level, in one JVM (model/codec_payloads.yaml, `--payloads`): one value repeated
(perf-test before 3.0) costs gzip about a tenth, lz4 and zstd about a third, snappy two thirds.
Simplified: the factors measured on this project's machine are taken to hold on any hardware, and random bytes
and a file's records are taken to cost as random letters do.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from kafkasim.model.scenario_fields import LEVEL_KEYS

TABLE = Path(__file__).resolve().parent / "codec_levels.yaml"
PAYLOADS = Path(__file__).resolve().parent / "codec_payloads.yaml"
VERSIONS = Path(__file__).resolve().parent / "codec_versions.yaml"


@cache
def _table(path: Path = TABLE) -> dict:
    return yaml.safe_load(path.read_text())


def of(s, codec: str) -> tuple[float, float]:
    """The (CPU per byte, compressed size) factors for `codec` at the level scenario `s` sets for it, on its
    payload, and its client version (1, 1 at the default level on random letters and the profile's version)."""
    key = LEVEL_KEYS.get(codec)
    cost, ratio = factors(codec, s.flat()[key] if key else None, s.workload.payload)
    if s.client.library == "java":
        cost *= version_factor(codec, s.client.version, s.hardware["compression.client_version"])
    return cost, ratio


def version_factor(codec: str, version: str, reference: str) -> float:
    """CPU per byte of Java client `version`'s codec against client `reference`'s."""
    measured = _table(VERSIONS)["factors"]
    version, reference = (".".join(v.split(".")[:2]) for v in (version, reference))
    return measured[version][codec] / measured[reference][codec]


def factors(codec: str, level: int | None, payload: str) -> tuple[float, float]:
    """(CPU per byte, compressed size) at `level` (None: the default) on this payload: the level's against the
    default's on the same payload (text, or random letters for the others), times the payload's CPU against random
    letters' at the default level (a profile's byte_ns is random letters'; it has a ratio per payload)."""
    cost, ratio = 1.0, 1.0
    entry = _table().get(codec)
    # (libzstd takes level 0 for its default, 3)
    if entry is not None and level is not None and level != entry["default"] and not (codec == "zstd" and level == 0):
        measured = entry["levels"]
        # zstd's negative levels are measured at a few of them (down to −131072 they all but store the bytes): the
        # nearest measured one stands for the others
        nearest = level if level in measured else min(measured, key=lambda known: abs(known - level))
        column = "text" if payload == "text" else "random-letters"
        (ns, size), (ns_default, size_default) = measured[nearest][column], measured[entry["default"]][column]
        cost, ratio = ns / ns_default, size / size_default
    return cost * payload_factor(codec, payload), ratio


def payload_factor(codec: str, payload: str) -> float:
    """The codec's CPU per byte on `payload` against random letters, at its default level (model/codec_payloads.yaml,
    one JVM: `python -m kafkasim.validation.codec_levels --payloads`); random bytes and a file's records as random
    letters."""
    measured = _table(PAYLOADS).get(codec)
    if measured is None or payload not in measured:
        return 1.0
    return measured[payload][0] / measured["random-letters"][0]
