"""One file format per embedded SQLite file before 1.0: a new file is made in it, a file in any other
is refused, never upgraded in place.

A store is derived data: its events (or the scrubbed history in the topics) make it again, and that is
the product's own path (``simplemem ingest``, ``simplemem replay``, lazy migration). Carrying every
earlier layout's upgrade in the code would cost more than rebuilding the few stores written before.
The version is SQLite's ``PRAGMA user_version``, set in the transaction that makes the tables.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

REBUILD_HINT = (
    "rebuild the store: move the folder aside and ingest the events again (`simplemem ingest EVENTS "
    "--store NEW`), or re-derive each tenant from the scrubbed history (`simplemem replay --tenant T "
    "--store NEW`), or let lazy migration import each tenant on its first query "
    "(SIMPLEMEM_LEGACY_HISTORY_DIR); see docs/upgrading.md"
)


class StoreFormatError(Exception):
    """An embedded store file written in another format than this code's: refused, with how to
    rebuild the store (the CLI exits with its own code; an API caller catches this type)."""

    def __init__(self, path: Path, found: int | None, expected: int) -> None:
        written = "an older" if found is None or found < expected else "a newer"
        super().__init__(
            f"{path} is in file format {found if found is not None else 'unknown'}, written by {written} "
            f"simplemem; this one reads format {expected} only: {REBUILD_HINT}"
        )
        self.path = path
        self.found = found
        self.expected = expected


def open_format(db: sqlite3.Connection, path: Path, version: int, schema: str) -> None:
    """Make an empty file's tables by ``schema`` (statements split by ";") in ``version``, in one
    transaction; raise :class:`StoreFormatError` for a file in another version."""
    if db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is not None:
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
        if found != version:
            raise StoreFormatError(path, found, version)
        return
    db.executescript(f"BEGIN;\n{schema};\nPRAGMA user_version={version};\nCOMMIT;")


def check_format(path: Path, version: int) -> None:
    """Refuse ``path`` if it is a file in another version (no file, or an empty one, passes): read-only,
    so a command can refuse a store before it loads any model."""
    if not path.is_file():
        return
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        if db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchone() is None:
            return
        found = int(db.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError:  # not a SQLite file at all
        raise StoreFormatError(path, None, version) from None
    finally:
        db.close()
    if found != version:
        raise StoreFormatError(path, found, version)
