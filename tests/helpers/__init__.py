"""Builders for unit tests of pure logic (no models)."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from simplemem.processors.stores.sqlite_docs import doc_json, open_context
from simplemem.schemas.events import ChatEvent, Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.window import AnalyzedMessage

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def message(
    i: int,
    *,
    session: str = "s1",
    tenant: str = "t1",
    minutes: float = 1.0,
    entities: list[str] | None = None,
    embedding: list[float] | None = None,
    speaker: str = "Jordan",
) -> AnalyzedMessage:
    return AnalyzedMessage(
        tenant_id=tenant,
        session_id=session,
        message_id=f"{session}:m{i}",
        speaker=speaker,
        role=Role.USER,
        ts=T0 + timedelta(minutes=minutes * i),
        text=f"message {i}",
        prose=f"message {i}",
        entities=entities or [],
        embedding=embedding or [],
    )


def chat_event(message_id: str, role: str, text: str, speaker: str | None = None) -> ChatEvent:
    """A validated event of tenant "t", session "s", at the start of 2026."""
    return ChatEvent(
        tenant_id="t",
        session_id="s",
        message_id=message_id,
        speaker=speaker or role,
        role=role,
        text=text,
        ts=datetime(2026, 1, 1, tzinfo=UTC),
    )


ANSWER = "Option one: the Cedar trail. Option two: the Falls trail. Bring crampons in winter."


def answer_units(tenant: str, n: int, message: str = ANSWER) -> list[MemoryUnit]:
    """The statements of one long answer, each with the whole message as its context."""
    return [
        MemoryUnit.build(
            tenant_id=tenant,
            text=f"assistant suggested option {i}",
            kind=MemoryKind.FACT,
            source_ids=[f"{tenant}:answer"],
            stated_at="2026-01-10T10:00:00+00:00",
            context=message,
        )
        for i in range(n)
    ]


def store_bytes(store: Path) -> bytes:
    """Every byte of a store folder's files, and the unit documents decompressed: SQLite keeps them
    zlib-compressed and its FTS tables keep terms only, so a string in a memory is not in the raw
    bytes. A check that nothing holds a string must read both."""
    blobs = [p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()]
    lexical = store / "lexical.sqlite"
    if lexical.is_file():
        db = sqlite3.connect(f"file:{lexical}?mode=ro", uri=True)
        try:
            docs = db.execute(
                "SELECT u.doc, c.text FROM units u LEFT JOIN contexts c ON c.rowid = u.context"
            ).fetchall()
            contexts = [open_context(text) for (text,) in db.execute("SELECT text FROM contexts")]
        finally:
            db.close()
        blobs += [doc_json(bytes(doc), open_context(context)) for doc, context in docs]
        blobs += [c.text.encode("utf-8") + c.header for c in contexts if c is not None]
    return b"\n".join(blobs)
