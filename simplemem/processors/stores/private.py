"""Store files only their owner can read: the lexical store holds every tenant's text, the key store
the hashes of every key. A store file is created 0600 before its library opens it (SQLite gives its
journal and WAL files the database's mode), and a store folder the product makes is 0700. A folder
that already exists (a user's ``--store .``) keeps its mode."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
PRIVATE_FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """``path``, made (with its parents) closed to everyone but its owner if it did not exist."""
    if not path.exists():
        path.mkdir(PRIVATE_DIR_MODE, parents=True, exist_ok=True)  # never wider, whatever the umask
        path.chmod(PRIVATE_DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """``path``, created empty and owner-only if it did not exist (its folder as :func:`private_dir`)."""
    private_dir(path.parent)
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE_MODE))
    return path
