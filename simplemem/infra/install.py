"""Installing what the services need, on first use: Debian packages, Java, Maven jars, uv, kcat.

These machines reach package registries only (no Docker engine, no download of a prebuilt server), so
every service is assembled from registry packages by the launcher itself, and a fresh machine needs no
setup step beyond ``simplemem infra up``. Whatever is slow to fetch (jars, the Milvus venv) is cached
outside the repo (``InfraSettings.infra_cache_dir``, and Maven's own ``~/.m2``), so only the first run on a
machine downloads. Installs of one thing by concurrent launchers are serialised by file locks.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from simplemem.infra.errors import InfraError, log_tail
from simplemem.infra.settings import InfraSettings

log = logging.getLogger("simplemem.infra.install")

APT_LOCK = Path("/tmp/simplemem-infra-apt.lock")


def run_logged(argv: Sequence[str], log_path: Path, what: str, env: dict[str, str] | None = None) -> None:
    """Runs a setup command with its output appended to `log_path`; raises InfraError when it fails."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with log_path.open("ab") as out:
        out.write(f"\n$ {' '.join(argv)}\n".encode())
        out.flush()
        code = subprocess.call(
            list(argv), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
        )
    if code != 0:
        raise InfraError(f"{what} failed (exit code {code}); see {log_path}:\n{log_tail(log_path)}")


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock held by whichever process holds the file open (released if it dies)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def apt_install(packages: Sequence[str], log_path: Path) -> None:
    """`apt-get install -y` (as root, or through `sudo -n`), running `apt-get update` first when needed."""
    if shutil.which("apt-get") is None:
        raise InfraError(f"{' '.join(packages)} missing and there is no apt-get to install it")
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = [*sudo, "apt-get", "install", "-y", "--no-install-recommends", *packages]
    what = f"apt-get install {' '.join(packages)}"
    lists = Path("/var/lib/apt/lists")
    have_lists = lists.is_dir() and any(p.name.endswith("_Packages") for p in lists.iterdir())
    log.info("installing Debian packages %s (log: %s)", " ".join(packages), log_path)
    with file_lock(APT_LOCK):
        if not have_lists:
            run_logged([*sudo, "apt-get", "update"], log_path, "apt-get update", env)
        try:
            run_logged(install, log_path, what, env)
        except InfraError:
            if not have_lists:
                raise
            # the package lists may be stale (a version no longer served): refresh them once
            run_logged([*sudo, "apt-get", "update"], log_path, "apt-get update", env)
            run_logged(install, log_path, what, env)


def ensure_java(log_path: Path, need_compiler: bool = False) -> str:
    """The `java` command (17+); installs Debian's OpenJDK 17 when it, or javac, is missing."""
    if shutil.which("java") is None or (need_compiler and shutil.which("javac") is None):
        apt_install(["openjdk-17-jdk-headless"], log_path)
    java = shutil.which("java")
    if java is None:
        raise InfraError(f"java not found after installing it; see {log_path}")
    return java


def ensure_kcat(settings: InfraSettings | None = None) -> str:
    """The `kcat` command (a Kafka client that is not ours, for tests and operators); from Debian."""
    if shutil.which("kcat") is None:
        settings = settings or InfraSettings()
        apt_install(["kcat"], settings.service_dir("kafka") / "kcat-install.log")
    kcat = shutil.which("kcat")
    if kcat is None:
        raise InfraError("kcat not found after installing it")
    return kcat


def maven_libs(pom: Path, prefix: str, settings: InfraSettings, log_path: Path) -> Path:
    """The runtime jars of `pom` in a cache folder keyed by the pom's hash (Maven downloads them once).

    One folder per service: Kafka's and OpenSearch's jackson, netty and log4j versions differ, and a
    JVM started on ``<folder>/*`` must see one version of each.
    """
    digest = hashlib.sha256(pom.read_bytes()).hexdigest()[:16]
    cache = settings.infra_cache_dir.expanduser().resolve()
    libs = cache / f"{prefix}-libs-{digest}"
    if (libs / ".complete").exists():
        return libs
    ensure_java(log_path)
    if shutil.which("mvn") is None:
        apt_install(["maven"], log_path)
    with file_lock(cache / f"{prefix}-libs.lock"):
        if (libs / ".complete").exists():  # another launcher finished it while this one waited
            return libs
        tmp = libs.with_name(f"{libs.name}.tmp{os.getpid()}")
        shutil.rmtree(tmp, ignore_errors=True)
        log.info("%s: resolving jars from Maven Central into %s (log: %s)", prefix, libs, log_path)
        copy = ["dependency:copy-dependencies", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}"]
        run_logged(["mvn", "-B", "-q", "-f", str(pom), *copy], log_path, f"{prefix}: mvn {copy[0]}")
        if not any(tmp.glob("*.jar")):
            raise InfraError(f"{prefix}: maven copied no jars into {tmp}; see {log_path}")
        (tmp / ".complete").write_text(f"{pom}\n")
        shutil.rmtree(libs, ignore_errors=True)
        tmp.rename(libs)
    return libs


def uv_command(log_path: Path) -> list[str]:
    """The command that runs uv (installed with the system Python's pip, as bin/bootstrap does)."""
    found = shutil.which("uv")
    if found:
        return [found]
    python = shutil.which("python3.11") or shutil.which("python3") or sys.executable
    run_logged([python, "-m", "pip", "install", "--quiet", "uv"], log_path, "pip install uv")
    found = shutil.which("uv")
    return [found] if found else [python, "-m", "uv"]
