"""Which messages a unit comes from (``sources``) and which its context quotes (``quotes``): the
link tables, read by message (siblings, forgetting) and written with each unit
(:data:`~simplemem.processors.stores.sqlite_lexical.schema.CONTEXT_LINK_TABLES`: a unit with a context
is linked through it)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import orjson

from simplemem.processors.stores.sqlite_docs import StoredContext, doc_json
from simplemem.processors.stores.sqlite_keys import unit_id
from simplemem.processors.stores.sqlite_lexical.base import SqliteLexicalBase
from simplemem.processors.stores.sqlite_lexical.schema import (
    CONTEXT_LINK_TABLES,
    LINK_FIELDS,
    LINK_TABLES,
    linked_ids,
)
from simplemem.schemas.memory import MemoryUnit


class SqliteProvenance(SqliteLexicalBase):
    def units_from_sources(
        self, tenant_id: str, source_ids: Sequence[str], *, with_context: bool = True
    ) -> list[MemoryUnit]:
        return self._linked_units("sources", tenant_id, source_ids, with_context=with_context)

    def sources_with_units(self, tenant_id: str, source_ids: Sequence[str]) -> set[str]:
        if not source_ids:
            return set()
        marks = ",".join("?" * len(source_ids))
        number = self._number(tenant_id)
        by_context = CONTEXT_LINK_TABLES["sources"]
        with self._lock:
            rows = self._db.execute(
                f"SELECT source_id FROM sources WHERE tenant_id=? AND source_id IN ({marks}) UNION "
                f"SELECT source_id FROM {by_context} WHERE tenant_id=? AND source_id IN ({marks})",
                [number, *source_ids, number, *source_ids],
            ).fetchall()
        return {r[0] for r in rows}

    def units_quoting(self, tenant_id: str, message_ids: Sequence[str]) -> list[MemoryUnit]:
        return self._linked_units("quotes", tenant_id, message_ids)

    def _linked_units(
        self, table: str, tenant_id: str, message_ids: Sequence[str], *, with_context: bool = True
    ) -> list[MemoryUnit]:
        """The tenant's units that ``table`` (sources, quotes) links to these messages, by message
        then as written: a context's link finds all its units, of which those listing none of the
        messages (another message of the same text) are left out."""
        if not message_ids:
            return []
        marks = ",".join("?" * len(message_ids))
        number = self._number(tenant_id)
        by_context = CONTEXT_LINK_TABLES[table]
        with self._lock:
            rows = self._db.execute(
                f"SELECT l.source_id, u.rowid, u.id FROM {table} l JOIN units u ON u.rowid = l.unit "
                f"WHERE l.tenant_id=? AND l.source_id IN ({marks}) UNION "
                f"SELECT l.source_id, u.rowid, u.id FROM {by_context} l JOIN units u "
                f"ON u.context = l.context AND u.tenant_id = l.tenant_id "
                f"WHERE l.tenant_id=? AND l.source_id IN ({marks}) ORDER BY 1, 2",
                [number, *message_ids, number, *message_ids],
            ).fetchall()
        ids = list(dict.fromkeys(unit_id(r[2]) for r in rows))
        wanted = set(message_ids)
        units = self._read_by_ids(tenant_id, ids, with_context=with_context)
        return [u for u in units if wanted.intersection(linked_ids(u, table))]


def link(db: sqlite3.Connection, u: MemoryUnit, number: int, row: int | None, context: int | None) -> None:
    """Insert the unit's rows of ``sources`` and ``quotes`` (one per message id its document
    lists), through its context if it has one."""
    for table in LINK_TABLES:
        into, key = (table, row) if context is None else (CONTEXT_LINK_TABLES[table], context)
        db.executemany(
            f"INSERT OR IGNORE INTO {into} VALUES (?,?,?)",
            [(number, s, key) for s in linked_ids(u, table)],
        )


def unlink_own(db: sqlite3.Connection, u: MemoryUnit, number: int, row: int) -> None:
    """Delete the link rows of a deleted unit without a context: its own."""
    for table in LINK_TABLES:
        db.executemany(
            f"DELETE FROM {table} WHERE tenant_id=? AND source_id=? AND unit=?",
            [(number, s, row) for s in linked_ids(u, table)],
        )


def unlink_context(
    db: sqlite3.Connection,
    u: MemoryUnit,
    number: int,
    context: int,
    opened: StoredContext | None,
    *,
    dropped: bool,
) -> None:
    """Delete the link rows of a deleted unit's context that no other unit of it needs (all of
    them if the context went with the unit); ``opened`` is the context as read for the unit."""
    ids = {table: set(linked_ids(u, table)) for table in LINK_TABLES}
    gone = ids if dropped else _unneeded(db, context, opened, ids)
    for table, by_context in CONTEXT_LINK_TABLES.items():
        db.executemany(
            f"DELETE FROM {by_context} WHERE tenant_id=? AND source_id=? AND context=?",
            [(number, s, context) for s in sorted(gone[table])],
        )


def _unneeded(
    db: sqlite3.Connection, context: int, opened: StoredContext | None, ids: dict[str, set[str]]
) -> dict[str, set[str]]:
    """Of ``ids`` (message ids per link table), those no remaining unit of the context lists. The
    units are read until all are found: a message's statements list the same ones, so mostly one."""
    left = {table: set(found) for table, found in ids.items()}
    for (doc,) in db.execute("SELECT doc FROM units WHERE context=?", (context,)):
        if not any(left.values()):
            break
        fields = orjson.loads(doc_json(doc, opened))
        for table, found in left.items():
            found.difference_update(fields.get(LINK_FIELDS[table], ()))
    return left
