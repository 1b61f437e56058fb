"""Embedded lexical + symbolic store: SQLite FTS5 (Porter stemming) in one persistent file, BM25
scored by the store per tenant.

Tenant scoping is part of every statement: the FTS match itself asks for the tenant's token, and
every lookup joins on ``tenant_id``. In the tables with a row per unit or per link (``units``,
``names``, ``sources``, ``quotes``, ``context_sources``, ``context_quotes``) that column holds the
tenant's number in ``tenants`` and a unit's id is stored as its 16 bytes (:mod:`sqlite_keys`);
``contexts`` keeps the tenant's name. It also keeps the units (the document store,
:mod:`sqlite_docs`), the persons they are about (symbolic filter) and their source message ids
(provenance, forgetting). The person filter also matches a name written in a memory's indexed words
(its text, keywords and date), where the NER model did not tag it.

A unit's ``context`` (the message around it, the question it answers) is stored once per distinct
text, zlib-compressed, in ``contexts``, with its own FTS index: the 40 statements of a long answer
share one row instead of holding 40 copies. A unit refers to its row by rowid (``units.context``);
reads join it back, and BM25 scores a unit by its own words plus its context's (the two scores added).

Both FTS indexes are contentless and keep no positions: which rows hold a term (BM25 as scored here
and the name match need no more; a hit is joined to its row by rowid). A row leaves an index by
FTS5's ``delete`` command with the values it was indexed with: a context's from ``contexts``, a unit's
rebuilt from its document by :func:`_fts_values`. Changing what that function indexes therefore needs a
new file version, whose upgrade rebuilds the index.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import orjson

from simplemem.processors.language.text import query_terms
from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.protocols import (
    MIN_NAME_PREFIX,
    ROLE_WORDS,
    Hit,
    SymbolicFilter,
    day_range,
    index_names,
    search_status,
)
from simplemem.processors.stores.sqlite_bm25 import (
    IDF_SQL,
    fts_term,
    idf,
    matches,
    quote,
    saturation,
    word_count,
)
from simplemem.processors.stores.sqlite_docs import (
    HEADER_MIN_UNITS,
    StoredContext,
    context_text,
    doc_json,
    encode_doc,
    open_context,
    read_unit,
    shared_header,
    stored_context,
    stored_header,
)
from simplemem.processors.stores.sqlite_keys import (
    PAGE_SIZE,
    TENANTS_TABLE,
    TenantNumbers,
    null_if,
    remake_table,
    unit_id,
    unit_key,
)
from simplemem.schemas.memory import MemoryStatus, MemoryUnit

_LAST_CHAR = "\U0010ffff"  # sorts after every character: a prefix's names lie below prefix + this
_SHARED_CONTEXT_VERSION = 4
_CONTENTLESS_CONTEXT_VERSION = 5
_CONTENTLESS_UNITS_VERSION = 6
_NO_ROLE_NAMES_VERSION = 7
_NO_SAID_COLUMN_VERSION = 8
_COMPRESSED_CONTEXTS_VERSION = 9
_LINKS_BY_ROWID_VERSION = 10
_COMPACT_KEYS_VERSION = 11
_NUMBERED_TENANTS_VERSION = 12
_BODY_FIRST_VERSION = 13
_LINKS_BY_CONTEXT_VERSION = 14
_TERMS_ONLY_VERSION = 15
_NULL_DEFAULTS_VERSION = 16
_LATEST_VERSION = _NULL_DEFAULTS_VERSION
# The share of its context's BM25 score a unit gets (its own words count fully). On LoCoMo 0.5 lost
# 0.006 answer recall against 1.0, and 2.0 gained nothing.
CONTEXT_WEIGHT = 1.0
# Matches each FTS side keeps per unit asked for, before filters and the sum (filters may drop some).
SEARCH_REACH = 4
# ``body`` is the first column since version 13: FTS5 marks each term's positions in any other column
# with two bytes, which every (term, row) of the body paid while ``tenant`` came first (both indexes
# 47.6 -> 32.7 MB on the 60 LongMemEval histories; the tenant's token is one term a row).
# Since version 15 both indexes keep which rows hold a term, not where or how often (``detail=none``,
# no sizes): on the 60 LongMemEval histories 33.7 -> 9.6 MB. The search scores BM25 itself
# (:mod:`sqlite_bm25`). The tenant's token is matched anywhere in a row (no column filter: the joins on
# ``tenant_id`` keep the tenants apart).
_FTS_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS units_fts USING fts5(
    body, tenant, content = '', detail = none, columnsize = 0, tokenize = 'porter unicode61'
)"""
_CONTEXTS_FTS_TABLE = """CREATE VIRTUAL TABLE IF NOT EXISTS contexts_fts USING fts5(
    body, tenant, content = '', detail = none, columnsize = 0, tokenize = 'porter unicode61'
)"""
_ACTIVE_SQL = "u.status IS NULL"
_EVENT_END_SQL = "COALESCE(u.event_end, u.event_start)"
# per tenant's token and index (``units``, ``contexts``): its rows and their words, for BM25
_WORD_COUNTS = """CREATE TABLE IF NOT EXISTS word_counts (tenant TEXT NOT NULL, side TEXT NOT NULL,
    rows INTEGER NOT NULL, words INTEGER NOT NULL, PRIMARY KEY (tenant, side)) WITHOUT ROWID"""
# ``tenant_id`` is the tenant's number in ``tenants`` and ``id`` the unit's key (:func:`unit_key`) since
# version 12: 24 MB less on the 60 LongMemEval histories (a name of 13 characters and an id of 32 in
# every unit, its primary key and its link rows).
# Since version 16 the two values nearly every unit holds are NULL, which takes no byte: ``status`` of
# an active unit (its status is in its document too) and ``event_end`` of a unit whose time is one
# day (``event_start``): 1.8 MB on the 60 LongMemEval histories (:data:`_ACTIVE_SQL`, :data:`_EVENT_END_SQL`).
_UNITS = """CREATE TABLE IF NOT EXISTS units (
    id BLOB NOT NULL, tenant_id INTEGER NOT NULL, doc BLOB NOT NULL, status TEXT,
    event_start INTEGER NOT NULL, event_end INTEGER, stated_at REAL NOT NULL, context INTEGER,
    words INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, id)
)"""
_NAMES = """CREATE TABLE IF NOT EXISTS names (tenant_id INTEGER NOT NULL, name TEXT NOT NULL, id BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS names_by_name ON names (tenant_id, name);
CREATE INDEX IF NOT EXISTS names_by_id ON names (tenant_id, id)"""
_SCHEMA = f"""
{_UNITS};
{TENANTS_TABLE};
{_FTS_TABLE};
CREATE TABLE IF NOT EXISTS contexts (tenant_id TEXT NOT NULL, hash TEXT NOT NULL, text NOT NULL,
    words INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, hash));
{_WORD_COUNTS};
{_CONTEXTS_FTS_TABLE};
{_NAMES};
"""
# A unit's messages: ``sources`` the ones it comes from, ``quotes`` the ones its context quotes. A row
# names its unit by the unit's rowid (as the FTS rows do), not its 32-character id: 24 MB less on the
# 60 LongMemEval histories (file version 10 moves an older file's rows). A table is its own index
# (``WITHOUT ROWID``, keyed by message then unit); a unit's rows are found by the message ids its
# document lists, with no index by unit (version 11).
_LINK_TABLES = ("sources", "quotes")
# Since version 14 a unit with a context is linked through it: ``context_sources`` and
# ``context_quotes`` name the context's rowid, once for all the statements of a message that share it
# (sources and quotes 6.2 -> 1.2 MB on the 60 LongMemEval histories). Two messages of the same text
# share a context, so what such a row finds is read and kept only if its document lists the message;
# a row leaves when no unit of its context lists that message any more (:meth:`_unlink_context`).
_CONTEXT_LINK_TABLES = {"sources": "context_sources", "quotes": "context_quotes"}


def _link_table(table: str, key: str = "unit") -> str:
    return f"""CREATE TABLE IF NOT EXISTS {table} (tenant_id INTEGER NOT NULL, source_id TEXT NOT NULL,
    {key} INTEGER NOT NULL, PRIMARY KEY (tenant_id, source_id, {key})) WITHOUT ROWID"""


_CONTEXT_LINKS = "".join(_link_table(t, "context") + ";\n" for t in _CONTEXT_LINK_TABLES.values())
_LINKS = "".join(_link_table(t) + ";\n" for t in _LINK_TABLES) + _CONTEXT_LINKS


# the unit field whose message ids each link table holds
_LINK_FIELDS = {"sources": "source_ids", "quotes": "context_ids"}


def _linked_ids(unit: MemoryUnit, table: str) -> list[str]:
    """The message ids ``table`` (sources, quotes) links the unit to."""
    ids: list[str] = getattr(unit, _LINK_FIELDS[table])
    return ids


def tenant_token(tenant_id: str) -> str:
    """An opaque FTS token for the tenant (tenant ids may hold characters FTS would split)."""
    return "t" + hashlib.sha1(tenant_id.encode("utf-8")).hexdigest()[:20]


def _body(unit: MemoryUnit) -> str:
    parts = [unit.text, " ".join(unit.keywords), unit.event_time or ""]
    return "\n".join(p for p in parts if p)


def _fts_values(unit: MemoryUnit) -> tuple[str, str]:
    """What a unit's FTS row indexes (tenant, body): the same values insert it and delete it."""
    return tenant_token(unit.tenant_id), _body(unit)


def context_hash(text: str) -> bytes:
    """A context's key among its tenant's: 8 bytes of its SHA-256 (a text of 24 hex digits before
    version 16, whose first 16 are these bytes)."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:8]


# a unit's context as one write put it: its rowid and its stored form (none for a unit without one)
_PutContext = tuple[int | None, StoredContext | None]


class SqliteLexicalStore:
    def __init__(self, path: Path) -> None:
        private_file(path)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.create_function("idf", 2, idf, deterministic=True)
        self._db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        # a deleted row's bytes are overwritten, not left in a free page (the right to be forgotten)
        self._db.execute("PRAGMA secure_delete=ON")
        fresh = self._db.execute("SELECT 1 FROM sqlite_master WHERE name='units'").fetchone() is None
        self._word_columns()
        self._db.executescript(_SCHEMA)
        if fresh:  # made in today's layout: no upgrade applies
            self._db.executescript(_LINKS + f"PRAGMA user_version={_LATEST_VERSION};")
        self._lock = threading.Lock()
        self._tenants = TenantNumbers(self._db)
        self._share_contexts()
        self._contentless_contexts()
        self._contentless_units()
        self._no_role_names()
        self._no_said_column()
        self._compressed_contexts()
        self._links_by_rowid()
        self._compact_keys()
        self._db.execute("CREATE INDEX IF NOT EXISTS units_by_context ON units (context)")
        self._numbered_tenants()
        self._body_first_fts()
        self._links_by_context()
        self._terms_only_fts()
        self._null_defaults()

    def _word_columns(self) -> None:
        """The ``words`` columns (version 15) on an older file's tables before any upgrade writes."""
        for table in ("units", "contexts"):
            columns = {r[1] for r in self._db.execute(f"PRAGMA table_info({table})")}
            if columns and "words" not in columns:
                self._db.execute(f"ALTER TABLE {table} ADD COLUMN words INTEGER NOT NULL DEFAULT 0")

    def _terms_only_fts(self) -> None:
        """Version 15: both FTS indexes without positions (:data:`_FTS_TABLE`), each row's length
        in its ``words`` and each tenant's in ``word_counts``. An older file's indexes are rebuilt once."""

        def rebuild() -> None:
            self._rebuild_contexts_fts()
            self._rebuild_units_fts()

        self._upgrade(_TERMS_ONLY_VERSION, rebuild)

    def _null_defaults(self) -> None:
        """Version 16: ``units`` holds NULL for an active status and a one-day event span
        (:data:`_UNITS`), ``contexts`` a context's hash as 8 bytes (:func:`context_hash`). An older
        file's units table is made anew once (rowids kept), its hashes rewritten."""
        db = self._db

        def move() -> None:
            db.create_function("hash_key", 1, lambda h: bytes.fromhex(h[:16]) if isinstance(h, str) else h)
            db.execute("UPDATE contexts SET hash = hash_key(hash)")
            remake_table(
                db,
                "units",
                ("units_by_context",),
                _UNITS,
                "INTO units (rowid, id, tenant_id, doc, status, event_start, event_end, stated_at, context, "
                "words) SELECT rowid, id, tenant_id, doc, NULLIF(status, 'active'), event_start, "
                "NULLIF(event_end, event_start), stated_at, context, words FROM old_units",
            )
            db.execute("CREATE INDEX units_by_context ON units (context)")

        self._upgrade(_NULL_DEFAULTS_VERSION, move)

    def _count_words(self, token: str, side: str, rows: int, words: int) -> None:
        """Add a row (or take one away: negative) to the counts of the tenant's ``token`` in an index;
        the counts of an index the tenant has no row in any more go (a forgotten tenant leaves nothing
        here)."""
        self._db.execute(
            "INSERT INTO word_counts VALUES (?,?,?,?) ON CONFLICT (tenant, side) DO UPDATE "
            "SET rows = rows + excluded.rows, words = words + excluded.words",
            (token, side, rows, words),
        )
        if rows < 0:
            self._db.execute("DELETE FROM word_counts WHERE tenant=? AND side=? AND rows <= 0", (token, side))

    def _upgrade(self, version: int, step: Callable[[], None]) -> None:
        """Run ``step`` on a file older than ``version``, in one transaction that marks it upgraded."""
        db = self._db
        if db.execute("PRAGMA user_version").fetchone()[0] >= version:
            return
        db.execute("BEGIN")
        step()
        db.execute(f"PRAGMA user_version={version}")
        db.execute("COMMIT")

    def _share_contexts(self) -> None:
        """Version 4 keeps each distinct context once (``contexts``); an older file held it in every
        unit's document and FTS row. Move them out once (the FTS rows: :meth:`_contentless_units`)."""
        db = self._db
        columns = {r[1] for r in db.execute("PRAGMA table_info(units)")}
        if not columns & {"ctx", "context"}:  # a file before version 4 (11 renames the column)
            db.execute("ALTER TABLE units ADD COLUMN ctx TEXT")
        by_hash = "context" not in columns  # ``ctx`` names a context by its hash, until version 11

        def move_out() -> None:
            for rowid, uid, tenant, doc in db.execute(
                "SELECT rowid, id, tenant_id, doc FROM units"
            ).fetchall():
                unit = read_unit(uid, tenant, doc, None)
                context, stored = self._put_context(unit)
                if by_hash:
                    ctx = context_hash(unit.context) if unit.context else None
                    db.execute(
                        "UPDATE units SET doc=?, ctx=? WHERE rowid=?", (encode_doc(unit, stored), ctx, rowid)
                    )
                else:
                    db.execute(
                        "UPDATE units SET doc=?, context=? WHERE rowid=?",
                        (encode_doc(unit, stored), context, rowid),
                    )

        self._upgrade(_SHARED_CONTEXT_VERSION, move_out)

    def _contentless_contexts(self) -> None:
        """Version 5 indexes the contexts without a copy of their text (x19.0 -> x17.1 of the
        scrubbed input on the 60 LongMemEval histories); an older file's index is rebuilt once."""
        self._upgrade(_CONTENTLESS_CONTEXT_VERSION, self._rebuild_contexts_fts)

    def _contentless_units(self) -> None:
        """Version 6 indexes the units without a copy of their text (x17.1 -> x13.5 of the scrubbed
        input on the 60 LongMemEval histories). An older file's index is rebuilt once from the unit
        documents: the versions before had a copy (1 also its own rowids, 3 and earlier no ``said``
        column, or the context in every row)."""
        self._upgrade(_CONTENTLESS_UNITS_VERSION, self._rebuild_units_fts)

    def _no_said_column(self) -> None:
        """Version 8 indexes a unit's text once: the column ``said`` indexed it a second time for the
        name match, which now reads ``body`` (its text, keywords and date). An older file's index is
        rebuilt once."""
        self._upgrade(_NO_SAID_COLUMN_VERSION, self._rebuild_units_fts)

    def _compressed_contexts(self) -> None:
        """Version 9 keeps contexts compressed (:func:`stored_context`); an older file's are
        compressed once (their index is unchanged: the same words)."""
        db = self._db

        def compress() -> None:
            rows = db.execute("SELECT rowid, text FROM contexts WHERE typeof(text) = 'text'").fetchall()
            db.executemany(
                "UPDATE contexts SET text=? WHERE rowid=?", [(stored_context(t), r) for r, t in rows]
            )

        self._upgrade(_COMPRESSED_CONTEXTS_VERSION, compress)

    def _links_by_rowid(self) -> None:
        """Version 10: ``sources`` and ``quotes`` name a unit by its rowid. A new file gets the tables;
        an older file's rows (by unit id) are moved once."""
        db = self._db

        def move() -> None:
            self._move_link_tables(
                ("by_source", "by_id"),
                "SELECT o.tenant_id, o.source_id, u.rowid FROM old_{table} o "
                "JOIN units u ON u.tenant_id = o.tenant_id AND u.id = o.id",
            )

        old_tables = "id" in {r[1] for r in db.execute("PRAGMA table_info(sources)")}
        self._upgrade(_LINKS_BY_ROWID_VERSION, move if old_tables else self._create_link_tables)

    def _create_link_tables(self) -> None:
        for table in _LINK_TABLES:  # in the upgrade's transaction (``executescript`` would commit it)
            self._db.execute(_link_table(table))

    def _move_link_tables(self, old_indexes: tuple[str, ...], rows: str) -> None:
        """Make ``sources`` and ``quotes`` anew (:data:`_LINKS`), filled by ``rows``: a SELECT of
        (tenant_id, source_id, unit) from ``old_{table}``, the table as it was."""
        for table in _LINK_TABLES:
            remake_table(
                self._db,
                table,
                tuple(f"{table}_{index}" for index in old_indexes),
                _link_table(table),
                f"OR IGNORE INTO {table} " + rows,
            )

    def _compact_keys(self) -> None:
        """Version 11: a unit names its context by the context's rowid (``context``), not by a
        24-character hash in a ``(tenant_id, ctx)`` index; the link tables are their own index. An
        older file's column and rows are moved once."""
        db = self._db

        def move() -> None:
            if "ctx" in {r[1] for r in db.execute("PRAGMA table_info(units)")}:
                db.execute("ALTER TABLE units ADD COLUMN context INTEGER")
                db.execute(
                    "UPDATE units SET context = (SELECT c.rowid FROM contexts c "
                    "WHERE c.tenant_id = units.tenant_id AND c.hash = units.ctx) WHERE ctx IS NOT NULL"
                )
                db.execute("DROP INDEX IF EXISTS units_by_ctx")
                db.execute("ALTER TABLE units DROP COLUMN ctx")
            if "sources_by_unit" in {r[1] for r in db.execute("PRAGMA index_list(sources)")}:
                self._move_link_tables(
                    ("by_source", "by_unit"), "SELECT tenant_id, source_id, unit FROM old_{table}"
                )

        self._upgrade(_COMPACT_KEYS_VERSION, move)

    def _numbered_tenants(self) -> None:
        """Version 12: the tables with a row per unit or link hold the tenant's number and the unit's
        key (:func:`unit_key`). An older file's tables are made anew (rowids kept: the FTS rows and links
        name units by them)."""
        db = self._db

        def move() -> None:
            self._tenants.number_all(("units", "names", "sources", "quotes"))
            numbered = " FROM old_{table} o JOIN tenants t ON t.name = o.tenant_id"
            remake_table(
                db,
                "units",
                ("units_by_context",),
                _UNITS,
                "INTO units (rowid, id, tenant_id, doc, status, event_start, event_end, stated_at, context) "
                "SELECT o.rowid, unit_key(o.id), t.id, o.doc, o.status, o.event_start, o.event_end, "
                "o.stated_at, o.context" + numbered,
            )
            db.execute("CREATE INDEX units_by_context ON units (context)")
            remake_table(
                db,
                "names",
                ("names_by_name", "names_by_id"),
                _NAMES,
                "INTO names SELECT t.id, o.name, unit_key(o.id)" + numbered,
            )
            self._move_link_tables((), "SELECT t.id, o.source_id, o.unit" + numbered)

        self._upgrade(_NUMBERED_TENANTS_VERSION, move)

    def _body_first_fts(self) -> None:
        """Version 13: both FTS indexes list ``body`` before ``tenant`` (:data:`_FTS_TABLE`). An
        older file's indexes are rebuilt once: a context's from its row, a unit's from its document."""

        def rebuild() -> None:
            self._rebuild_contexts_fts()
            self._rebuild_units_fts()

        self._upgrade(_BODY_FIRST_VERSION, rebuild)

    def _links_by_context(self) -> None:
        """Version 14: a unit with a context is linked to its messages through the context
        (:data:`_CONTEXT_LINK_TABLES`). An older file's rows of such units are moved once."""
        db = self._db

        def move() -> None:
            for table, by_context in _CONTEXT_LINK_TABLES.items():
                db.execute(_link_table(by_context, "context"))
                db.execute(
                    f"INSERT OR IGNORE INTO {by_context} SELECT l.tenant_id, l.source_id, u.context "
                    f"FROM {table} l JOIN units u ON u.rowid = l.unit WHERE u.context IS NOT NULL"
                )
                db.execute(
                    f"DELETE FROM {table} WHERE unit IN (SELECT rowid FROM units WHERE context IS NOT NULL)"
                )

        self._upgrade(_LINKS_BY_CONTEXT_VERSION, move)

    def _number(self, name: str) -> int:
        """The tenant's number in this file (:class:`TenantNumbers`), for a read: it takes the lock
        (a write holds it already and asks ``self._tenants``)."""
        with self._lock:
            return self._tenants.number(name)

    def _rebuild_contexts_fts(self) -> None:
        """``contexts_fts`` made anew from ``contexts``: each context's words under its tenant's token."""
        db = self._db
        db.execute("DROP TABLE contexts_fts")
        db.execute(_CONTEXTS_FTS_TABLE)
        db.execute(_WORD_COUNTS)
        db.execute("DELETE FROM word_counts WHERE side = 'contexts'")
        last = 0  # read in batches by rowid, each read whole before its rows are written
        while batch := db.execute(
            "SELECT rowid, tenant_id, text FROM contexts WHERE rowid > ? ORDER BY rowid LIMIT 1000", (last,)
        ).fetchall():
            for rowid, tenant_id, text in batch:
                body = context_text(text) or ""
                words = word_count(body)
                db.execute("UPDATE contexts SET words=? WHERE rowid=?", (words, rowid))
                self._index_context(rowid, tenant_id, body, words)
            last = batch[-1][0]

    def _rebuild_units_fts(self) -> None:
        """``units_fts`` made anew from the active units' documents, in any layout an upgrade meets."""
        db = self._db
        db.execute("DROP TABLE units_fts")
        db.execute(_FTS_TABLE)
        db.execute(_WORD_COUNTS)
        db.execute("DELETE FROM word_counts WHERE side = 'units'")
        # a file before version 11 names a unit's context by its hash (``ctx``); from version 12 on
        # ``units`` holds the tenant's number (``contexts`` its name) and the id's bytes
        numbered = db.execute("PRAGMA user_version").fetchone()[0] >= _NUMBERED_TENANTS_VERSION
        by_hash = "ctx" in {r[1] for r in db.execute("PRAGMA table_info(units)")}
        join = "c.hash = u.ctx" if by_hash else "c.rowid = u.context"
        if not numbered:
            join = f"c.tenant_id = u.tenant_id AND {join}"
        names = dict(db.execute("SELECT id, name FROM tenants").fetchall()) if numbered else {}
        active = db.execute(
            "SELECT u.rowid, u.id, u.tenant_id, u.doc, c.text FROM units u "
            f"LEFT JOIN contexts c ON {join} WHERE u.status IS NULL OR u.status = ? ORDER BY c.rowid",
            (MemoryStatus.ACTIVE.value,),  # an active unit's status, in the layouts before version 16 too
        )
        opened: dict[bytes | str | None, StoredContext | None] = {}
        lengths: list[tuple[int, int]] = []  # written once the scan of ``units`` is done
        while batch := active.fetchmany(1000):
            for rowid, key, tenant, doc, text in batch:
                if text not in opened:  # a message's statements come together: inflated once
                    opened = {text: open_context(text)}
                name = names[tenant] if numbered else tenant
                unit = read_unit(unit_id(key), name, doc, opened[text])
                words = word_count(_body(unit))
                lengths.append((words, rowid))
                self._index_unit(rowid, unit, words)
        db.executemany("UPDATE units SET words=? WHERE rowid=?", lengths)

    def _no_role_names(self) -> None:
        """Version 7 indexes no speaker's role as a person's name (:func:`index_names`); an older
        file's rows of them are deleted once."""
        db = self._db

        def delete() -> None:
            marks = ",".join("?" * len(ROLE_WORDS))
            db.execute(f"DELETE FROM names WHERE name IN ({marks})", sorted(ROLE_WORDS))

        self._upgrade(_NO_ROLE_NAMES_VERSION, delete)

    def _put_context(
        self, unit: MemoryUnit, put: dict[tuple[str, str], _PutContext] | None = None, *, headed: bool = False
    ) -> _PutContext:
        """The rowid of the unit's context and the context as stored, stored (and indexed) if no unit
        of the tenant has it yet; stored ``headed``, with this unit's :func:`_header`. ``put`` holds
        the contexts one upsert has put already (a long answer's 40 statements share one: hashed,
        compressed and headed once)."""
        if not unit.context:
            return None, None
        key = (unit.tenant_id, unit.context)
        if put is not None and key in put:
            return put[key]
        header = shared_header(unit) if headed else b""
        ctx = context_hash(unit.context)
        words = word_count(unit.context)
        cursor = self._db.execute(
            "INSERT OR IGNORE INTO contexts (tenant_id, hash, text, words) VALUES (?,?,?,?)",
            (unit.tenant_id, ctx, stored_context(unit.context, header), words),
        )
        if cursor.rowcount:
            rowid = int(cursor.lastrowid or 0)
            self._index_context(rowid, unit.tenant_id, unit.context, words)
        else:
            found = self._db.execute(
                "SELECT rowid, text FROM contexts WHERE tenant_id=? AND hash=?", (unit.tenant_id, ctx)
            ).fetchone()
            rowid, header = int(found[0]), stored_header(found[1])
        result = rowid, StoredContext(unit.context, header)
        if put is not None:
            put[key] = result
        return result

    def _drop_context_if_unused(self, tenant_id: str, context: int | None) -> int | None:
        """Delete the context if no unit names it any more; return its rowid if it was deleted."""
        if context is None:
            return None
        db = self._db
        if db.execute("SELECT 1 FROM units WHERE context=? LIMIT 1", (context,)).fetchone():
            return None
        row = db.execute(
            "SELECT rowid, text, words FROM contexts WHERE tenant_id=? AND rowid=?", (tenant_id, context)
        ).fetchone()
        if row is None:
            return None
        self._index_context(row[0], tenant_id, context_text(row[1]) or "", row[2], delete=True)
        db.execute("DELETE FROM contexts WHERE rowid=?", (row[0],))
        return int(row[0])

    def _index_context(
        self, rowid: int, tenant_id: str, body: str, words: int, *, delete: bool = False
    ) -> None:
        """Add a context's row to ``contexts_fts`` and its tenant's counts (or take it out);
        ``words`` is its ``words`` column."""
        self._index("contexts", rowid, tenant_token(tenant_id), body, words, delete=delete)

    def _index_unit(self, rowid: int | None, u: MemoryUnit, words: int, *, delete: bool = False) -> None:
        """Add an active unit's row to ``units_fts`` and its tenant's counts (or take it out), by
        :func:`_fts_values`; ``words`` is its ``words`` column."""
        self._index("units", rowid, *_fts_values(u), words, delete=delete)

    def _index(
        self, side: str, rowid: int | None, token: str, body: str, words: int, *, delete: bool
    ) -> None:
        """One row into the FTS index of ``side`` (units, contexts) and the counts of the tenant's
        ``token``, or out of both (FTS5's ``delete`` command, with the values it was indexed with)."""
        fts = f"{side}_fts"
        columns, values = (
            (f"{fts}, rowid, tenant, body", "'delete',?,?,?") if delete else ("rowid, tenant, body", "?,?,?")
        )
        self._db.execute(f"INSERT INTO {fts} ({columns}) VALUES ({values})", (rowid, token, body))
        sign = -1 if delete else 1
        self._count_words(token, side, sign, sign * words)

    def upsert(self, units: Sequence[MemoryUnit]) -> None:
        if not units:
            return
        with self._lock:
            db = self._db
            db.execute("BEGIN")
            put: dict[tuple[str, str], _PutContext] = {}
            sharing = Counter((u.tenant_id, u.context) for u in units if u.context)
            try:
                for u in units:
                    number = self._tenants.number(u.tenant_id, create=True)
                    unit = unit_key(u.id)
                    dropped = self._delete_one(u.tenant_id, u.id)
                    if dropped is not None:  # the same unit twice in one batch: its context is gone
                        put = {key: done for key, done in put.items() if done[0] != dropped}
                    start, end = day_range(u)
                    stated = datetime.fromisoformat(u.stated_at).timestamp()
                    headed = sharing[(u.tenant_id, u.context or "")] >= HEADER_MIN_UNITS
                    context, stored = self._put_context(u, put, headed=headed)
                    words = word_count(_body(u))
                    cursor = db.execute(
                        "INSERT INTO units (id, tenant_id, doc, status, event_start, event_end, stated_at,"
                        " context, words) VALUES (?,?,?,?,?,?,?,?,?)",
                        (
                            unit,
                            number,
                            encode_doc(u, stored),
                            null_if(search_status(u), MemoryStatus.ACTIVE.value),
                            start,
                            null_if(end, start),
                            stated,
                            context,
                            words,
                        ),
                    )
                    row = cursor.lastrowid
                    if u.status == MemoryStatus.ACTIVE:
                        self._index_unit(row, u, words)
                    db.executemany(
                        "INSERT INTO names VALUES (?,?,?)",
                        [(number, n, unit) for n in index_names(u)],
                    )
                    self._link(u, number, row, context)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise

    def _link(self, u: MemoryUnit, number: int, row: int | None, context: int | None) -> None:
        """Insert the unit's rows of ``sources`` and ``quotes`` (one per message id its document
        lists), through its context if it has one."""
        for table in _LINK_TABLES:
            into, key = (table, row) if context is None else (_CONTEXT_LINK_TABLES[table], context)
            self._db.executemany(
                f"INSERT OR IGNORE INTO {into} VALUES (?,?,?)",
                [(number, s, key) for s in _linked_ids(u, table)],
            )

    def _unlink_own(self, u: MemoryUnit, number: int, row: int) -> None:
        """Delete the link rows of a deleted unit without a context: its own."""
        for table in _LINK_TABLES:
            self._db.executemany(
                f"DELETE FROM {table} WHERE tenant_id=? AND source_id=? AND unit=?",
                [(number, s, row) for s in _linked_ids(u, table)],
            )

    def _unlink_context(
        self, u: MemoryUnit, number: int, context: int, opened: StoredContext | None, *, dropped: bool
    ) -> None:
        """Delete the link rows of a deleted unit's context that no other unit of it needs (all of
        them if the context went with the unit); ``opened`` is the context as read for the unit."""
        ids = {table: set(_linked_ids(u, table)) for table in _LINK_TABLES}
        gone = ids if dropped else self._unneeded(context, opened, ids)
        for table, by_context in _CONTEXT_LINK_TABLES.items():
            self._db.executemany(
                f"DELETE FROM {by_context} WHERE tenant_id=? AND source_id=? AND context=?",
                [(number, s, context) for s in sorted(gone[table])],
            )

    def _unneeded(
        self, context: int, opened: StoredContext | None, ids: dict[str, set[str]]
    ) -> dict[str, set[str]]:
        """Of ``ids`` (message ids per link table), those no remaining unit of the context lists. The
        units are read until all are found: a message's statements list the same ones, so mostly one."""
        left = {table: set(found) for table, found in ids.items()}
        for (doc,) in self._db.execute("SELECT doc FROM units WHERE context=?", (context,)):
            if not any(left.values()):
                break
            fields = orjson.loads(doc_json(doc, opened))
            for table, found in left.items():
                found.difference_update(fields.get(_LINK_FIELDS[table], ()))
        return left

    def _delete_one(self, tenant_id: str, uid: str) -> int | None:
        """Delete a unit and all it indexed; return the rowid of its context if that went with it."""
        db = self._db
        number, unit = self._tenants.number(tenant_id), unit_key(uid)
        row = db.execute(
            f"SELECT u.rowid, u.context, u.doc, u.status, c.text, u.words FROM units u {_JOIN_CONTEXT} "
            "WHERE u.tenant_id=? AND u.id=?",
            (tenant_id, number, unit),
        ).fetchone()
        if row is None:
            return None
        opened = open_context(row[4])
        stored = read_unit(uid, tenant_id, row[2], opened)
        if row[3] != MemoryStatus.ARCHIVED.value:  # an archived unit is not indexed (derived lines are)
            self._index_unit(row[0], stored, row[5], delete=True)
        db.execute("DELETE FROM units WHERE rowid=?", (row[0],))
        dropped = self._drop_context_if_unused(tenant_id, row[1])
        db.execute("DELETE FROM names WHERE tenant_id=? AND id=?", (number, unit))
        if row[1] is None:
            self._unlink_own(stored, number, row[0])
        else:
            self._unlink_context(stored, number, row[1], opened, dropped=dropped is not None)
        return dropped

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            for uid in ids:
                self._delete_one(tenant_id, uid)
            self._db.execute("COMMIT")

    def search(
        self, tenant_id: str, query: str, limit: int, flt: SymbolicFilter, *, read: bool = False
    ) -> list[Hit]:
        """``read`` is not needed here: a unit is read in microseconds, and only those used are."""
        terms = query_terms(query)
        if not terms:
            return []
        # Each FTS side keeps its best matches only (a common word matches thousands of contexts, each
        # shared by dozens of units); the unit side is filtered before its cut, so a date range or a
        # person filter never empties it. Context matches add to the units they reach.
        reach = limit * SEARCH_REACH
        number = self._number(tenant_id)
        with self._lock:
            sizes = self._sizes(tenant_id)
        own_matches, own_args = matches("units_fts", tenant_token(tenant_id), terms)
        ctx_matches, ctx_args = matches("contexts_fts", tenant_token(tenant_id), terms)
        sql = [
            f"WITH own_m(r, t) AS ({own_matches}),",
            f"own_w(t, w) AS ({IDF_SQL.format('own_m')}),",
            f"own AS (SELECT u.rowid AS r, SUM(w.w) * {saturation('u')} AS s FROM own_m m",
            "JOIN own_w w ON w.t = m.t JOIN units u ON u.rowid = m.r WHERE u.tenant_id = ?",
        ]
        args: list[object] = [*own_args, *sizes["units"], number]
        _where_filter(sql, args, flt, tenant_id)
        sql += [
            "GROUP BY u.rowid ORDER BY s DESC LIMIT ?),",
            f"ctx_m(r, t) AS ({ctx_matches}),",
            f"ctx_w(t, w) AS ({IDF_SQL.format('ctx_m')}),",
            f"around AS (SELECT c.rowid AS context, SUM(w.w) * {saturation('c')} AS s FROM ctx_m m",
            "JOIN ctx_w w ON w.t = m.t JOIN contexts c ON c.rowid = m.r AND c.tenant_id = ?",
            "GROUP BY c.rowid ORDER BY s DESC LIMIT ?),",
            "scored AS (SELECT r, s FROM own UNION ALL",
            f"SELECT u.rowid, a.s * {CONTEXT_WEIGHT} FROM around a JOIN units u ON u.context = a.context",
            "WHERE u.tenant_id = ?",
        ]
        args += [reach, *ctx_args, *sizes["contexts"], tenant_id, reach, number]
        _where_filter(sql, args, flt, tenant_id)
        # summed and cut before the ids are read: a context shared by 40 statements adds 40 rows
        sql += [
            "), best AS (SELECT r, SUM(s) AS s FROM scored GROUP BY r ORDER BY s DESC LIMIT ?)",
            "SELECT u.id, b.s FROM best b JOIN units u ON u.rowid = b.r ORDER BY b.s DESC",
        ]
        args.append(limit)
        with self._lock:
            rows = self._db.execute(" ".join(sql), args).fetchall()
        return [Hit(unit_id(key), float(score)) for key, score in rows]

    def _sizes(self, tenant_id: str) -> dict[str, tuple[int, float]]:
        """Per index, the tenant's rows and their mean length (BM25's N and average length)."""
        sizes = {"units": (0, 1.0), "contexts": (0, 1.0)}
        for side, rows, words in self._db.execute(
            "SELECT side, rows, words FROM word_counts WHERE tenant=?", (tenant_token(tenant_id),)
        ):
            sizes[side] = (rows, words / rows if rows > 0 else 1.0)
        return sizes

    def get(self, tenant_id: str, ids: Sequence[str], *, with_context: bool = True) -> list[MemoryUnit]:
        if not ids:
            return []
        marks = ",".join("?" * len(ids))
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"SELECT u.id, u.doc, c.text FROM units u {_JOIN_CONTEXT} WHERE u.tenant_id=? AND u.id IN ({marks})",
                [tenant_id, number, *map(unit_key, ids)],
            ).fetchall()
        by_id = {u.id: u for u in _read_units(rows, tenant_id, with_context=with_context)}
        return [by_id[i] for i in ids if i in by_id]

    def known_names(self, tenant_id: str, candidates: Sequence[str]) -> list[str]:
        """The candidates that name persons in the tenant's memory, with the names they abbreviate
        ("Mel" -> "mel", "melanie"): nicknames are usually prefixes."""
        lowered = sorted({c.lower() for c in candidates if c.strip()})
        if not lowered:
            return []
        # Each candidate as a range of the (tenant, name) index: [c, c + U+10FFFF) holds the names it
        # begins, [c, c + NUL) the name itself. (A LIKE per prefix read every name of the tenant for
        # every window decomposed: 11% of ingestion's main thread on the assistant histories.)
        ranges = [(c, c + (_LAST_CHAR if len(c) >= MIN_NAME_PREFIX else "\0")) for c in lowered]
        bounds = ",".join("(?,?)" for _ in ranges)
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"WITH r(lo, hi) AS (VALUES {bounds}) SELECT DISTINCT n.name FROM r "
                "JOIN names n ON n.tenant_id = ? AND n.name >= r.lo AND n.name < r.hi",
                [*(b for pair in ranges for b in pair), number],
            ).fetchall()
        return sorted(r[0] for r in rows)

    def all_names(self, tenant_id: str, limit: int) -> list[str] | None:
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT name FROM names WHERE tenant_id=? LIMIT ?", (number, limit + 1)
            ).fetchall()
        return None if len(rows) > limit else sorted(r[0] for r in rows)

    def ids_with_names(self, tenant_id: str, ids: Sequence[str], names: Sequence[str]) -> set[str]:
        """The ids among ``ids`` of memories about one of ``names``: in their persons, or named in their
        text."""
        if not ids or not names:
            return set()
        id_marks, name_marks = ",".join("?" * len(ids)), ",".join("?" * len(names))
        number, keys = self._number(tenant_id), [unit_key(i) for i in ids]
        with self._lock:
            rows = self._db.execute(
                f"SELECT id FROM names WHERE tenant_id=? AND id IN ({id_marks}) AND name IN ({name_marks}) "
                # the match once, as a list of rowids: as a join, FTS5 ran it again for every id
                f"UNION SELECT id FROM units WHERE tenant_id=? AND id IN ({id_marks}) "
                "AND rowid IN (SELECT rowid FROM units_fts WHERE units_fts MATCH ?)",
                [
                    number,
                    *keys,
                    *(n.lower() for n in names),
                    number,
                    *keys,
                    _names_match(tenant_id, names),
                ],
            ).fetchall()
        return {unit_id(r[0]) for r in rows}

    def units_from_sources(
        self, tenant_id: str, source_ids: Sequence[str], *, with_context: bool = True
    ) -> list[MemoryUnit]:
        return self._linked_units("sources", tenant_id, source_ids, with_context=with_context)

    def sources_with_units(self, tenant_id: str, source_ids: Sequence[str]) -> set[str]:
        if not source_ids:
            return set()
        marks = ",".join("?" * len(source_ids))
        number = self._number(tenant_id)
        by_context = _CONTEXT_LINK_TABLES["sources"]
        with self._lock:
            rows = self._db.execute(
                f"SELECT source_id FROM sources WHERE tenant_id=? AND source_id IN ({marks}) UNION "
                f"SELECT source_id FROM {by_context} WHERE tenant_id=? AND source_id IN ({marks})",
                [number, *source_ids, number, *source_ids],
            ).fetchall()
        return {r[0] for r in rows}

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
        by_context = _CONTEXT_LINK_TABLES[table]
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
        units = self.get(tenant_id, ids, with_context=with_context)
        return [u for u in units if wanted.intersection(_linked_ids(u, table))]

    def units_quoting(self, tenant_id: str, message_ids: Sequence[str]) -> list[MemoryUnit]:
        return self._linked_units("quotes", tenant_id, message_ids)

    def iter_units(self, tenant_id: str, batch: int) -> Iterator[list[MemoryUnit]]:
        last = -1
        number = self._number(tenant_id)
        while True:
            with self._lock:
                rows = self._db.execute(
                    f"SELECT u.rowid, u.id, u.doc, c.text FROM units u {_JOIN_CONTEXT} "
                    "WHERE u.tenant_id=? AND u.rowid>? ORDER BY u.rowid LIMIT ?",
                    (tenant_id, number, last, batch),
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield _read_units([row[1:] for row in rows], tenant_id)

    def expunge(self) -> None:
        """Merge the FTS index (its old segments still hold deleted rows' terms), then move the WAL
        into the database and truncate it; with ``secure_delete`` freed bytes are zeroed."""
        with self._lock:
            self._db.execute("INSERT INTO units_fts(units_fts) VALUES ('optimize')")
            self._db.execute("INSERT INTO contexts_fts(contexts_fts) VALUES ('optimize')")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def page(self, tenant_id: str, offset: int, limit: int) -> list[MemoryUnit]:
        number = self._number(tenant_id)
        with self._lock:
            rows = self._db.execute(
                f"SELECT u.id, u.doc, c.text FROM units u {_JOIN_CONTEXT} "
                "WHERE u.tenant_id=? ORDER BY u.stated_at, u.id LIMIT ? OFFSET ?",
                (tenant_id, number, limit, offset),
            ).fetchall()
        return _read_units(rows, tenant_id)

    def count(self, tenant_id: str) -> int:
        number = self._number(tenant_id)
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM units WHERE tenant_id=?", (number,)).fetchone()
        return int(row[0])

    def tenants(self) -> list[str]:
        with self._lock:
            rows = self._db.execute(
                "SELECT name FROM tenants t WHERE EXISTS (SELECT 1 FROM units u WHERE u.tenant_id = t.id)"
            ).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _read_units(
    rows: Sequence[tuple[bytes | str, bytes, bytes | str | None]],
    tenant_id: str,
    *,
    with_context: bool = True,
) -> list[MemoryUnit]:
    """Rows of (key, doc, stored context) as units; a context that several rows share (a message's
    statements) is inflated once."""
    opened: dict[bytes | str, StoredContext | None] = {}
    units = []
    for key, doc, stored in rows:
        if stored is not None and stored not in opened:
            opened[stored] = open_context(stored)
        context = None if stored is None else opened[stored]
        units.append(read_unit(unit_id(key), tenant_id, doc, context, with_context=with_context))
    return units


# ``contexts`` keeps the tenant's name: a statement joining it binds the name first, then the number
_JOIN_CONTEXT = "LEFT JOIN contexts c ON c.rowid = u.context AND c.tenant_id = ?"


def _names_match(tenant_id: str, names: Sequence[str]) -> str:
    """An FTS expression: the tenant's rows whose own words name one of ``names`` (all its words)."""
    named = " OR ".join(f"({fts_term(n.lower())})" for n in names)
    return f"{quote(tenant_token(tenant_id))} AND ({named})"


def _where_filter(sql: list[str], args: list[object], flt: SymbolicFilter, tenant_id: str) -> None:
    statuses = flt.statuses()
    if statuses == (MemoryStatus.ACTIVE.value,):
        sql.append(f"AND {_ACTIVE_SQL}")
    else:  # the status column holds NULL for an active unit
        marks = ",".join("?" * len(statuses))
        sql.append(f"AND COALESCE(u.status, 'active') IN ({marks})")
        args += list(statuses)
    if flt.first_day is not None and flt.last_day is not None:
        stated = " OR (u.stated_at >= ? AND u.stated_at < ?)" if flt.or_stated else ""
        sql.append(f"AND (({_EVENT_END_SQL} >= ? AND u.event_start <= ?){stated})")
        args += [flt.first_day.toordinal(), flt.last_day.toordinal()]
        if flt.or_stated:
            args += list(flt.stated_bounds())
    if flt.stated_before is not None:
        sql.append("AND u.stated_at <= ?")
        args.append(flt.stated_before.timestamp())
    if flt.names:
        marks = ",".join("?" * len(flt.names))
        sql.append(
            "AND (EXISTS (SELECT 1 FROM names n WHERE n.tenant_id = u.tenant_id AND n.id = u.id "
            f"AND n.name IN ({marks})) OR u.rowid IN (SELECT rowid FROM units_fts WHERE units_fts MATCH ?))"
        )
        args += [n.lower() for n in flt.names]
        args.append(_names_match(tenant_id, flt.names))
