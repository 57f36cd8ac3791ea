"""`python -m kafkasim.validation.codec_versions`: what each Java client version's codecs cost and save.

Runs validation/CodecLevels.java with each client release's own jars (kafka-clients and the snappy-java, lz4-java
and zstd-jni it depends on), every codec at its default level, 64 KiB batches of 1 KiB records of random letters
and of text, and writes model/codec_versions.yaml: CPU nanoseconds per uncompressed byte and compressed /
uncompressed size per version, codec and payload, the codec library each version ships, and the factor the model
applies: a library's mean cost over the versions that ship it against the current release's library, where it
differs by more than twice the measurement's noise (gzip's spread: every version runs the JDK's zlib), else 1.
Each release is downloaded once (≈ 5 s); ≈ 10 s a version.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from datetime import date
from pathlib import Path

import yaml

from kafkasim.validation import environment
from kafkasim.validation.codec_levels import DEFAULTS, ROOT, measure
from kafkasim.validation.kafka_dist import CLIENT_RELEASES, KAFKA_VERSION, client_release, ensure_client, ensure_kafka

TABLE = ROOT / "model" / "codec_versions.yaml"
VERSIONS = ("2.2", "2.4", "2.8", "3.2", "3.7", "3.9", "4.3")
CODECS = {**{codec: [level] for codec, level in DEFAULTS.items()}, "snappy": [0]}


PAYLOADS = ("random-letters", "text")


def libraries(release: str) -> dict[str, str]:
    """The codec library each codec of the Java client `release` runs (its jar's name; gzip: the JDK's zlib)."""
    lib = ensure_kafka() if release == KAFKA_VERSION else ensure_client(release)
    jars = {jar.name for jar in lib.glob("*.jar")}
    found = {"gzip": "JDK zlib"}
    for codec, prefix in (("lz4", "lz4-java-"), ("zstd", "zstd-jni-"), ("snappy", "snappy-java-")):
        found[codec] = next((jar[:-4] for jar in sorted(jars) if jar.startswith(prefix)), "?")
    return found


def factors(measured: dict, current: str) -> tuple[float, dict]:
    """The measurement's noise (gzip's relative spread over the versions) and each version's factor per codec:
    its library's mean cost over the versions shipping it ÷ the current version's library's (the geometric mean
    over the payloads), 1 where that is within twice the noise."""
    noise = statistics.pstdev(v["gzip"]["random-letters"][0] for v in measured.values()) / statistics.mean(
        v["gzip"]["random-letters"][0] for v in measured.values())

    def mean_cost(codec: str, library: str, payload: str) -> float:
        return statistics.mean(v[codec][payload][0] for v in measured.values() if v[codec]["library"] == library)
    out = {}
    for version, entry in measured.items():
        out[version] = {}
        for codec in CODECS:
            mine, theirs = entry[codec]["library"], measured[current][codec]["library"]
            ratio = math.exp(statistics.mean(math.log(mean_cost(codec, mine, p) / mean_cost(codec, theirs, p))
                                             for p in PAYLOADS))
            out[version][codec] = round(ratio, 3) if abs(math.log(ratio)) > 2 * noise else 1.0
    return noise, out


def table(versions: list[str], seconds: float, text: Path, progress=print) -> dict:
    out = {"source": f"python -m kafkasim.validation.codec_versions ({date.today().isoformat()}, "
                     f"{environment.cpu_model()}, {seconds:g} s of CPU per codec and payload, 64 KiB batches of "
                     f"1 KiB records; text: {text.name})",
           "versions": {}}
    for n, version in enumerate(versions, 1):
        release = client_release(version)
        rows = measure(seconds, text, levels=CODECS, release=release)
        codecs: dict[str, dict] = {codec: {} for codec in CODECS}
        for row in rows:
            codecs[row["codec"]][row["payload"]] = [float(row["ns_per_byte"]), float(row["ratio"])]
        out["versions"][version] = {"release": release, **codecs}
        progress(f"kafkasim: codec versions: [{n}/{len(versions)}] {release}: " + ", ".join(
            f"{codec} {v['random-letters'][0]:.2f} ns/B" for codec, v in codecs.items()))
    return with_factors(out)


def with_factors(out: dict) -> dict:
    """The table with each version's codec libraries and the model's factors (needs the current release)."""
    current = next(v for v, release in CLIENT_RELEASES.items() if release == KAFKA_VERSION)
    for entry in out["versions"].values():
        for codec, library in libraries(entry["release"]).items():
            entry[codec] = {"library": library, **{k: v for k, v in entry[codec].items() if k != "library"}}
    if current in out["versions"]:
        noise, out["factors"] = factors(out["versions"], current)
        out["noise"] = round(noise, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafkasim.validation.codec_versions", description=__doc__)
    parser.add_argument("--versions", default=",".join(VERSIONS),
                        help=f"client versions, comma-separated (allowed: {', '.join(CLIENT_RELEASES)})")
    parser.add_argument("--seconds", type=float, default=1.0, help="CPU seconds measured per codec and payload")
    parser.add_argument("--text", type=Path, default=ROOT / "README.md", help="the text payload's sample")
    parser.add_argument("--out", type=Path, default=TABLE)
    parser.add_argument("--factors-only", action="store_true",
                        help="keep the measurements in --out, work out its libraries and factors again")
    args = parser.parse_args(argv)
    if args.factors_only:
        _write(args.out, with_factors(yaml.safe_load(args.out.read_text())))
        return 0
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    unknown = [v for v in versions if v not in CLIENT_RELEASES]
    if unknown:
        print(f"kafkasim: error: --versions {','.join(unknown)}: allowed {', '.join(CLIENT_RELEASES)}",
              file=sys.stderr)
        return 2
    _write(args.out, table(versions, args.seconds, args.text,
                           lambda line: print(line, file=sys.stderr, flush=True)))
    return 0


def _write(path: Path, out: dict) -> None:
    path.write_text("# What each Java client version's codecs cost and save at their default levels, measured "
                    "through its own jars\n# (model/codec_levels.py). versions: {version: {codec: {library, payload: "
                    "[CPU ns per uncompressed byte, compressed / uncompressed]}}};\n# factors: {version: {codec: CPU "
                    "per byte against the current release's}}\n"
                    + yaml.safe_dump(out, sort_keys=False, width=120, default_flow_style=None))
    print(f"kafkasim: wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
