"""Apache Kafka's jars from Maven Central, fetched once into the user's cache directory.

Kafka's binary tarball is not on a package registry, but its jars are: a small pom naming `kafka_2.13` (the
broker), `kafka-tools` (ProducerPerformance, TopicCommand) and a log4j2 binding, copied with
`mvn dependency:copy-dependencies`, is a complete Kafka installation (≈ 92 jars, 54 MB, ≈ 60 s from empty).
Older Java clients (a scenario's client.version below 4.3) are fetched the same way, `kafka-clients` alone.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from kafkasim.model.errors import LiveError, UserError
from kafkasim.model.hardware import cache_dir

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


# The release measured for each client line the model knows (model/clients.py JAVA_VERSIONS): the newest patch
# release Maven Central served on 2026-11-23. A 4.3 broker takes clients from 2.1 on (KIP-896).
CLIENT_RELEASES = {
    "2.2": "2.2.2", "2.3": "2.3.1", "2.4": "2.4.1", "2.5": "2.5.1", "2.6": "2.6.3", "2.7": "2.7.2", "2.8": "2.8.2",
    "3.0": "3.0.2", "3.1": "3.1.2", "3.2": "3.2.3", "3.3": "3.3.2", "3.4": "3.4.1", "3.5": "3.5.2", "3.6": "3.6.2",
    "3.7": "3.7.2", "3.8": "3.8.1", "3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.2": "4.2.1",
    "4.3": KAFKA_VERSION,
}

CLIENT_POM = """<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kafkasim: the Java client {release} and its dependencies, copied with mvn dependency:copy-dependencies. -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafkasim</groupId>
  <artifactId>kafka-clients-dist</artifactId>
  <version>{release}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-clients</artifactId><version>{release}</version></dependency>
  </dependencies>
</project>
"""


def client_release(version: str) -> str:
    """The Java client release measured for a scenario's client.version ("2.4" → "2.4.1")."""
    release = CLIENT_RELEASES.get(".".join(version.split(".")[:2]))
    if release is None:
        raise UserError(f"client.version={version} has no Java client to measure; allowed: "
                        f"{', '.join(CLIENT_RELEASES)}")
    return release



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
    return _copied(kafka_home(version), POM.format(kafka=version, log4j=LOG4J_VERSION),
                   f"Apache Kafka {version} jars", "~1 min", quiet)


def ensure_client(release: str, quiet: bool = False) -> Path:
    """The lib/ directory holding an older Java client's jars (kafka-clients and what it needs), downloading them
    on first use. (The current release's client is in ensure_kafka()'s lib/: see client_jars.)"""
    return _copied(cache_dir() / f"kafka-clients-{release}", CLIENT_POM.format(release=release),
                   f"the Java client {release}", "~5 s", quiet)


def _copied(home: Path, pom: str, what: str, takes: str, quiet: bool) -> Path:
    """home/lib: the jars a pom names, with their dependencies, copied by Maven once (home/.complete marks it)."""
    lib = home / "lib"
    done = home / ".complete"
    if done.exists():
        return lib
    require_program("java", "running Kafka")
    mvn = require_program("mvn", f"downloading {what} from Maven Central")
    home.mkdir(parents=True, exist_ok=True)
    (home / "pom.xml").write_text(pom)
    if lib.exists():  # a half-finished earlier download
        shutil.rmtree(lib)
    if not quiet:
        print(f"kafkasim: downloading {what} from Maven Central into {lib} (once, {takes})", flush=True)
    proc = subprocess.run([mvn, "-q", "-B", "-f", str(home / "pom.xml"), "dependency:copy-dependencies",
                           f"-DoutputDirectory={lib}", "-DincludeScope=runtime"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:] or ["no output"]
        raise LiveError(f"downloading {what} with Maven failed: {tail[0]}")
    done.write_text(home.name + "\n")
    return lib


def classpath(lib: Path) -> str:
    # The JVM expands a trailing '*' itself; it is passed unexpanded (no shell) on purpose.
    return str(lib / "*")


def client_jars(lib: Path, release: str) -> list[str]:
    """The classpath of a kafkasim tool that runs the Java client `release`: Kafka's lib/ for the current one; for an
    older one, its own jars and, from Kafka's lib/, only the two that hold the tools code the tool uses
    (ThroughputThrottler, ToolsUtils) and no client classes."""
    if release == KAFKA_VERSION:
        return [classpath(lib)]
    return [classpath(ensure_client(release)), str(lib / f"kafka-server-common-{KAFKA_VERSION}.jar"),
            str(lib / f"kafka-tools-{KAFKA_VERSION}.jar")]


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
                 log_config: Path | None = None, classes: Path | None = None, jars: list[str] | None = None
                 ) -> list[str]:
    """The argv that runs one of Kafka's main classes, as Kafka's own bin/ scripts would (minus the shell), or with
    `classes`, a class of kafkasim's own compiled against Kafka's jars or against `jars` (compiled())."""
    if log_config is None:
        log_config = lib.parent / "tools-log4j2.properties"
        if not log_config.exists():
            log_config.write_text(TOOLS_LOG4J)
    path = os.pathsep.join(([] if classes is None else [str(classes)]) + (jars or [classpath(lib)]))
    return ["java", f"-Xmx{heap}", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={log_config}", "-cp", path, main_class, *args]


def compiled(lib: Path, source: Path, jars: list[str] | None = None) -> Path:
    """The classes directory of one of kafkasim's Java sources (validation/*.java), compiled with javac against
    Kafka's jars (or `jars`) once per content, into the cache. Compiled ahead rather than launched from source: the
    source launcher's in-memory javac runs on the main thread, and its CPU and JIT would count in the measured run."""
    jars = jars or [classpath(lib)]
    digest = hashlib.sha256(source.read_bytes() + os.pathsep.join(jars).encode()).hexdigest()[:12]
    out = lib.parent / "classes" / f"{source.stem}-{digest}"
    if (out / f"{source.stem}.class").exists():
        return out
    javac = require_program("javac", f"compiling {source.name}")
    building = out.with_name(out.name + ".partial")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    proc = subprocess.run([javac, "-cp", os.pathsep.join(jars), "-d", str(building), str(source)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(building, ignore_errors=True)
        first = (proc.stdout + proc.stderr).strip().splitlines()[:1] or ["no output"]
        raise LiveError(f"compiling {source.name} failed: {first[0]}")
    building.rename(out)
    return out
