"""Embedded serving: a query is not held behind another tenant's ingestion. The analysis of a batch
(most of its work) runs outside the store's lock, and index writes go a slice at a time."""

from __future__ import annotations

import threading
from contextlib import AbstractContextManager
from types import SimpleNamespace
from typing import Any

import numpy as np

from simplemem.api.backends import EmbeddedBackend
from simplemem.processors.ingest.decompose import DraftUnit
from simplemem.processors.ingest.indexing import INDEX_SLICE_UNITS, Indexer
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.settings import Settings

SAFETY = 60.0  # seconds: only so a regression fails instead of hanging; nothing here is timed


class AnalysisHeldOpen:
    """A pipeline whose analysis waits until the test lets it go (both the new split API and the
    old whole-batch ``ingest``, so the test tells the two designs apart)."""

    def __init__(self) -> None:
        self.analysing = threading.Event()
        self.release = threading.Event()
        self.written: list[str] = []

    def drop_forgotten(self, events: list[ChatEvent], report: object) -> list[ChatEvent]:
        return list(events)

    def analyse_events(self, events: list[ChatEvent]) -> list[Any]:
        self.analysing.set()
        assert self.release.wait(SAFETY)
        return []

    def write_analysed(
        self, events: list[ChatEvent], results: list[Any], report: object, guard: Any = None
    ) -> None:
        with guard() if guard else _nothing():
            self.written += [e.message_id for e in events]

    def ingest(self, lines: list[Any], **_: object) -> None:
        self.analyse_events([])
        self.written += [where for where, _ in lines]


def _nothing() -> AbstractContextManager[None]:
    from contextlib import nullcontext

    return nullcontext()


def event(i: int, text: str) -> ChatEvent:
    return ChatEvent.model_validate(
        {
            "tenant_id": "noisy",
            "session_id": "s",
            "message_id": f"m{i}",
            "speaker": "Assistant",
            "role": "assistant",
            "text": text,
            "ts": "2026-01-05T09:00:00Z",
        }
    )


def test_a_query_is_answered_while_another_tenants_batch_is_being_analysed() -> None:
    pipeline = AnalysisHeldOpen()
    retriever = SimpleNamespace(query=lambda request, filters=None: "answered")
    rt = SimpleNamespace(settings=Settings(), pipeline=pipeline, retriever=retriever)
    backend = EmbeddedBackend(rt, forgetter=None)  # type: ignore[arg-type]
    ingesting = threading.Thread(target=backend._ingest, args=([event(1, "x" * 20_000)],))
    ingesting.start()
    try:
        assert pipeline.analysing.wait(SAFETY)
        answers: list[object] = []
        asking = threading.Thread(
            target=lambda: answers.append(backend.query(SimpleNamespace(tenant_id="quiet")))
        )  # type: ignore[arg-type]
        asking.start()
        asking.join(SAFETY)
        assert answers == ["answered"], "the query waited for the other tenant's analysis"
        assert not pipeline.written, "the batch is still being analysed"
    finally:
        pipeline.release.set()
        ingesting.join(SAFETY)
    assert pipeline.written == ["m1"]


def test_a_long_batch_is_analysed_in_steps_of_text_in_order() -> None:
    pipeline = AnalysisHeldOpen()
    pipeline.release.set()
    rt = SimpleNamespace(settings=Settings(), pipeline=pipeline, retriever=None)
    backend = EmbeddedBackend(rt, forgetter=None)  # type: ignore[arg-type]
    steps: list[list[str]] = []
    write = pipeline.write_analysed
    pipeline.write_analysed = lambda events, *rest: (
        steps.append([e.message_id for e in events]),
        write(events, *rest),
    )[1]  # type: ignore[method-assign]
    backend._ingest([event(i, "y" * 9_000) for i in range(5)])
    assert [m for step in steps for m in step] == ["m0", "m1", "m2", "m3", "m4"]
    assert len(steps) >= 3  # never the whole batch in one visit to the store's lock


def test_index_writes_go_through_the_callers_wrapper_a_slice_at_a_time() -> None:
    class Store:
        def __init__(self) -> None:
            self.upserts: list[int] = []

        def units_from_sources(self, tenant: str, ids: list[str]) -> list[Any]:
            return []

        def upsert(self, units: list[Any], *matrix: object) -> None:
            self.upserts.append(len(units))

    lexical = Store()
    embedder = SimpleNamespace(dim=2, encode=lambda texts: np.zeros((len(texts), 2), dtype=np.float32))
    indexer = Indexer(embedder=embedder, lexical=lexical, vectors=Store())  # type: ignore[arg-type]
    calls: list[str] = []

    def write(call: Any) -> None:
        calls.append("store call")
        call()

    stated = "2026-01-05T09:00:00Z"
    drafts = [
        DraftUnit(
            MemoryUnit(id=f"u{i}", tenant_id="t", text=f"fact {i}", source_ids=["m"], stated_at=stated),
            [1.0, 0.0],
        )
        for i in range(INDEX_SLICE_UNITS * 2 + 10)
    ]
    indexer.index(drafts, [("t", "m")], write)
    assert len(calls) == 1 + 3  # the removal, then three slices
    assert lexical.upserts == [INDEX_SLICE_UNITS, INDEX_SLICE_UNITS, 10]
