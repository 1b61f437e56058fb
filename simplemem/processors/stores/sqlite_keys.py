"""How the embedded SQLite files key their rows compactly: a tenant by its number in the file's
``tenants`` table (its name once), a unit id of 32 hex digits (each id the pipeline makes) by its 16
bytes: a name and an id in every row and index entry would be a large share of the two files."""

from __future__ import annotations

import re
import sqlite3

TENANTS_TABLE = "CREATE TABLE IF NOT EXISTS tenants (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)"
NO_TENANT = 0  # the number of a tenant that never wrote to the file: no row has it
# A new file's pages are 16 KB, not 4: a page wastes less on rows that do not fill it, and the file
# is as fast to write and read.
PAGE_SIZE = 16384

_HEX_ID = re.compile(r"[0-9a-f]{32}")


def null_if(value: object, common: object) -> object:
    """NULL (no byte in a row) for the value nearly every row holds: SQL's ``NULLIF``, for a write."""
    return None if value == common else value


def unit_key(uid: str) -> bytes | str:
    """A unit id as stored: 32 hex digits as their 16 bytes, any other id (a caller's) as it is."""
    return bytes.fromhex(uid) if _HEX_ID.fullmatch(uid) else uid


def unit_id(key: bytes | str) -> str:
    """The id a stored key stands for (:func:`unit_key` reversed)."""
    return key.hex() if isinstance(key, bytes) else key


class TenantNumbers:
    """A file's tenant numbers. A number is made on the tenant's first write and never removed or
    given to another tenant (a tenant whose memory is forgotten keeps it), so every process may
    keep the numbers it has read. Not locked: its store calls it under its own lock."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self._known: dict[str, int] = {}

    def number(self, name: str, *, create: bool = False) -> int:
        """The tenant's number (made if ``create``), else :data:`NO_TENANT`. Only a number read
        outside a transaction is kept: inside one it may be a number this transaction made, which a
        rollback takes back and the next new tenant would be given."""
        known = self._known.get(name)
        if known is not None:
            return known
        if create:
            self._db.execute("INSERT OR IGNORE INTO tenants (name) VALUES (?)", (name,))
        row = self._db.execute("SELECT id FROM tenants WHERE name=?", (name,)).fetchone()
        if row is None:
            return NO_TENANT
        if not self._db.in_transaction:
            self._known[name] = int(row[0])
        return int(row[0])
