"""Context assembly on a real embedded store: a memory brings the other statements of its message;
a date that matches nothing does not empty the answer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.query import QueryRequest

pytestmark = pytest.mark.slow

TURNS = [
    ("Joanna", "I finished my first screenplay last month. My sister Ana read the whole draft."),
    ("Nate", "Congrats! My turtles escaped from their tank again yesterday."),
    ("Joanna", "Producers in Boston want to meet me next week."),
]


def tuned(rt, **changes):  # type: ignore[no-untyped-def]
    """``rt`` with its retriever's config changed (validated)."""
    rt.retriever.config = rt.retriever.config.with_(**changes)
    return rt


def ingest_turns(rt) -> None:  # type: ignore[no-untyped-def]
    report = IngestReport()
    events = [
        ChatEvent(
            tenant_id="t",
            session_id="s",
            message_id=f"m{i}",
            speaker=speaker,
            role="user",
            text=text,
            ts=datetime(2026, 3, 1, 10, i, tzinfo=UTC),
        )
        for i, (speaker, text) in enumerate(TURNS)
    ]
    rt.pipeline.ingest([(e.message_id, e.model_dump_json()) for e in events], report)
    assert report.units >= 4


@pytest.mark.parametrize("siblings", [0, 6])
def test_siblings_follow_the_chosen_memory(tmp_path, settings, siblings: int) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = tuned(open_runtime(settings, tmp_path), k_min=1, k_max=1, sibling_units=siblings)
    try:
        ingest_turns(rt)
        result = rt.retriever.query(QueryRequest(tenant_id="t", query="What did Joanna finish writing?"))
        assert result.k == 1
        assert "screenplay" in result.memories[0].text
        rest = result.memories[1:]
        if siblings:
            assert [m.source_ids for m in rest] == [["m0"]] and "Ana" in rest[0].text
            assert "Ana" in result.context
        else:
            assert rest == [] and "Ana" not in result.context
    finally:
        rt.close()


@pytest.mark.parametrize("date_boost", [0.0, 0.4])
def test_a_date_that_matches_nothing_is_dropped_not_obeyed(tmp_path, settings, date_boost: float) -> None:  # type: ignore[no-untyped-def]
    """The query's date restricts (``date_boost`` 0) or favours (a boost) the memories in it; either
    way a date that matches nothing does not empty the answer."""
    from simplemem.runtime import open_runtime

    rt = tuned(open_runtime(settings, tmp_path), k_min=1, sibling_units=0, date_boost=date_boost)
    try:
        ingest_turns(rt)
        as_of = datetime(2026, 3, 2, tzinfo=UTC)
        right = rt.retriever.query(
            QueryRequest(
                tenant_id="t", query="What happened to the turtles on 28 February 2026?", as_of=as_of
            )
        )
        sources = {s for m in right.memories for s in m.source_ids}
        assert right.memories[0].source_ids == ["m1"]
        if not date_boost:
            assert "m2" not in sources  # m0 is "last month": February holds the 28th
        wrong = rt.retriever.query(
            QueryRequest(tenant_id="t", query="What did Joanna finish in December 2025?", as_of=as_of)
        )
        assert any("screenplay" in m.text for m in wrong.memories)  # stated 2026-02: no unit in December
    finally:
        rt.close()


def fact(text: str, persons: list[str], minute: int):  # type: ignore[no-untyped-def]
    from simplemem.schemas.memory import MemoryKind, MemoryUnit

    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"m{minute}"],
        stated_at=datetime(2026, 3, 1, 10, minute, tzinfo=UTC).isoformat(),
        speaker="Sam",
        persons=persons,
    )


def test_a_person_named_in_the_query_favours_memories_without_excluding_the_rest(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """NER tags a name in one sentence and not the next: "Tomas landed at noon" lists no Tomas, and
    "She brought Sam a bowl" names nobody. Neither may be lost to a query about the person."""
    from simplemem.processors.ingest.decompose import DraftUnit
    from simplemem.processors.ingest.pipeline import Indexer
    from simplemem.runtime import open_runtime

    rt = tuned(open_runtime(settings, tmp_path), k_min=3, k_max=3, sibling_units=0)
    try:
        units = [
            fact("Sam's cousin Tomas is visiting from Lyon.", ["Sam", "Tomas"], 0),
            fact("Tomas landed at noon.", ["Sam"], 1),
            fact("Sam's sister Ines is coming over from Porto.", ["Sam", "Ines"], 2),
            fact("She brought Sam a hand-painted ceramic bowl.", ["Sam"], 3),
            fact("Sam renewed the car insurance with Allianz.", ["Sam"], 4),
            fact("Sam's dentist appointment moved to Thursday.", ["Sam"], 5),
        ]
        Indexer(rt.embedder, rt.lexical, rt.vectors).index([DraftUnit(u) for u in units])
        landed = rt.retriever.query(QueryRequest(tenant_id="t", query="When did Tomas land?"))
        assert landed.memories[0].text == "Tomas landed at noon."
        bowl = rt.retriever.query(QueryRequest(tenant_id="t", query="What did Ines bring as a gift?"))
        # the bowl resembles the question most; the memory about Ines is lifted above the others
        assert {m.text for m in bowl.memories[:2]} == {
            "She brought Sam a hand-painted ceramic bowl.",
            "Sam's sister Ines is coming over from Porto.",
        }
    finally:
        rt.close()


def test_a_fact_said_twice_cites_both_messages(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """The context shows a repeated statement once, and that memory cites every message that said
    it (asking where a fact came from finds both). A statement that differs in its number is
    another fact, not a repeat."""
    from simplemem.processors.ingest.decompose import DraftUnit
    from simplemem.processors.ingest.pipeline import Indexer
    from simplemem.runtime import open_runtime

    rt = tuned(open_runtime(settings, tmp_path), k_min=3, k_max=3, sibling_units=0)
    try:
        units = [
            fact("Sam spends about two hours a day on coding exercises.", ["Sam"], 0),
            fact("Sam spends about two hours a day on coding exercises!", ["Sam"], 1),
            fact("Sam spends about three hours a day on coding exercises.", ["Sam"], 2),
            fact("Sam renewed the car insurance with Allianz.", ["Sam"], 3),
        ]
        Indexer(rt.embedder, rt.lexical, rt.vectors).index([DraftUnit(u) for u in units])
        result = rt.retriever.query(QueryRequest(tenant_id="t", query="How long does Sam spend coding?"))
        two = [m for m in result.memories if "two hours" in m.text]
        assert len(two) == 1 and sorted(two[0].source_ids) == ["m0", "m1"]
        assert result.context.count("two hours") == 1
        three = [m for m in result.memories if "three hours" in m.text]
        assert [m.source_ids for m in three] == [["m2"]]
    finally:
        rt.close()


@pytest.mark.parametrize("cap", [1, 2])
def test_a_gathering_question_keeps_the_statement_after_a_mention(tmp_path, settings, cap: int) -> None:  # type: ignore[no-untyped-def]
    """A question that gathers ("how long ...") takes no siblings, so the duration said in the
    statement after the mention comes only if two statements of a message may enter the context."""
    from simplemem.processors.ingest.decompose import DraftUnit
    from simplemem.processors.ingest.pipeline import Indexer
    from simplemem.runtime import open_runtime
    from simplemem.schemas.memory import MemoryKind, MemoryUnit

    def said(text: str, message: str, minute: int) -> MemoryUnit:
        stated = datetime(2026, 3, 1, 10, minute, tzinfo=UTC).isoformat()
        return MemoryUnit.build(
            tenant_id="t", text=text, kind=MemoryKind.FACT, source_ids=[message], stated_at=stated
        )

    rt = tuned(open_runtime(settings, tmp_path), gather_units_per_message=cap, units_per_message=3)
    try:
        units = [
            said("Sam visited the Fushimi Inari shrine when Sam was in Japan in March.", "m0", 0),
            said("Sam spent two weeks travelling solo around the country.", "m0", 1),
            said("Sam renewed the car insurance with Allianz.", "m1", 2),
        ]
        Indexer(rt.embedder, rt.lexical, rt.vectors).index([DraftUnit(u) for u in units])
        result = rt.retriever.query(QueryRequest(tenant_id="t", query="How long was Sam in Japan?"))
        assert "Japan" in result.context
        assert ("two weeks" in result.context) == (cap == 2)
    finally:
        rt.close()


def test_api_filters_narrow_the_answer(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """The query service's filters: k, persons, a time range, kinds and sessions each restrict what
    comes back, without touching the answer when absent."""
    from datetime import date

    from simplemem.runtime import open_runtime
    from simplemem.schemas.query import QueryFilters

    rt = open_runtime(settings, tmp_path)
    try:
        ingest_turns(rt)
        ask = QueryRequest(tenant_id="t", query="What happened?", as_of=datetime(2026, 3, 2, tzinfo=UTC))
        plain = rt.retriever.query(ask)
        assert {tuple(m.source_ids) for m in plain.memories} >= {("m0",), ("m1",)}
        assert rt.retriever.query(ask, QueryFilters()).memories == plain.memories
        one = rt.retriever.query(ask, QueryFilters(k=1))
        assert one.k == 1
        nate = rt.retriever.query(ask, QueryFilters(persons=["Nate"]))
        assert nate.memories and all(m.source_ids == ["m1"] for m in nate.memories)
        later = rt.retriever.query(ask, QueryFilters(since=date(2027, 1, 1)))
        assert later.memories == []
        assert rt.retriever.query(ask, QueryFilters(kinds=["code"])).memories == []
        assert rt.retriever.query(ask, QueryFilters(sessions=["other"])).memories == []
        assert rt.retriever.query(ask, QueryFilters(sessions=["s"])).memories
    finally:
        rt.close()


@pytest.mark.parametrize(
    ("cues", "wide", "lookups"),
    [
        (
            "LIST_CUES",
            ["What books has Joanna read?", "Which cities has Jon visited?", "What pets does Nate have?"],
            ["What did Joanna finish writing?", "Which song motivates Nate?", "What is Ana's address?"],
        ),
        (
            "ADVICE_CUES",
            [
                "Can you suggest a gift for Joanna?",
                "My phone battery dies fast. Any tips?",
                "What should I cook?",
            ],
            ["What did Joanna finish writing?", "What gift did Nate suggest?", "Who should Ana call?"],
        ),
    ],
)
def test_questions_whose_answer_is_spread_over_sessions_get_k_max(  # type: ignore[no-untyped-def]
    tmp_path, settings, cues: str, wide: list[str], lookups: list[str]
) -> None:
    """A question for the things of a kind someone has ("What books has Joanna read?") and a request
    for advice ("Can you suggest a gift for Joanna?") get k_max, where a lookup naming her ("What did
    Joanna finish writing?") gets fewer."""
    from simplemem.processors.retrieval import question
    from simplemem.runtime import open_runtime

    pattern = getattr(question, cues)
    assert all(pattern.search(q) for q in wide)
    assert not any(pattern.search(q) for q in lookups)
    rt = open_runtime(settings, tmp_path)
    try:
        ingest_turns(rt)
        asked = rt.retriever.query(QueryRequest(tenant_id="t", query=wide[0]))
        lookup = rt.retriever.query(QueryRequest(tenant_id="t", query=lookups[0]))
        assert asked.k == rt.retriever.config.k_max > lookup.k
    finally:
        rt.close()


@pytest.mark.parametrize("enumerated", [True, False])
def test_each_thing_a_question_enumerates_is_searched(tmp_path, settings, enumerated: bool) -> None:  # type: ignore[no-untyped-def]
    """A question that enumerates ("Considering my X, Y and Z, how should I ..."), searched whole,
    has the aspect with the most statements fill its top k; searched by each aspect too, each one's
    best match is among them."""
    from simplemem.processors.ingest.decompose import DraftUnit
    from simplemem.processors.ingest.pipeline import Indexer
    from simplemem.runtime import open_runtime

    rt = tuned(
        open_runtime(settings, tmp_path),
        k_min=3,
        k_max=3,
        sibling_units=0,
        statement_aspects=3 if enumerated else 9,
    )
    try:
        units = [
            fact("My cover letter deadline for the Pixar application is March 25.", [], 0),
            fact("I revised my cover letter draft for the Pixar application deadline.", [], 1),
            fact("The cover letter deadline for the DreamWorks application is April 5.", [], 2),
            fact("My cover letter needs a stronger opening before the deadline.", [], 3),
            fact("I asked Greg to review my cover letter before the deadlines.", [], 4),
            fact("Greg rated my interview answers 8.2 out of 10 for clarity.", [], 5),
            fact("The Zoom call with the creative director is on April 22 at 11 AM.", [], 6),
            fact("I bought a new ergonomic chair for my home office.", [], 7),
        ]
        Indexer(rt.embedder, rt.lexical, rt.vectors).index([DraftUnit(u) for u in units])
        question = (
            "Considering my cover letter deadlines, the Zoom call with the creative director, and my "
            "interview clarity scores, how should I prioritize my preparation?"
        )
        found = rt.retriever.query(QueryRequest(tenant_id="t", query=question))
        cited = {s for m in found.memories for s in m.source_ids}
        assert len(found.memories) == 3
        assert ({"m5", "m6"} <= cited) == enumerated
    finally:
        rt.close()
