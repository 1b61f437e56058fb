"""Embedded lexical + symbolic store: SQLite FTS5 (Porter stemming) in one persistent file, BM25
scored by the store per tenant. One module per concern of the protocol
(:mod:`~simplemem.processors.stores.protocols`): :mod:`.search`, :mod:`.documents`, :mod:`.listing`, :mod:`.names`,
:mod:`.provenance`, :mod:`.admin`; the file's layout in :mod:`.schema`."""

from __future__ import annotations

from simplemem.processors.stores.sqlite_lexical.admin import SqliteAdmin
from simplemem.processors.stores.sqlite_lexical.documents import SqliteDocuments
from simplemem.processors.stores.sqlite_lexical.listing import SqliteListing
from simplemem.processors.stores.sqlite_lexical.names import SqliteNames
from simplemem.processors.stores.sqlite_lexical.provenance import SqliteProvenance
from simplemem.processors.stores.sqlite_lexical.schema import FORMAT_VERSION, context_hash, tenant_token
from simplemem.processors.stores.sqlite_lexical.search import SqliteSearch

__all__ = ["FORMAT_VERSION", "SqliteLexicalStore", "context_hash", "tenant_token"]


class SqliteLexicalStore(
    SqliteSearch, SqliteDocuments, SqliteListing, SqliteNames, SqliteProvenance, SqliteAdmin
):
    """The whole :class:`~simplemem.processors.stores.protocols.LexicalStore` on one SQLite file."""
