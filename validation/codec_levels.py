"""`python -m kafkasim.validation.codec_levels`: what each compression level of the Java producer costs and saves.

Runs validation/CodecLevels.java with the Kafka client's own jars (the codec streams the producer writes its batches
through), 64 KiB batches of 1 KiB records, random letters (perf-test's payload), a text sample and one value
repeated (perf-test's before 3.0), every level of gzip, lz4 and zstd, and writes the table the model takes its
level factors from (model/codec_levels.yaml): CPU nanoseconds per uncompressed byte and compressed/uncompressed
size, per codec, level and payload. Takes ≈ 5 min with the default 0.6 s per level (zstd's top levels are slow).
With --payloads: each codec (snappy too) at its default level only, for the payload factors
(model/codec_payloads.yaml).
"""
from __future__ import annotations

import argparse
import csv
import io
import subprocess
import sys
from datetime import date
from pathlib import Path

import yaml

from kafkasim.model.codec_levels import PAYLOADS, TABLE
from kafkasim.model.scenario_fields import FIELDS, LEVEL_KEYS
from kafkasim.validation import environment
from kafkasim.validation.kafka_dist import KAFKA_VERSION, client_jars, compiled, ensure_kafka, java_command

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path(__file__).resolve().parent / "CodecLevels.java"
# Kafka's ranges (KIP-390); zstd's negative levels go down to −131072, measured at a few of them.
LEVELS = {"gzip": [-1, *range(1, 10)], "lz4": list(range(1, 18)), "zstd": [-50, -5, -1, *range(1, 23)]}
DEFAULTS = {codec: FIELDS[key].default for codec, key in LEVEL_KEYS.items()}
# --payloads: each codec at its default level (snappy has no levels), every payload in one JVM
PAYLOAD_LEVELS = {**{codec: [level] for codec, level in DEFAULTS.items()}, "snappy": [0]}


def measure(seconds: float, text: Path, record_size: int = 1024, batch_size: int = 65536,
            levels: dict[str, list[int]] = LEVELS, release: str = KAFKA_VERSION) -> list[dict]:
    """CSV rows (codec, level, payload, ns_per_byte, ratio) measured through the Java client `release`'s codecs."""
    lib = ensure_kafka()
    jars = client_jars(lib, release)
    specs = [f"{codec}:{level}" for codec, some in levels.items() for level in some]
    cmd = java_command(lib, SOURCE.stem, [str(record_size), str(batch_size), str(seconds), str(text), *specs],
                       heap="256m", classes=compiled(lib, SOURCE, jars), jars=jars)
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return list(csv.DictReader(io.StringIO(out)))


def table(rows: list[dict], seconds: float, text: Path, levels: dict[str, list[int]] = LEVELS) -> dict:
    out = {
        "source": f"python -m kafkasim.validation.codec_levels ({date.today().isoformat()}, "
                  f"{environment.cpu_model()}, Kafka {KAFKA_VERSION} clients, "
                  f"{seconds:g} s of CPU per level and payload, 64 KiB batches of 1 KiB records; text: {text.name})",
    }
    for codec in levels:
        measured: dict[int, dict] = {}
        for row in rows:
            if row["codec"] == codec:
                measured.setdefault(int(row["level"]), {})[row["payload"]] = [float(row["ns_per_byte"]),
                                                                             float(row["ratio"])]
        out[codec] = {"default": DEFAULTS.get(codec, 0), "levels": measured}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkasim.validation.codec_levels", description=__doc__)
    parser.add_argument("--seconds", type=float, default=0.6, help="CPU seconds measured per level and payload")
    parser.add_argument("--text", type=Path, default=ROOT / "README.md", help="the text payload's sample")
    parser.add_argument("--payloads", action="store_true",
                        help="each codec at its default level only, for model/codec_payloads.yaml (≈ 20 s)")
    parser.add_argument("--out", type=Path, help="default: model/codec_levels.yaml (codec_payloads.yaml with "
                                                 "--payloads)")
    args = parser.parse_args(argv)
    levels = PAYLOAD_LEVELS if args.payloads else LEVELS
    print(f"kafkasim: measuring {sum(map(len, levels.values()))} levels × 3 payloads "
          f"({args.seconds:g} s each, after a warm-up)...", file=sys.stderr, flush=True)
    rows = measure(args.seconds, args.text, levels=levels)
    out = args.out or (PAYLOADS if args.payloads else TABLE)
    what = ("What each payload costs a codec at its default level, measured in one JVM; the model's payload factors "
            "come\n# from here (model/codec_levels.py). codec: {payload: [CPU ns per uncompressed byte, compressed "
            "/ uncompressed]}" if args.payloads else
            "What each compression level costs and saves, measured; the model's level factors come from here\n# "
            "(model/codec_levels.py). level: {payload: [CPU ns per uncompressed byte, compressed / uncompressed]}")
    data = table(rows, args.seconds, args.text, levels)
    if args.payloads:
        data = {"source": data.pop("source"), **{codec: data[codec]["levels"][DEFAULTS.get(codec, 0)]
                                                  for codec in levels}}
    out.write_text(f"# {what}\n" + yaml.safe_dump(data, sort_keys=False, width=120, default_flow_style=None))
    print(f"kafkasim: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
