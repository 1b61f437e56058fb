"""A long assistant answer is embedded once, by its head; its statements are all searchable by their
words, the first also by that vector, and a store without the others' vectors is not drift."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from simplemem.processors.ingest.analysis import MessageAnalyzer, answer_head
from simplemem.processors.ingest.decompose import DraftUnit, OfflineDecomposer, is_informative
from simplemem.processors.ingest.pipeline import Indexer
from simplemem.processors.language.nlp import doc_sentences
from simplemem.processors.lifecycle.reconcile import find_drift
from simplemem.processors.retrieval import search as index_search
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.window import AnalyzedMessage, Window
from tests.helpers import T0, answer_units

pytestmark = pytest.mark.slow
DIM = 4
# four paragraphs: four statements (a long answer's short sentences in one paragraph would join)
ANSWER = (
    "The Hotel Gracery sits in Shinjuku and costs about 150 dollars a night.\n\n"
    "The Park Hyatt has the best views of the city.\n\n"
    "The Sakura Hostel is the cheapest option near Asakusa.\n\n"
    "Book the Gracery early because it fills up in spring."
)


class CountingEmbedder:
    """Records what it was asked to embed; vectors are arbitrary but distinct."""

    dim = DIM

    def __init__(self) -> None:
        self.seen: list[str] = []

    def encode(self, texts: list[str]) -> np.ndarray:
        self.seen += texts
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, len(t) % DIM] = 1.0
        return out


class NoPreparer:
    def submit(self, events: list[object]) -> Future[list[AnalyzedMessage]]:
        raise AssertionError("not used")

    def close(self) -> None:
        pass


def prepared(nlp, text: str, role: Role) -> AnalyzedMessage:  # type: ignore[no-untyped-def]
    sentences = [
        s.model_copy(update={"informative": is_informative(s, "Bot")}) for s in doc_sentences(nlp(text))
    ]
    return AnalyzedMessage(
        tenant_id="t",
        session_id="s",
        message_id=f"m-{role}",
        speaker="Bot" if role == Role.ASSISTANT else "User",
        role=role,
        ts=T0,
        text=text,
        prose=text,
        sentences=sentences,
    )


def test_a_long_answer_is_embedded_once_by_its_first_sentences(nlp) -> None:  # type: ignore[no-untyped-def]
    embedder = CountingEmbedder()
    answer = prepared(nlp, ANSWER, Role.ASSISTANT)
    MessageAnalyzer(NoPreparer(), embedder, assistant_vector_chars=120).embed([answer])
    assert embedder.seen == [
        "The Hotel Gracery sits in Shinjuku and costs about 150 dollars a night. "
        "The Park Hyatt has the best views of the city."
    ]
    assert answer.embedding and not any(s.embedding for s in answer.sentences)


@pytest.mark.parametrize(("role", "limit"), [(Role.USER, 120), (Role.ASSISTANT, 0), (Role.ASSISTANT, 1000)])
def test_a_user_message_or_a_short_answer_is_embedded_statement_by_statement(nlp, role, limit) -> None:  # type: ignore[no-untyped-def]
    embedder = CountingEmbedder()
    message = prepared(nlp, ANSWER, role)
    assert answer_head(message, limit) is None
    MessageAnalyzer(NoPreparer(), embedder, assistant_vector_chars=limit).embed([message])
    assert len(embedder.seen) == 4 and all(s.embedding for s in message.sentences)


def decomposed_answer(nlp, limit: int):  # type: ignore[no-untyped-def]
    answer = prepared(nlp, ANSWER, Role.ASSISTANT)
    MessageAnalyzer(NoPreparer(), CountingEmbedder(), assistant_vector_chars=limit).embed([answer])
    return answer, OfflineDecomposer().decompose(
        Window(tenant_id="t", session_id="s", messages=[answer])
    ).units


def test_the_first_statement_carries_the_answers_vector_and_the_rest_none(nlp) -> None:  # type: ignore[no-untyped-def]
    answer, drafts = decomposed_answer(nlp, 120)
    assert len(drafts) == 4
    assert drafts[0].vector == answer.embedding and drafts[0].unit.has_vector
    assert all(d.vector is None and not d.unit.has_vector for d in drafts[1:])


def test_a_code_block_takes_its_messages_vector_and_is_not_embedded_again(nlp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    answer = prepared(nlp, ANSWER, Role.ASSISTANT)
    answer.code_blocks = ["SELECT name FROM hotels WHERE city = 'Tokyo';"]
    MessageAnalyzer(NoPreparer(), CountingEmbedder(), assistant_vector_chars=120).embed([answer])
    drafts = OfflineDecomposer().decompose(Window(tenant_id="t", session_id="s", messages=[answer])).units
    code = [d for d in drafts if d.unit.kind == MemoryKind.CODE]
    assert len(code) == 1 and code[0].vector == answer.embedding and code[0].unit.has_vector
    embedder = CountingEmbedder()
    Indexer(embedder, SqliteLexicalStore(tmp_path / "l.db"), SqliteVectorStore(tmp_path / "v.db", DIM)).index(
        drafts
    )
    assert embedder.seen == []


def test_code_alone_is_embedded_by_the_indexer(nlp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    message = prepared(nlp, "ok", Role.USER)
    message.code_blocks = ["print('hello')"]
    drafts = OfflineDecomposer().decompose(Window(tenant_id="t", session_id="s", messages=[message])).units
    assert [d.vector for d in drafts] == [None]
    embedder = CountingEmbedder()
    Indexer(embedder, SqliteLexicalStore(tmp_path / "l.db"), SqliteVectorStore(tmp_path / "v.db", DIM)).index(
        drafts
    )
    assert len(embedder.seen) == 1 and embedder.seen[0].endswith("print('hello')")


def test_only_statements_with_a_vector_reach_the_vector_store_and_none_is_drift(nlp, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, drafts = decomposed_answer(nlp, 120)
    embedder = CountingEmbedder()
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    vectors = SqliteVectorStore(tmp_path / "vectors.db", DIM)
    Indexer(embedder, lexical, vectors).index(drafts)
    assert embedder.seen == []  # nothing re-embedded at index time
    assert {i for page in vectors.ids("t", 100) for i in page} == {drafts[0].unit.id}
    assert {u.id for page in lexical.iter_units("t", 100) for u in page} == {d.unit.id for d in drafts}
    drift = find_drift("t", lexical, vectors, 100)
    assert not drift.drifted and drift.units == 4 and drift.vectors == 1


def test_a_sentence_said_twice_in_one_message_is_embedded_and_written_once(tmp_path: Path) -> None:
    unit = answer_units("t", 1)[0]
    again = unit.model_copy(update={"keywords": ["oven"]})  # the same text again: the same id
    embedder = CountingEmbedder()
    lexical = SqliteLexicalStore(tmp_path / "l.db")
    vectors = SqliteVectorStore(tmp_path / "v.db", DIM)
    Indexer(embedder, lexical, vectors).index([DraftUnit(unit), DraftUnit(again)])
    assert len(embedder.seen) == 1
    assert lexical.get("t", [unit.id]) == [again]
    assert [i for page in vectors.ids("t", 10) for i in page] == [unit.id]


class KeyedEmbedder:
    """A query's vector is that of the first key it contains: the test decides what resembles what."""

    dim = DIM

    def __init__(self, keys: dict[str, list[float]]) -> None:
        self.keys = keys

    def encode(self, texts: list[str]) -> np.ndarray:
        rows = [
            next((v for k, v in self.keys.items() if k in t.lower()), [0.0, 0.0, 0.0, 1.0]) for t in texts
        ]
        return np.asarray(rows, dtype=np.float32)


def stored(
    uid: str, text: str, *, vector: list[float] | None, persons: tuple[str, ...] = ()
) -> tuple[MemoryUnit, list[float] | None]:
    unit = MemoryUnit(
        id=uid,
        tenant_id="t",
        text=text,
        source_ids=[f"m-{uid}"],
        stated_at=T0.isoformat(),
        persons=list(persons),
        has_vector=vector is not None,
    )
    return unit, vector


def retriever_over(
    tmp_path: Path,
    memories: list[tuple[MemoryUnit, list[float] | None]],
    keys: dict[str, list[float]],
    k: int = 1,
) -> Retriever:
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    vectors = SqliteVectorStore(tmp_path / "vectors.db", DIM)
    lexical.upsert([u for u, _ in memories])
    with_vectors = [(u, v) for u, v in memories if v is not None]
    vectors.upsert([u for u, _ in with_vectors], np.asarray([v for _, v in with_vectors], dtype=np.float32))
    return Retriever(RetrievalConfig(k_min=k, k_max=k), lexical, vectors, KeyedEmbedder(keys))


def test_a_statement_found_by_its_words_alone_outranks_one_that_merely_resembles_the_question(
    tmp_path: Path,
) -> None:
    memories = [
        stored("head", "The Hotel Gracery sits in Shinjuku.", vector=[0.0, 1.0, 0.0, 0.0]),
        stored("later", "The Sakura Hostel is the cheapest option near Asakusa.", vector=None),
        stored("alike", "I like budget travel a lot.", vector=[1.0, 0.0, 0.0, 0.0]),
    ]
    retriever = retriever_over(tmp_path, memories, {"hostel": [1.0, 0.0, 0.0, 0.0]})
    result = retriever.query(QueryRequest(tenant_id="t", query="Which hostel near Asakusa was the cheapest?"))
    assert [m.id for m in result.memories] == ["later"]


def test_a_question_about_a_person_still_finds_statements_by_their_words(tmp_path: Path) -> None:
    memories = [
        stored(
            "about", "Melanie went hiking with friends.", vector=[1.0, 0.0, 0.0, 0.0], persons=("Melanie",)
        ),
        stored("words", "The pottery class moved to Tuesday evenings.", vector=None),
    ]
    retriever = retriever_over(tmp_path, memories, {"pottery": [1.0, 0.0, 0.0, 0.0]}, k=2)
    result = retriever.query(QueryRequest(tenant_id="t", query="When is the pottery class Melanie goes to?"))
    assert "words" in {m.id for m in result.memories}  # not only the memories about Melanie


def test_the_embedded_ranking_asks_the_vector_store_which_hits_have_a_vector_and_reads_no_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memories = [
        stored("head", "The Hotel Gracery sits in Shinjuku.", vector=[0.0, 1.0, 0.0, 0.0]),
        stored("later", "The Sakura Hostel is the cheapest option near Asakusa.", vector=None),
        stored("alike", "I like budget travel a lot.", vector=[1.0, 0.0, 0.0, 0.0]),
        stored("far", "The Asakusa hostel had a cheap laundry.", vector=[0.0, 0.0, 1.0, 0.0]),
    ]
    retriever = retriever_over(tmp_path, memories, {"hostel": [1.0, 0.0, 0.0, 0.0]})
    planned = retriever.plan(QueryRequest(tenant_id="t", query="Which hostel near Asakusa was the cheapest?"))
    qvec = np.asarray([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    retriever.vectors.search("t", qvec, 1, planned.within)  # warm: the tenant's arrays
    words_only: list[set[str]] = []
    real_fuse = index_search.fuse

    def noted(semantic, lexical, only, *args):  # type: ignore[no-untyped-def]
        words_only.append(set(only))
        return real_fuse(semantic, lexical, only, *args)

    monkeypatch.setattr(index_search, "fuse", noted)
    seen: list[str] = []
    retriever.lexical._db.set_trace_callback(seen.append)  # type: ignore[attr-defined]
    fetched: dict[str, MemoryUnit] = {}
    ranked, _ = retriever.search.ranking(planned, lambda: qvec, fetched)
    retriever.lexical._db.set_trace_callback(None)  # type: ignore[attr-defined]
    assert not [sql for sql in seen if "FROM units u" in sql] and not fetched
    # found by its words alone: "later" has no vector (its BM25 share stands in for the cosine), "far"
    # has one, unlike the question
    assert words_only == [{"later"}] and {"later", "far"} <= {uid for uid, _ in ranked}
