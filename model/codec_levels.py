"""Compression levels (KIP-390, Java ≥ 3.8): what a level other than the codec's default costs and saves.

A profile's `compression.<codec>.byte_ns` and `.ratio.<payload>` are for the codec's default level. Another level
multiplies them by what that level measured against the default through the Kafka client's own codec streams
(model/codec_levels.yaml, written by `python -m kafkasim.validation.codec_levels`): its CPU per byte and its ratio,
for random letters (perf-test's payload) and for text. Simplified: the factors measured on this project's machine are
taken to hold on any hardware, and every payload but text is taken to behave as random letters does.
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

import yaml

from kafkasim.model.scenario_fields import LEVEL_KEYS

TABLE = Path(__file__).resolve().parent / "codec_levels.yaml"


@cache
def _table() -> dict:
    return yaml.safe_load(TABLE.read_text())


def of(s, codec: str) -> tuple[float, float]:
    """The factors for `codec` at the level scenario `s` sets for it (1, 1 at the default or without a level)."""
    key = LEVEL_KEYS.get(codec)
    return (1.0, 1.0) if key is None else factors(codec, s.flat()[key], s.workload.payload)


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
