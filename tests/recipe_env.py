"""The recipes' virtualenv: the client's few dependencies and the frameworks of the `recipes` extra
(recipes/requirements.lock), apart from the project's venv so that its default install stays as
it is. Built with uv on first use and cached, keyed by the lock, as bin/bootstrap does."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from simplemem.infra.install import uv_command
from simplemem.schemas.settings import REPO_ROOT

LOCK = REPO_ROOT / "recipes" / "requirements.lock"


def recipes_python() -> Path:
    """The python of the recipes' venv, built when the cache lacks it."""
    key = hashlib.sha256(LOCK.read_bytes()).hexdigest()[:16]
    root = Path(os.environ.get("SIMPLEMEM_CACHE_DIR", Path.home() / ".cache" / "simplemem"))
    venv = root / "venvs" / f"recipes-{key}"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        log = root / "venvs" / f"recipes-{key}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        uv = uv_command(log)
        python = shutil.which("python3.11") or "python3"
        subprocess.run([*uv, "venv", "--quiet", "--python", python, str(venv)], check=True)
        env = {**os.environ, "VIRTUAL_ENV": str(venv)}
        subprocess.run([*uv, "pip", "install", "--quiet", "-r", str(LOCK)], check=True, env=env, timeout=1200)
        (venv / ".complete").touch()
    if not (venv / ".compiled").exists():  # as bin/bootstrap: a process that may not write bytecode
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "compileall", "-q", str(venv / "lib")], check=False
        )
        (venv / ".compiled").touch()
    return venv / "bin" / "python"
