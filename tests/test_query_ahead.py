"""An embedded query embeds its question (and an order question's aspects) on a thread of its own
while its words are searched: the same answer as in order, the vectors asked for once each, and the
statements' BM25 search asked before the question's vector is waited for."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np
import pytest

from simplemem.processors.retrieval import cores as cores_module
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.cores import SpareCore
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.plan import plan
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.processors.retrieval.search import IndexSearch
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest

DIM = 8
ORDER = "In what order did I bring up the budget tracker features, the security review and the kayak trip?"


class ThreadNoting:
    """Vectors from the text's words (a shared word: a closer vector); each call noted with its thread."""

    dim = DIM

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.calls.append((threading.current_thread().name, list(texts)))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % DIM] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)


def memory(text: str, day: int, kind: MemoryKind = MemoryKind.FACT) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=kind,
        source_ids=[f"t:{day}:{text[:12]}"],
        stated_at=f"2026-01-{day:02d}T10:00:00+00:00",
        session_id=f"s{day % 3}",
    )


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[SqliteLexicalStore, SqliteVectorStore]]:
    texts = [
        ("I added budget tracker features: categories and monthly totals", MemoryKind.TIMELINE),
        ("I asked for a security review of the login", MemoryKind.TIMELINE),
        ("I planned a kayak trip with the club", MemoryKind.TIMELINE),
        ("The budget tracker stores passwords hashed", MemoryKind.FACT),
        ("The kayak trip moved to June", MemoryKind.FACT),
        ("The security review found two issues", MemoryKind.FACT),
    ]
    units = [memory(text, 10 + i, kind) for i, (text, kind) in enumerate(texts)]
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    vectors = SqliteVectorStore(tmp_path / "vectors.db", DIM)
    lexical.upsert(units)
    vectors.upsert(units, ThreadNoting().encode([u.text for u in units]))
    yield lexical, vectors
    lexical.close()
    vectors.close()


def test_the_question_embedded_ahead_gets_the_answer_it_gets_in_order(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore],
) -> None:
    lexical, vectors = stores
    request = QueryRequest(tenant_id="t", query=ORDER)
    in_order = ThreadNoting()
    expected = Retriever(RetrievalConfig(), lexical, vectors, in_order).query(request)
    ahead = ThreadNoting()
    with ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") as pool:
        got = Retriever(
            RetrievalConfig(), lexical, vectors, ahead, embed_pool=pool, spare_core=lambda: True
        ).query(request)
    assert got.context == expected.context and "kayak" in got.context
    assert [(m.id, m.score) for m in got.memories] == [(m.id, m.score) for m in expected.memories]
    # the question, then its aspects: each asked once, on the pool's thread (in order: the caller's)
    assert [texts for _, texts in ahead.calls] == [texts for _, texts in in_order.calls]
    assert len(ahead.calls) == 2 and len(ahead.calls[1][1]) == 3
    assert all(name.startswith("embed-ahead") for name, _ in ahead.calls)
    assert all(name == threading.current_thread().name for name, _ in in_order.calls)


def test_whether_a_core_is_spare_is_asked_once_a_query(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore],
) -> None:
    """The question's vector, being embedded on the spare core, makes it look busy: the aspects go to
    the same thread all the same."""
    lexical, vectors = stores
    answers = iter([True, False])
    ahead = ThreadNoting()
    with ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") as pool:
        Retriever(
            RetrievalConfig(), lexical, vectors, ahead, embed_pool=pool, spare_core=lambda: next(answers)
        ).query(QueryRequest(tenant_id="t", query=ORDER))
    assert len(ahead.calls) == 2 and all(name.startswith("embed-ahead") for name, _ in ahead.calls)


ENUMERATING = (
    "Considering the budget tracker features, the security review and the kayak trip, what should I fix?"
)


S = TypeVar("S")


def noting(store: object, kind: type[S]) -> S:
    """``store`` as a ``kind`` (a subclass that notes its calls), sharing its connection and caches."""
    copy = kind.__new__(kind)
    copy.__dict__.update(store.__dict__)
    return copy


def same_ahead_as_in_order(
    lexical: SqliteLexicalStore,
    vectors: SqliteVectorStore,
    request: QueryRequest,
    ahead_lexical: SqliteLexicalStore,
    ahead_vectors: SqliteVectorStore,
) -> None:
    """``request`` answered with a spare core (through the ``ahead_`` stores) as in order."""
    expected = Retriever(RetrievalConfig(), lexical, vectors, ThreadNoting()).query(request)
    with ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") as pool:
        got = Retriever(
            RetrievalConfig(),
            ahead_lexical,
            ahead_vectors,
            ThreadNoting(),
            embed_pool=pool,
            spare_core=lambda: True,
        ).query(request)
    assert got.context == expected.context


@pytest.mark.parametrize("question", [ORDER, ENUMERATING])
def test_with_a_spare_core_every_search_of_words_is_made_before_any_vector_is_waited_for(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore], question: str
) -> None:
    """The words of the statements' searches, of each aspect's and of the derived lines' are searched
    while the vectors are embedded on the spare core; the steps ask for them again later, and get
    the same answer."""
    lexical, vectors = stores
    events: list[tuple[str, object]] = []

    class NotingWords(SqliteLexicalStore):
        def search(self, tenant_id, query, limit, flt, *, read=False):  # type: ignore[no-untyped-def]
            events.append(("words", (query, limit, flt)))
            return super().search(tenant_id, query, limit, flt, read=read)

    class NotingVectors(SqliteVectorStore):
        def search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            events.append(("vector", None))
            return super().search(*args, **kwargs)

    words, vecs = noting(lexical, NotingWords), noting(vectors, NotingVectors)
    same_ahead_as_in_order(lexical, vectors, QueryRequest(tenant_id="t", query=question), words, vecs)
    first_vector = events.index(("vector", None))
    ahead = {asked for kind, asked in events[:first_vector] if kind == "words"}
    later = {asked for kind, asked in events[first_vector:] if kind == "words"}
    assert later and later <= ahead
    assert any(flt.derived for _, _, flt in ahead) and any(not flt.derived for _, _, flt in ahead)


@pytest.mark.parametrize(("question", "first"), [(ORDER, "statements"), (ENUMERATING, "derived lines")])
def test_embedded_the_step_that_does_not_wait_for_the_aspects_vectors_comes_first(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore], question: str, first: str
) -> None:
    """An order reads its timeline by each aspect: its statements first. A request that enumerates has
    its statements searched by each aspect, and its derived lines read none: those first."""
    lexical, vectors = stores
    searched: list[str] = []

    class NotingVectors(SqliteVectorStore):
        def search(self, tenant_id, vector, limit, flt):  # type: ignore[no-untyped-def]
            searched.append("derived lines" if flt.derived else "statements")
            return super().search(tenant_id, vector, limit, flt)

    vecs = noting(vectors, NotingVectors)
    same_ahead_as_in_order(lexical, vectors, QueryRequest(tenant_id="t", query=question), lexical, vecs)
    assert searched[0] == first and set(searched) == {"statements", "derived lines"}


def test_the_statements_words_are_searched_before_the_question_vector_is_waited_for(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore],
) -> None:
    lexical, vectors = stores
    seen: list[str] = []

    class Noting(SqliteLexicalStore):
        def search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            seen.append("words")
            return super().search(*args, **kwargs)

    noting = Noting.__new__(Noting)
    noting.__dict__.update(lexical.__dict__)
    planned = plan(
        QueryRequest(tenant_id="t", query="When did the kayak trip move?"), None, RetrievalConfig(), list
    )

    def qvec() -> np.ndarray:
        seen.append("vector")
        return ThreadNoting().encode([planned.search_text])[0]

    ranked, _ = IndexSearch(noting, vectors, FanOut()).ranking(planned, qvec, {})
    assert seen[:2] == ["words", "vector"]
    assert ranked


def test_without_a_spare_core_the_question_is_embedded_in_order_on_the_callers_thread(
    stores: tuple[SqliteLexicalStore, SqliteVectorStore],
) -> None:
    lexical, vectors = stores
    request = QueryRequest(tenant_id="t", query=ORDER)
    expected = Retriever(RetrievalConfig(), lexical, vectors, ThreadNoting()).query(request)
    busy = ThreadNoting()
    with ThreadPoolExecutor(1, thread_name_prefix="embed-ahead") as pool:
        got = Retriever(
            RetrievalConfig(), lexical, vectors, busy, embed_pool=pool, spare_core=lambda: False
        ).query(request)
    assert got.context == expected.context
    assert len(busy.calls) == 2 and all(name == threading.current_thread().name for name, _ in busy.calls)


def reading(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, cores: int = 2) -> Callable[[int], None]:
    """What sets the run queue's reading (the last minute's load says the opposite: it is not read)."""
    run_queue = tmp_path / "loadavg"
    monkeypatch.setattr(cores_module, "RUN_QUEUE", run_queue)
    monkeypatch.setattr(cores_module.os, "cpu_count", lambda: cores)

    def now(runnable: int) -> None:
        run_queue.write_text(f"{0.1 if runnable >= cores else 9.0} 2.50 1.20 {runnable}/412 9120\n")

    return now


def test_a_core_is_spare_while_fewer_threads_are_ready_to_run_than_cores_on_the_mean_of_readings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    now, spare = reading(monkeypatch, tmp_path), SpareCore()
    answers = []
    for runnable in [1, 1, 2, 1, 3, 1, 1]:  # an idle machine, and a thread now and then about to sleep
        now(runnable)
        answers.append(spare())
    assert all(answers)
    answers = []
    for runnable in [5, 5, 5, 5, 1, 1, 1, 1, 1, 1]:  # busy (at two and a half times the cores), then idle
        now(runnable)
        answers.append(spare())
    assert answers == [False] * 7 + [True] * 3


def test_more_cores_spare_more(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    now, spare = reading(monkeypatch, tmp_path, cores=8), SpareCore()
    now(5)
    assert spare() and spare()


@pytest.mark.parametrize(("load", "spare"), [(0.7, True), (1.9, True), (2.0, False), (6.5, False)])
def test_without_a_run_queue_a_core_is_spare_while_the_load_average_is_below_the_cores(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, load: float, spare: bool
) -> None:
    monkeypatch.setattr(cores_module, "RUN_QUEUE", tmp_path / "none")
    monkeypatch.setattr(cores_module.os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(cores_module.os, "cpu_count", lambda: 2)
    assert SpareCore()() is spare


def test_without_a_load_average_a_core_is_taken_as_spare(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def missing() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(cores_module, "RUN_QUEUE", tmp_path / "none")
    monkeypatch.setattr(cores_module.os, "getloadavg", missing)
    assert SpareCore()()
