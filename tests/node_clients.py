"""The JavaScript clients the tests run unmodified (tests/clients/package.json, locked by its
package-lock.json): installed from npm on first use into a cache keyed by the lock, as bin/bootstrap
does for the virtualenv, and linked at tests/clients/node_modules."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

CLIENTS = Path(__file__).resolve().parent / "clients"
LOCKED = ("package.json", "package-lock.json", ".npmrc")
NODE_PACKAGES = ("nodejs", "npm")  # Debian's, when the machine has no node


def cache_root() -> Path:
    return Path(os.environ.get("SIMPLEMEM_CACHE_DIR", Path.home() / ".cache" / "simplemem")) / "node"


def lock_key() -> str:
    digest = hashlib.sha256()
    for name in LOCKED:
        digest.update((CLIENTS / name).read_bytes())
    return digest.hexdigest()[:16]


def ensure_node() -> str:
    """The ``node`` command; Debian's nodejs and npm installed with apt when there is none."""
    found = shutil.which("node")
    if found and shutil.which("npm"):
        return found
    from simplemem.infra.install import apt_install

    apt_install(NODE_PACKAGES, cache_root() / "apt.log")
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node is not on PATH after installing Debian's nodejs")
    return found


def ensure_clients() -> Path:
    """tests/clients/node_modules, installed with ``npm ci`` from the lock when the cache lacks it."""
    ensure_node()
    target = cache_root() / lock_key()
    if not (target / ".complete").exists():
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        for name in LOCKED:
            shutil.copy2(CLIENTS / name, target / name)
        done = subprocess.run(
            ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
            cwd=target,
            capture_output=True,
            timeout=900,
        )
        if done.returncode != 0:
            raise RuntimeError(f"npm ci failed in {target}:\n{done.stderr.decode()[-3000:]}")
        (target / ".complete").touch()
    link = CLIENTS / "node_modules"
    if link.is_symlink() or not link.exists():
        link.unlink(missing_ok=True)
        link.symlink_to(target / "node_modules")
    return link


def run_scenario(
    scenario: str, host: str, keys: tuple[str, str], tag: str
) -> subprocess.CompletedProcess[bytes]:
    """``node run.cjs SCENARIO ...`` with the vendor's telemetry off (nothing leaves the machine)."""
    ensure_clients()
    env = {**os.environ, "MEM0_TELEMETRY": "false"}
    return subprocess.run(
        ["node", "run.cjs", scenario, host, *keys, tag],
        cwd=CLIENTS,
        env=env,
        capture_output=True,
        timeout=300,
    )
