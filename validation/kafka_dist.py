"""Apache Kafka's jars from Maven Central, fetched once into the user's cache directory.

Kafka's binary tarball is not on a package registry, but its jars are: a small pom naming `kafka_2.13` (the
broker), `kafka-tools` (ProducerPerformance, TopicCommand) and a log4j2 binding, copied with
`mvn dependency:copy-dependencies`, is a complete Kafka installation (≈ 92 jars, 54 MB, ≈ 60 s from empty).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from kafkasim.validation.errors import LiveError, UserError

KAFKA_VERSION = "4.3.1"
LOG4J_VERSION = "2.24.3"

POM = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kafkasim: the jars of Apache Kafka {kafka}, copied with mvn dependency:copy-dependencies. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkasim</groupId>
  <artifactId>kafka-dist</artifactId>
  <version>{kafka}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>{kafka}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-slf4j-impl</artifactId><version>{log4j}</version></dependency>
    <dependency><groupId>org.apache.logging.log4j</groupId><artifactId>log4j-core</artifactId><version>{log4j}</version></dependency>
  </dependencies>
</project>
"""


def cache_dir() -> Path:
    """~/.cache/kafkasim, or $XDG_CACHE_HOME/kafkasim."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafkasim"


def require_program(name: str, purpose: str) -> str:
    """The path of an executable on PATH, or a one-line error saying what needs it."""
    path = shutil.which(name)
    if path is None:
        raise UserError(f"'{name}' is not on PATH; {purpose} needs it (install it, e.g. apt-get install "
                        f"{ {'java': 'openjdk-17-jre-headless', 'mvn': 'maven'}.get(name, name) })")
    return path


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    return cache_dir() / f"kafka-{version}"


def ensure_kafka(version: str = KAFKA_VERSION, quiet: bool = False) -> Path:
    """The lib/ directory holding Kafka's jars, downloading them on first use."""
    home = kafka_home(version)
    lib = home / "lib"
    done = home / ".complete"
    if done.exists():
        return lib
    require_program("java", "running Kafka")
    mvn = require_program("mvn", "downloading Kafka's jars from Maven Central")
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(POM.format(kafka=version, log4j=LOG4J_VERSION))
    if lib.exists():  # a half-finished earlier download
        shutil.rmtree(lib)
    if not quiet:
        print(f"kafkasim: downloading Apache Kafka {version} jars from Maven Central into {lib} (once, ~1 min)",
              flush=True)
    proc = subprocess.run([mvn, "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
                           f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        raise LiveError(f"downloading Kafka {version} with Maven failed: {tail[0]}")
    done.write_text(version + "\n")
    return lib


def classpath(lib: Path) -> str:
    # The JVM expands a trailing '*' itself; it is passed unexpanded (no shell) on purpose.
    return str(lib / "*")


TOOLS_LOG4J = """# kafkasim: Kafka's command-line tools log warnings to stderr, keeping stdout for their results.
status = warn
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = stderr
"""


def java_command(lib: Path, main_class: str, args: list[str], heap: str = "512m",
                 log_config: Path | None = None, classes: Path | None = None) -> list[str]:
    """The argv that runs one of Kafka's main classes, as Kafka's own bin/ scripts would (minus the shell), or with
    `classes`, a class of kafkasim's own compiled against Kafka's jars (compiled())."""
    if log_config is None:
        log_config = lib.parent / "tools-log4j2.properties"
        if not log_config.exists():
            log_config.write_text(TOOLS_LOG4J)
    path = classpath(lib) if classes is None else f"{classes}{os.pathsep}{classpath(lib)}"
    return ["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log_config}", "-cp", path, main_class, *args]


def compiled(lib: Path, source: Path) -> Path:
    """The classes directory of one of kafkasim's Java sources (validation/*.java), compiled with javac against
    Kafka's jars once per content, into the cache. Compiled ahead rather than launched from source: the source
    launcher's in-memory javac runs on the main thread, and its CPU and JIT would count in the measured run."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    out = lib.parent / "classes" / f"{source.stem}-{digest}"
    if (out / f"{source.stem}.class").exists():
        return out
    javac = require_program("javac", f"compiling {source.name}")
    building = out.with_name(out.name + ".partial")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    proc = subprocess.run([javac, "-cp", classpath(lib), "-d", str(building), str(source)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        first = (proc.stdout + proc.stderr).strip().splitlines()[:1] or ["no output"]
        raise LiveError(f"compiling {source.name} failed: {first[0]}")
    building.rename(out)
    return out
