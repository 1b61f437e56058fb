"""The lexical file's one layout (file format :data:`FORMAT_VERSION`) and the values its rows index.

Tenant scoping is part of every statement: the FTS match itself asks for the tenant's token, and
every lookup joins on ``tenant_id``. In the tables with a row per unit or per link (``units``,
``names``, ``sources``, ``quotes``, ``context_sources``, ``context_quotes``) that column holds the
tenant's number in ``tenants`` and a unit's id is stored as its 16 bytes (:mod:`sqlite_keys`);
``contexts`` keeps the tenant's name.

A unit's ``context`` (the message around it, the question it answers) is stored once per distinct
text, zlib-compressed, in ``contexts``, with its own FTS index: the statements of a long answer share
one row. A unit refers to its row by rowid (``units.context``); reads join it back, and BM25 scores a
unit by its own words plus its context's (the two scores added).

Both FTS indexes are contentless and keep no positions: which rows hold a term (BM25 as scored here
and the name match need no more; a hit is joined to its row by rowid). A row leaves an index by
FTS5's ``delete`` command with the values it was indexed with: a context's from ``contexts``, a unit's
rebuilt from its document by :func:`fts_values`. Changing what that function indexes, or any table
here, is a new :data:`FORMAT_VERSION` (older files are then refused and rebuilt:
:mod:`simplemem.processors.stores.file_format`).
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from simplemem.processors.stores.file_format import open_format
from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.sqlite_keys import PAGE_SIZE, TENANTS_TABLE
from simplemem.schemas.memory import DERIVED_KINDS, MemoryUnit

FORMAT_VERSION = 18  # the file format this code reads and writes (``PRAGMA user_version``)

# ``body`` is the first column: FTS5 marks each term's positions in any other column with two bytes.
# Both indexes keep which rows hold a term, not where or how often (``detail=none``, no sizes): the
# search scores BM25 itself (:mod:`sqlite_bm25`). The tenant's token is matched anywhere in a row (no
# column filter: the joins on ``tenant_id`` keep the tenants apart).
FTS_TABLE = """CREATE VIRTUAL TABLE units_fts USING fts5(
    body, tenant, content = '', detail = none, columnsize = 0, tokenize = 'porter unicode61'
)"""
CONTEXTS_FTS_TABLE = """CREATE VIRTUAL TABLE contexts_fts USING fts5(
    body, tenant, content = '', detail = none, columnsize = 0, tokenize = 'porter unicode61'
)"""
# The two values nearly every unit holds are NULL, which takes no byte: ``status`` of an active unit
# (its status is in its document too) and ``event_end`` of a unit whose time is one day.
ACTIVE_SQL = "u.status IS NULL"
EVENT_END_SQL = "COALESCE(u.event_end, u.event_start)"
# per tenant's token and index (``units``, ``contexts``): its rows and their words, for BM25
_WORD_COUNTS = """CREATE TABLE word_counts (tenant TEXT NOT NULL, side TEXT NOT NULL,
    rows INTEGER NOT NULL, words INTEGER NOT NULL, PRIMARY KEY (tenant, side)) WITHOUT ROWID"""
_UNITS = """CREATE TABLE units (
    id BLOB NOT NULL, tenant_id INTEGER NOT NULL, doc BLOB NOT NULL, status TEXT,
    event_start INTEGER NOT NULL, event_end INTEGER, stated_at REAL NOT NULL, context INTEGER,
    words INTEGER NOT NULL DEFAULT 0, session TEXT, kind TEXT, superseded INTEGER,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX units_by_context ON units (context);
CREATE INDEX units_by_time ON units (tenant_id, stated_at);
CREATE INDEX units_by_session ON units (tenant_id, session, stated_at);
CREATE INDEX units_by_kind ON units (tenant_id, kind, stated_at) WHERE kind IS NOT NULL"""
# The listing's columns (format 18): a unit's session, its kind (NULL: a fact, nearly every unit) and
# 1 when a newer memory superseded it (NULL: not), so the ``/ui/`` page's filters and counts read
# these columns and the indexes above, never a unit's document.
FACT_KIND = "fact"
_NAMES = """CREATE TABLE names (tenant_id INTEGER NOT NULL, name TEXT NOT NULL, id BLOB NOT NULL);
CREATE INDEX names_by_name ON names (tenant_id, name);
CREATE INDEX names_by_id ON names (tenant_id, id)"""
_CONTEXTS = """CREATE TABLE contexts (tenant_id TEXT NOT NULL, hash TEXT NOT NULL, text NOT NULL,
    words INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (tenant_id, hash))"""
# A unit's messages: ``sources`` the ones it comes from, ``quotes`` the ones its context quotes. A row
# names its unit by the unit's rowid (as the FTS rows do), not its id. A table is its own index
# (``WITHOUT ROWID``, keyed by message then unit); a unit's rows are found by the message ids its
# document lists.
LINK_TABLES = ("sources", "quotes")
# A unit with a context is linked through it: ``context_sources`` and ``context_quotes`` name the
# context's rowid, once for all the statements of a message that share it. Two messages of the same
# text share a context, so what such a row finds is read and kept only if its document lists the
# message; a row leaves when no unit of its context lists that message any more.
CONTEXT_LINK_TABLES = {"sources": "context_sources", "quotes": "context_quotes"}
# the unit field whose message ids each link table holds
LINK_FIELDS = {"sources": "source_ids", "quotes": "context_ids"}
# ``contexts`` keeps the tenant's name: a statement joining it binds the name first, then the number
JOIN_CONTEXT = "LEFT JOIN contexts c ON c.rowid = u.context AND c.tenant_id = ?"


def _link_table(table: str, key: str) -> str:
    return f"""CREATE TABLE {table} (tenant_id INTEGER NOT NULL, source_id TEXT NOT NULL,
    {key} INTEGER NOT NULL, PRIMARY KEY (tenant_id, source_id, {key})) WITHOUT ROWID"""


_SCHEMA = ";\n".join(
    [
        _UNITS,
        TENANTS_TABLE,
        FTS_TABLE,
        _CONTEXTS,
        _WORD_COUNTS,
        CONTEXTS_FTS_TABLE,
        _NAMES,
        *(_link_table(t, "unit") for t in LINK_TABLES),
        *(_link_table(t, "context") for t in CONTEXT_LINK_TABLES.values()),
    ]
)


def open_lexical_file(path: Path) -> sqlite3.Connection:
    """The lexical file at ``path``: made in :data:`FORMAT_VERSION` if new, refused
    (:class:`~simplemem.processors.stores.file_format.StoreFormatError`) if in another."""
    private_file(path)
    db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    try:
        db.execute(f"PRAGMA page_size={PAGE_SIZE}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # a deleted row's bytes are overwritten, not left in a free page (the right to be forgotten)
        db.execute("PRAGMA secure_delete=ON")
        open_format(db, path, FORMAT_VERSION, _SCHEMA)
        # A tenant's units in the order stated: a page and a walk over all of them read their own
        # rows only (without it every batch sorted the whole tenant). A file made before it gets it.
        db.execute("CREATE INDEX IF NOT EXISTS units_by_time ON units (tenant_id, stated_at)")
    except BaseException:
        db.close()
        raise
    return db


def linked_ids(unit: MemoryUnit, table: str) -> list[str]:
    """The message ids ``table`` (sources, quotes) links the unit to."""
    ids: list[str] = getattr(unit, LINK_FIELDS[table])
    return ids


def tenant_token(tenant_id: str) -> str:
    """An opaque FTS token for the tenant (tenant ids may hold characters FTS would split)."""
    return "t" + hashlib.sha1(tenant_id.encode("utf-8")).hexdigest()[:20]


def derived_token(tenant_id: str) -> str:
    """The FTS token of the tenant's derived lines (timeline, profile, instructions, preferences), in
    place of :func:`tenant_token`: a search of either layer walks only that layer's rows (the
    derived lines are a few percent of a long history's rows), and each layer's BM25 counts its own."""
    return "d" + tenant_token(tenant_id)[1:]


def layer_token(tenant_id: str, derived: bool) -> str:
    """The FTS token of the tenant's units (``derived`` False) or derived lines."""
    return derived_token(tenant_id) if derived else tenant_token(tenant_id)


def body(unit: MemoryUnit) -> str:
    """The words a unit's FTS row indexes: its text, keywords and date."""
    parts = [unit.text, " ".join(unit.keywords), unit.event_time or ""]
    return "\n".join(p for p in parts if p)


def fts_values(unit: MemoryUnit) -> tuple[str, str]:
    """What a unit's FTS row indexes (its layer's token, body): the same values insert it and delete
    it."""
    return layer_token(unit.tenant_id, unit.kind in DERIVED_KINDS), body(unit)


def context_hash(text: str) -> bytes:
    """A context's key among its tenant's: 8 bytes of its SHA-256."""
    return hashlib.sha256(text.encode("utf-8")).digest()[:8]
