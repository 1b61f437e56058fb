"""Derived memory: the lines made beside the units (timeline, profile, instructions, preferences), the
question kinds that read them, the stores keeping them apart from the units, and the whole path
embedded: written with their window, read first by the questions that need them, forgotten with
their message, rebuilt the same by a replay."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from simplemem.processors.language.tokens import count_tokens
from simplemem.processors.lifecycle.derived import compact, derive_window, reply_gist, subject_words
from simplemem.processors.retrieval.budget import Budget, fit
from simplemem.processors.retrieval.derived import (
    PLANS,
    Level,
    Searches,
    diverse_order,
    gather_level,
)
from simplemem.processors.retrieval.forms import QuestionForm, answer_kind, question_form
from simplemem.processors.retrieval.render import build_context, digests
from simplemem.processors.retrieval.threads import NO_THREADS, focused_sessions
from simplemem.processors.stores.protocols import SymbolicFilter
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.stream import DeletionRequest
from simplemem.schemas.window import AnalyzedMessage, Sentence, Window

T0 = datetime(2026, 2, 2, 9, 0, tzinfo=UTC)


def said(i: int, role: Role, *sentences: str, speaker: str | None = None) -> AnalyzedMessage:
    return AnalyzedMessage(
        tenant_id="t",
        session_id="s",
        message_id=f"m{i}",
        speaker=speaker or role.value,
        role=role,
        ts=T0 + timedelta(minutes=2 * i),
        text=" ".join(sentences),
        prose=" ".join(sentences),
        sentences=[Sentence(text=s, tokens=[]) for s in sentences],
    )


def window(*messages: AnalyzedMessage, new_from: int = 0) -> Window:
    return Window(tenant_id="t", session_id="s", window_id="w", messages=list(messages), new_from=new_from)


def kinds_of(lines: list[Any]) -> list[tuple[str, str]]:
    return [(d.unit.kind.value, d.unit.text) for d in lines]


def plan_level(form: QuestionForm, kind: MemoryKind = MemoryKind.TIMELINE) -> Level:
    """The level of ``form``'s plan that reads ``kind``."""
    return next(lv for lv in PLANS[form].levels if kind in lv.kinds)


def timeline(texts: list[str]) -> list[MemoryUnit]:
    """Timeline lines of ``texts``, line i citing message "m<i>"."""
    return [unit(text, MemoryKind.TIMELINE, f"m{i}") for i, text in enumerate(texts)]


@contextmanager
def timeline_searches(tmp_path: Path, lines: list[MemoryUnit], step: float, asked: str) -> Iterator[Searches]:
    """``lines`` in a store of their own, line i at vector (1, step * i), searched for ``asked``."""
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    try:
        lexical.upsert(lines)
        vectors.upsert(lines, np.array([[1, step * i] for i in range(len(lines))], dtype=np.float32))
        q = np.array([1.0, 0.0], dtype=np.float32)
        yield Searches(lexical, vectors, "t", T0 + timedelta(days=1), 64, asked, q)
    finally:
        lexical.close()
        vectors.close()


def test_an_answer_completes_its_requests_timeline_line_citing_both() -> None:
    ask = said(0, Role.USER, "I'm adding password hashing to the budget app with Werkzeug.", "Can you help?")
    answer = said(1, Role.ASSISTANT, "Certainly!", "Use generate_password_hash when a user signs up.")
    lines = derive_window(window(ask, answer))
    timeline = [d.unit for d in lines if d.unit.kind == MemoryKind.TIMELINE]
    assert len(timeline) == 1
    assert timeline[0].source_ids == ["m0", "m1"]
    assert timeline[0].stated_at == ask.ts.isoformat()  # dated by the request
    assert "password hashing" in timeline[0].text and "generate_password_hash" in timeline[0].text
    assert "Certainly" not in timeline[0].text


def test_a_request_alone_or_an_answer_to_context_only_leaves_no_line_twice() -> None:
    ask = said(0, Role.USER, "I'm adding password hashing to the budget app.")
    answer = said(1, Role.ASSISTANT, "Use generate_password_hash when a user signs up, then store it.")
    assert not [d for d in derive_window(window(ask)) if d.unit.kind == MemoryKind.TIMELINE]
    # the request was new in an earlier window: this window's answer still makes the exchange line
    later = derive_window(window(ask, answer, new_from=1))
    assert [d.unit.source_ids for d in later if d.unit.kind == MemoryKind.TIMELINE] == [["m0", "m1"]]


def test_between_people_each_message_is_a_timeline_line_of_its_own() -> None:
    a = said(0, Role.USER, "We adopted a puppy named Rex last week.", speaker="Ana")
    b = said(1, Role.USER, "That's lovely, my daughter wants one too.", speaker="Ben")
    lines = [d.unit for d in derive_window(window(a, b, new_from=1)) if d.unit.kind == MemoryKind.TIMELINE]
    assert [u.source_ids for u in lines] == [["m1"]]
    assert lines[0].text.startswith("Ben: ")


@pytest.mark.parametrize(
    ("sentence", "kind"),
    [
        (
            "Always format all code snippets with syntax highlighting when I ask about implementation.",
            "instruction",
        ),
        ("From now on, answer in bullet points.", "instruction"),
        ("Please never suggest paid services.", "instruction"),
        ("I want you to always include version numbers.", "instruction"),
        ("I prefer simple, minimal dependencies to keep the app lightweight.", "preference"),
        ("I'd rather use SQLite than Postgres for this.", "preference"),
        ("My favourite editor is Vim.", "preference"),
        ("I'm a junior backend developer at a small agency.", "profile"),
        ("I'm using Flask 2.3.1 on Python 3.11.", "profile"),
        ("My deadline is April 15.", "profile"),
    ],
)
def test_a_users_standing_instructions_preferences_and_profile_are_lines_of_their_kind(
    sentence: str, kind: str
) -> None:
    lines = kinds_of(derive_window(window(said(0, Role.USER, sentence))))
    assert (kind, f"user: {sentence}") in lines


@pytest.mark.parametrize(
    "sentence",
    [
        "My colleague always forgets the tests.",
        "The build never finishes on time.",
        "Can you always be this quick?",
        "It is a bit slow.",
    ],
)
def test_sentences_that_only_report_are_no_instruction_or_profile(sentence: str) -> None:
    lines = kinds_of(derive_window(window(said(0, Role.USER, sentence))))
    assert not [k for k, _ in lines if k in ("instruction", "profile")]


def test_the_assistants_sentences_leave_no_instruction_or_preference() -> None:
    ask = said(0, Role.USER, "How should I structure the app?")
    answer = said(1, Role.ASSISTANT, "I prefer blueprints. Always keep the factory small.")
    assert [k for k, _ in kinds_of(derive_window(window(ask, answer)))] == ["timeline"]


def test_a_long_sentence_keeps_its_words_from_the_cue() -> None:
    long = (
        "Given the deadline and the team and the many constraints we have " * 3 + "I prefer tabs over spaces."
    )
    (line,) = [t for k, t in kinds_of(derive_window(window(said(0, Role.USER, long)))) if k == "preference"]
    assert line.startswith("user: I prefer tabs")


def test_an_answers_opening_courtesies_are_not_its_gist() -> None:
    answer = said(1, Role.ASSISTANT, "Absolutely, Craig!", "Great question.", "Index the date column first.")
    assert reply_gist(answer) == "Index the date column first."


@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("In what order did we set up the database, the login and the deployment?", QuestionForm.ORDER),
        ("Which came first, the login page or the charts?", QuestionForm.ORDER),
        ("What was the timeline of the kitchen renovation?", QuestionForm.ORDER),
        ("Walk me through the sequence of fixes for the login bug.", QuestionForm.ORDER),
        # a noun that names an order is the subject of a summary asked for
        ("Can you give me a summary of how my pilot's timeline and tasks changed?", QuestionForm.SUMMARY),
        ("Summarize, in order, how the garden plan changed.", QuestionForm.ORDER),
        ("Give me an overview of everything we did on the garden plan.", QuestionForm.SUMMARY),
        ("Summarize how my thesis evolved.", QuestionForm.SUMMARY),
        ("How has my training plan progressed?", QuestionForm.SUMMARY),
        ("How many weeks are there between the two releases?", QuestionForm.DURATION),
        ("How many tests did I add across the sessions?", QuestionForm.LIST),
        ("List the libraries I installed.", QuestionForm.LIST),
        ("Can you list the tools I tried?", QuestionForm.LIST),
        # "list" as a noun: a request for advice
        ("I'm planning my reading list. Can you suggest some books for me?", QuestionForm.ADVICE),
        ("Can you show me how to add a search box?", QuestionForm.ADVICE),
        ("What would you recommend for caching here?", QuestionForm.ADVICE),
        ("Write a function that parses the log.", QuestionForm.ADVICE),
        ("How did you suggest I speed up the page load?", QuestionForm.RECALL),
        ("What fix had you proposed for the flaky upload test?", QuestionForm.RECALL),
        ("Remind me what you told me about watering the tomatoes.", QuestionForm.RECALL),
        ("Where do you think I should hold the team offsite?", QuestionForm.ADVICE),
        ("Should I move the backups to the new server?", QuestionForm.ADVICE),
        ("What is my sister's name?", QuestionForm.LOOKUP),
        ("When does my first sprint end?", QuestionForm.LOOKUP),
    ],
)
def test_question_kinds_by_their_form(query: str, kind: QuestionForm) -> None:
    assert question_form(query) == kind


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("When is my dentist appointment?", "date dates"),
        ("Remind me, when was the launch?", "date dates"),
        ("What date did we pick for the move?", "date dates"),
        ("What time does the call start?", "time times"),
        ("How much did the new tyres cost?", "cost costs amount"),
        ("Where is the spare key?", ""),
        ("Tell me about the day we met.", ""),
    ],
)
def test_what_a_question_asks_for_in_the_words_of_instructions(query: str, words: str) -> None:
    assert answer_kind(query) == words


def test_diverse_order_prefers_a_line_unlike_the_ones_taken() -> None:
    vectors = {"a": np.array([1.0, 0.0]), "b": np.array([1.0, 0.0]), "c": np.array([0.0, 1.0])}
    relevance = {"a": 1.0, "b": 0.95, "c": 0.7}
    assert diverse_order(["a", "b", "c"], relevance, vectors, 2) == ["a", "c"]
    assert diverse_order(["a", "b", "c"], relevance, vectors, 3) == ["a", "c", "b"]


def unit(text: str, kind: MemoryKind, source: str) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=kind,
        source_ids=[source],
        stated_at=T0.isoformat(),
        keywords=["garden"],
    )


def test_the_embedded_stores_keep_derived_lines_out_of_a_units_search_and_find_them_by_kind(
    tmp_path: Path,
) -> None:
    fact = unit("Ana planted tomatoes in the garden.", MemoryKind.FACT, "m1")
    line = unit("Ana: I planted tomatoes in the garden.", MemoryKind.TIMELINE, "m1")
    rule = unit("Ana: Always answer about the garden in metric units.", MemoryKind.INSTRUCTION, "m2")
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    lexical.upsert([fact, line, rule])
    vectors.upsert([fact, line, rule], np.array([[1, 0], [1, 0.1], [0.9, 0.2]], dtype=np.float32))
    units_only = SymbolicFilter()
    timeline = SymbolicFilter(derived=(MemoryKind.TIMELINE.value,))
    q = np.array([1.0, 0.0], dtype=np.float32)
    assert {h.id for h in lexical.search("t", "garden tomatoes", 10, units_only)} == {fact.id}
    assert {h.id for h in vectors.search("t", q, 10, units_only)} == {fact.id}
    assert {h.id for h in lexical.search("t", "garden tomatoes", 10, timeline)} == {line.id}
    assert {h.id for h in vectors.search("t", q, 10, timeline)} == {line.id}
    both = SymbolicFilter(derived=("timeline", "instruction"))
    assert {h.id for h in vectors.search("t", q, 10, both)} == {line.id, rule.id}
    lexical.delete("t", [line.id])  # a derived line leaves the index like a unit
    assert lexical.search("t", "garden tomatoes", 10, timeline) == []
    lexical.close()
    vectors.close()


EVENTS = [
    ("u1", "user", "I'm building a budget tracker in Flask and I need a login page. Can you help me?"),
    ("a1", "assistant", "Sure! Start with Flask-Login and a User model that stores a password hash."),
    ("u2", "user", "Always include version numbers when I ask about libraries or dependencies."),
    ("a2", "assistant", "Understood, I will include version numbers whenever libraries come up."),
    ("u3", "user", "Now I want charts of monthly spending. How should I draw them?"),
    ("a3", "assistant", "Great idea. Matplotlib can draw a bar chart of the monthly totals."),
    ("u4", "user", "Next I need to deploy the tracker to a small server. Any advice?"),
    ("a4", "assistant", "Of course. Gunicorn behind nginx is a simple setup for a Flask app."),
]


def event_lines(tenant: str = "budget") -> list[tuple[str, bytes]]:
    out = []
    for i, (mid, role, text) in enumerate(EVENTS):
        ts = T0 + timedelta(days=3 * (i // 2), minutes=2 * i)
        event = {
            "tenant_id": tenant,
            "session_id": f"s{i // 2}",
            "message_id": mid,
            "speaker": role,
            "role": role,
            "text": text,
            "ts": ts.isoformat(),
            "ends_exchange": role == "assistant",
        }
        out.append((mid, orjson.dumps(event)))
    return out


@pytest.fixture(scope="module")
def rt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    runtime = open_runtime(Settings(), tmp_path_factory.mktemp("derived"))
    runtime.pipeline.ingest(event_lines())
    yield runtime
    runtime.close()


def derived_units(rt: Any, tenant: str = "budget") -> list[MemoryUnit]:
    return [
        u
        for batch in rt.lexical.iter_units(tenant, 100)
        for u in batch
        if u.kind.value != "fact" and u.kind != MemoryKind.CODE
    ]


@pytest.mark.slow
def test_ingestion_writes_each_exchanges_timeline_line_and_the_instruction(rt: Any) -> None:
    lines = derived_units(rt)
    timeline = sorted(u.source_ids for u in lines if u.kind == MemoryKind.TIMELINE)
    assert timeline == [["u1", "a1"], ["u2", "a2"], ["u3", "a3"], ["u4", "a4"]]
    assert [u.source_ids for u in lines if u.kind == MemoryKind.INSTRUCTION] == [["u2"]]


@pytest.mark.slow
def test_an_instruction_is_searched_by_the_subject_of_its_condition(rt: Any) -> None:
    """ "Always include version numbers when I ask about libraries or dependencies" governs "which
    modules am I relying on?", which names neither version numbers nor the rule: its vector is that of
    "libraries or dependencies"."""
    (rule,) = [u for u in derived_units(rt) if u.kind == MemoryKind.INSTRUCTION]
    stored = rt.vectors.vectors("budget", [rule.id])[rule.id]
    subject, whole = rt.embedder.encode(["libraries or dependencies", rule.text])
    # (stored vectors are quantized, and a batch's quantization varies with its other texts)
    assert float(np.dot(stored, subject)) > 0.98 > float(np.dot(stored, whole))


@pytest.mark.slow
def test_an_order_question_gets_the_timeline_in_date_order_and_advice_gets_the_instruction(rt: Any) -> None:
    as_of = T0 + timedelta(days=30)
    order = rt.retriever.query(
        QueryRequest(
            tenant_id="budget",
            query="In what order did I work on the login, the charts and the deployment?",
            as_of=as_of,
        )
    )
    cited = [m.source_ids[0] for m in order.memories if m.kind == MemoryKind.TIMELINE]
    assert {"u1", "u3", "u4"} <= set(cited)
    assert order.context.index("login") < order.context.index("charts") < order.context.index("nginx")
    advice = rt.retriever.query(
        QueryRequest(
            tenant_id="budget",
            query="Can you suggest a library for exporting the charts to PDF?",
            as_of=as_of,
        )
    )
    assert any(m.kind == MemoryKind.INSTRUCTION and m.source_ids == ["u2"] for m in advice.memories)
    lookup = rt.retriever.query(
        QueryRequest(tenant_id="budget", query="What draws the bar chart?", as_of=as_of)
    )
    # a lookup reads only the derived lines close to it: the charts exchange, not the rule on libraries
    assert not [m for m in lookup.memories if m.kind == MemoryKind.INSTRUCTION]
    assert {m.source_ids[0] for m in lookup.memories if m.kind == MemoryKind.TIMELINE} <= {"u3"}
    assert order.context_tokens <= 550 and advice.context_tokens <= 550


@pytest.mark.slow
def test_forgetting_a_message_removes_its_derived_lines_and_a_replay_rebuilds_the_same(
    tmp_path: Path,
) -> None:
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    runtime = open_runtime(Settings(), tmp_path)
    runtime.pipeline.ingest(event_lines("a"))
    runtime.pipeline.ingest(event_lines("b"))  # the replay's reference: the same events, another tenant
    before = {(u.kind, u.text, tuple(u.source_ids)) for u in derived_units(runtime, "a")}
    runtime.forget(DeletionRequest(tenant_id="a", message_ids=["u2"], requested_at=datetime.now(UTC)))
    after = derived_units(runtime, "a")
    assert not [u for u in after if "u2" in u.source_ids]
    assert {u.source_ids[0] for u in after if u.kind == MemoryKind.TIMELINE} == {"u1", "u3", "u4"}
    replayed = {(u.kind, u.text, tuple(u.source_ids)) for u in derived_units(runtime, "b")}
    assert replayed == before
    runtime.close()


@pytest.mark.parametrize(
    "query",
    [
        "Have I worked with Flask routes in this project?",
        "Did we ever talk about the deployment?",
        "So have I already set up the database?",
    ],
)
def test_whether_something_came_up_is_a_history_question(query: str) -> None:
    assert question_form(query) == QuestionForm.HISTORY


@pytest.mark.integration
def test_services_mode_builds_and_reads_the_same_derived_memory(rt: Any, tmp_path: Path) -> None:
    from simplemem.runtime import open_runtime
    from tests.services import store_settings

    with store_settings("derived", milvus_index_type="HNSW") as settings:
        services = open_runtime(settings, tmp_path)
        try:
            services.pipeline.ingest(event_lines())
            services.vectors.flush()
            theirs = {(u.id, u.kind) for u in derived_units(services)}
            assert theirs == {(u.id, u.kind) for u in derived_units(rt)}
            as_of = T0 + timedelta(days=30)
            for query in (
                "In what order did I work on the login, the charts and the deployment?",
                "Can you suggest a library for exporting the charts to PDF?",
            ):
                request = QueryRequest(tenant_id="budget", query=query, as_of=as_of)
                mine = {m.id for m in rt.retriever.query(request).memories if m.kind != MemoryKind.FACT}
                assert mine and mine == {
                    m.id for m in services.retriever.query(request).memories if m.kind != MemoryKind.FACT
                }
        finally:
            services.close()


def test_a_question_that_enumerates_is_searched_by_each_of_its_aspects() -> None:
    from simplemem.processors.retrieval.forms import aspects

    parts = aspects(
        "Summarize the project, including the key features implemented, the deployment timeline and the security fixes."
    )
    assert parts[1:] == ["the key features implemented", "the deployment timeline", "the security fixes."]
    assert aspects("What did I plan for dogs, cats and birds?") == []  # single words: one aspect


def test_a_line_two_aspects_rank_alike_is_shown_once() -> None:
    """Aspects of one question often find the same line at the same rank: it is taken once, else the
    timeline shows it twice and pays its tokens twice."""
    from simplemem.processors.retrieval.derived import _round_robin

    assert _round_robin([["a", "b"], ["c", "b"], ["c", "d"]]) == ["a", "c", "b", "d"]


def test_a_timeline_keeps_to_the_sessions_that_hold_its_subject() -> None:
    """Lines of a session that matches the question only in passing (another project sharing a word)
    leave the pool; every session that carries the subject keeps its lines."""

    def line(uid: str, session: str) -> MemoryUnit:
        return MemoryUnit.build(
            tenant_id="t1",
            text=f"user: line {uid}",
            kind=MemoryKind.TIMELINE,
            source_ids=[f"m{uid}"],
            stated_at="2026-01-10T10:00:00+00:00",
            session_id=session,
        )

    units = {u.id: u for u in [line("a", "s1"), line("b", "s1"), line("c", "s2"), line("d", "s3")]}
    a, b, c, d = units
    relevance = {a: 1.0, b: 0.9, c: 0.6, d: 0.2}
    assert focused_sessions([a, b, c, d], relevance, units, NO_THREADS, np.ones(3)) == {"s1", "s2"}


def test_a_digest_keeps_the_words_that_carry_the_subject() -> None:
    asked = "I'm kinda trying to figure out how I can split the 2024 budget between Ana and the garage"
    assert subject_words(asked, 5) == "split 2024 budget between Ana"
    assert subject_words("hmm, can you just show me?", 4) == ""
    # how a request is framed and how an answer receives it say nothing of its subject
    assert subject_words("I'm looking at sneakers and I'm worried about blisters", 3) == "sneakers blisters"
    assert subject_words("Great choice! Given your budget, the Brooks fit", 3) == "choice! budget, Brooks"


def test_a_digest_line_shows_both_sides_and_cites_what_it_shows() -> None:
    line = MemoryUnit.build(
        tenant_id="t1",
        text="user: I'm trying to set up the Postgres schema for invoices — assistant: Start with a table per entity",
        kind=MemoryKind.TIMELINE,
        source_ids=["m1", "m2"],
        stated_at="2026-01-10T10:00:00+00:00",
    )
    both = compact(line, 4, 2, digest=True)
    assert both.text == "user: set up Postgres schema — assistant: Start table"
    assert both.source_ids == ["m1", "m2"]
    request = compact(line, 3, digest=True)
    assert request.text == "user: set up Postgres" and request.source_ids == ["m1"]
    assert compact(line, 3).text == "user: I'm trying to ..."


def test_a_list_reads_the_exchanges_with_an_assistant_not_the_lines_between_people(tmp_path: Path) -> None:
    """Between people a timeline line is one message's first words, which its statements hold; a list
    question (and a request for advice) reads only the lines of a request and its answer, as digests."""
    exchange = unit(
        "user: I'm trying to plan the garden beds — assistant: Start with raised beds",
        MemoryKind.TIMELINE,
        "m1",
    )
    said = unit("Ana: I planted tomatoes in the garden beds.", MemoryKind.TIMELINE, "m3")
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    lexical.upsert([exchange, said])
    vectors.upsert([exchange, said], np.array([[1, 0], [1, 0.1]], dtype=np.float32))
    q = np.array([1.0, 0.0], dtype=np.float32)
    search = Searches(
        lexical, vectors, "t", T0 + timedelta(days=1), 64, "How many garden beds did I plan?", q
    )
    list_timeline = next(
        level for level in PLANS[QuestionForm.LIST].levels if MemoryKind.TIMELINE in level.kinds
    )
    found = [line for line, _ in gather_level(search, list_timeline)]
    assert [line.id for line in found] == [exchange.id]
    assert found[0].text == "user: plan garden beds" and found[0].source_ids == ["m1"]
    # so does a request for advice: what the user asked before, not what was said between people
    advice = [line for line, _ in gather_level(search, plan_level(QuestionForm.ADVICE))]
    assert [line.id for line in advice] == [exchange.id]
    lexical.close()
    vectors.close()


def test_a_profile_shows_the_latest_of_lines_that_state_the_same_thing(tmp_path: Path) -> None:
    """ "I use Flask 2.3" then, weeks later, "I use Flask 3.0": a lookup about the user reads the one
    that holds now; a profile line about something else stays."""

    def profile(text: str, source: str, day: int) -> MemoryUnit:
        return MemoryUnit.build(
            tenant_id="t",
            text=text,
            kind=MemoryKind.PROFILE,
            source_ids=[source],
            stated_at=(T0 + timedelta(days=day)).isoformat(),
        )

    old = profile("user: I'm using Flask 2.3 for the budget API", "m1", 0)
    new = profile("user: I'm using Flask 3.0 for the budget API", "m9", 20)
    other = profile("user: I'm a data analyst at a bakery", "m4", 5)
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    lexical.upsert([old, new, other])
    vectors.upsert([old, new, other], np.array([[1, 0], [0.98, 0.2], [0.6, 0.8]], dtype=np.float32))
    q = np.array([1.0, 0.05], dtype=np.float32)
    search = Searches(lexical, vectors, "t", T0 + timedelta(days=30), 64, "Which Flask version do I use?", q)
    level = plan_level(QuestionForm.LOOKUP, MemoryKind.PROFILE)
    assert [line.id for line, _ in gather_level(search, level)] == [new.id, other.id]
    lexical.close()
    vectors.close()


def test_a_long_timeline_shows_its_best_lines_in_more_words_and_the_rest_located(tmp_path: Path) -> None:
    """An order question's closest moments are read in more words; the others show a few, so the
    span fits: the line closest in meaning keeps five words of its request, the others two."""
    texts = [
        "user: I'm trying to set up the garden beds with raised cedar boxes — assistant: Start small",
        "user: I'm trying to water the garden beds on a drip timer schedule — assistant: Use a timer",
        "user: I'm trying to mulch the garden beds before the winter frost — assistant: Use straw",
    ]
    lines = [unit(text, MemoryKind.TIMELINE, f"m{i}") for i, text in enumerate(texts)]
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    lexical.upsert(lines)
    vectors.upsert(lines, np.array([[1, 0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32))
    q = np.array([1.0, 0.0], dtype=np.float32)
    search = Searches(
        lexical, vectors, "t", T0 + timedelta(days=1), 64, "In what order did I work on the garden beds?", q
    )
    order = plan_level(QuestionForm.ORDER)
    found = [line.text for line, _ in gather_level(search, replace(order, head_lines=1))]
    assert found[0] == "user: set up garden beds raised"
    assert sorted(found[1:]) == ["user: mulch garden", "user: water garden"]
    lexical.close()
    vectors.close()


def test_a_history_question_reads_digests_that_keep_their_negations(tmp_path: Path) -> None:
    """ "Have I ever used Redis?": a dozen moments as digests fit where six whole lines did, and a
    digest keeps "not" ("I'm not using Redis" is no digest "using Redis": a contradiction turns on it)."""
    assert subject_words("I'm not using Redis for the cache anymore", 4) == "not using Redis cache"
    lines = timeline(
        [
            f"user: I'm {'not ' * (i % 2)}using Redis for the cache in step {i} — assistant: Fine"
            for i in range(10)
        ]
    )
    with timeline_searches(tmp_path, lines, 0.1, "Have I ever used Redis for the cache?") as search:
        history = plan_level(QuestionForm.HISTORY)
        found = [line.text for line, _ in gather_level(search, history)]
    assert len(found) == 10
    assert "user: not using Redis cache step 1 — assistant: Fine" in found


def test_a_recall_question_reads_the_closest_exchanges_as_digests_citing_both_sides(tmp_path: Path) -> None:
    """ "What did you suggest for my resume?": eight exchanges fit as digests where four whole lines
    did, each citing the request and the answer it recalls."""
    lines = [
        MemoryUnit.build(
            tenant_id="t",
            text=f"user: I'm kinda trying to add keywords to section {i} of my resume — assistant: "
            f"Absolutely! Put the keywords in the summary and the skills of section {i}",
            kind=MemoryKind.TIMELINE,
            source_ids=[f"q{i}", f"a{i}"],
            stated_at=T0.isoformat(),
        )
        for i in range(8)
    ]
    asked = "What did you suggest for the keywords in my resume?"
    assert question_form(asked) == QuestionForm.RECALL
    with timeline_searches(tmp_path, lines, 0.05, asked) as search:
        recall = plan_level(QuestionForm.RECALL)
        found = [line for line, _ in gather_level(search, recall)]
    assert len(found) == 8
    assert (
        found[0].text
        == "user: add keywords section 0 resume — assistant: Put keywords summary skills section 0"
    )
    assert found[0].source_ids == ["q0", "a0"]


def test_an_order_or_a_summary_reads_a_long_span_whole(tmp_path: Path) -> None:
    """A subject the user brought up in well over a hundred moments: an order question reads them all,
    each located in two words of its request (citing it alone); a summary's in two words of the request
    and one of the answer, citing both."""
    texts = [
        f"user: I'm trying to prune the garden roses in bed {i} today — assistant: Cut above outward buds"
        for i in range(110)
    ]
    lines = [
        unit(text, MemoryKind.TIMELINE, f"m{i}").model_copy(update={"source_ids": [f"m{i}", f"a{i}"]})
        for i, text in enumerate(texts)
    ]
    with timeline_searches(tmp_path, lines, 0.001, "In what order did I prune the garden roses?") as search:
        order = plan_level(QuestionForm.ORDER)
        summary = plan_level(QuestionForm.SUMMARY)
        ordered = [line for line, _ in gather_level(search, replace(order, head_lines=1, diverse=False))]
        summed = [line for line, _ in gather_level(search, replace(summary, diverse=False))]
    assert order.lines >= len(texts) and summary.lines >= len(texts)
    assert {(line.text, len(line.source_ids)) for line in ordered[1:]} == {("user: prune garden", 1)}
    # a summary's ten closest moments in more words: it is about the whole course
    assert all(len(line.text) > len("user: prune garden — assistant: Cut") for line in summed[:10])
    assert {(line.text, len(line.source_ids)) for line in summed[10:]} == {
        ("user: prune garden — assistant: Cut", 2)
    }


def test_a_count_reads_dozens_of_moments_in_four_words_within_most_of_the_budget(tmp_path: Path) -> None:
    """A count spread over many messages: five dozen moments on its subject, each four words that carry
    it, rather than a dozen in six; and they may take most of the context (each cites its message in a
    few tokens, where a statement costs dozens), so that over forty of them fit."""
    lines = timeline(
        [
            f"user: I'm trying to plan raised garden beds for tomatoes this spring {i} — assistant: Fine"
            for i in range(70)
        ]
    )
    asked = "How many garden beds did I plan?"
    with timeline_searches(tmp_path, lines, 0.01, asked) as search:
        level = plan_level(QuestionForm.LIST)
        found = [line for line, _ in gather_level(search, level)]
    assert len(found) == 60
    assert {line.text for line in found} == {"user: plan raised garden beds"}
    share = PLANS[QuestionForm.LIST].share
    joined = digests([(line, 1.0) for line in found])
    budget = Budget(int(550 * share), level.line_tokens, count_tokens)
    assert len(fit(found, asked, budget, partial(build_context, joined=joined), joined)) > 40


def test_advice_reads_a_dozen_earlier_requests_on_its_subject_as_digests(tmp_path: Path) -> None:
    """A request for advice is tailored by what the user asked before on its subject: a dozen of those
    requests, each in the six words that carry it (citing the request alone), where three whole lines
    took the same tokens."""
    lines = timeline(
        [
            f"user: I'm kinda trying to figure out the watering schedule for raised garden bed {i} near the "
            "fence this spring — assistant: Fine"
            for i in range(15)
        ]
    )
    asked = "How should I plan the watering of my garden beds?"
    assert question_form(asked) == QuestionForm.ADVICE
    with timeline_searches(tmp_path, lines, 0.01, asked) as search:
        found = [line for line, _ in gather_level(search, plan_level(QuestionForm.ADVICE))]
    assert len(found) == 12
    assert all(line.text.startswith("user: watering schedule raised garden bed") for line in found)
    assert all(len(line.text.split()) == 1 + 6 and len(line.source_ids) == 1 for line in found)


def test_a_lookup_reads_an_instruction_that_governs_its_answer_in_other_words(tmp_path: Path) -> None:
    """ "When is my meeting at the studio?" and "Always format dates as MM/DD/YYYY when I ask about
    scheduling details" share no word and are only loosely alike in meaning: a lookup (and a
    duration) reads it; a list, which reads the timeline beside it, keeps to the closer ones."""
    rules = [
        unit(f"user: Always {text} when I ask about {topic}.", MemoryKind.INSTRUCTION, f"m{i}")
        for i, (text, topic) in enumerate(
            [
                ("include time zones", "meeting times"),
                ("confirm attendance", "social events"),
                ("format dates in MM/DD/YYYY", "scheduling details"),
                ("give cost breakdowns", "expenses"),
            ]
        )
    ]
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    vectors = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=2)
    lexical.upsert(rules)
    cosines = [0.6, 0.4, 0.25, 0.1]
    vectors.upsert(rules, np.array([[c, (1 - c * c) ** 0.5] for c in cosines], dtype=np.float32))
    q = np.array([1.0, 0.0], dtype=np.float32)

    def read(form: QuestionForm, question: str) -> list[str]:
        search = Searches(lexical, vectors, "t", T0 + timedelta(days=1), 64, question, q)
        level = plan_level(form, MemoryKind.INSTRUCTION)
        return [line.source_ids[0] for line, _ in gather_level(search, level)]

    where = "Where is my meeting at the studio?"
    assert read(QuestionForm.LOOKUP, where) == read(QuestionForm.DURATION, where) == ["m0", "m1", "m2"]
    assert read(QuestionForm.LIST, where) == ["m0", "m1"]
    # asked when, it asks for a date: the rule on dates is found by that word too, ranks higher, and
    # governs the answer however far in meaning (a list reads it below its floor)
    when = "When is my meeting at the studio?"
    assert read(QuestionForm.LOOKUP, when) == ["m0", "m2", "m1"]
    assert read(QuestionForm.LIST, when) == ["m0", "m2"]
    lexical.close()
    vectors.close()


def test_a_questions_aspects_are_waited_for_only_once_its_own_searches_are_done(tmp_path: Path) -> None:
    """Embedded, the aspects are embedded on another thread while the question's own searches run:
    given as what returns them, they are asked for once, after those searches, and the lines found
    are those found with the aspects given at once; a level that reads no aspect never waits."""
    texts = [
        "user: I set up the garden beds with raised cedar boxes — assistant: Start small",
        "user: I set up the drip timer for the tomatoes — assistant: Water at dawn",
        "user: I moved the compost bin behind the shed — assistant: Turn it weekly",
    ]
    lines = timeline(texts)
    asked = "In what order did I set up the garden beds, the drip timer and the compost bin?"
    parts = (
        ("the drip timer", np.array([0.6, 0.8], dtype=np.float32)),
        ("the compost bin", np.array([0.0, 1.0], dtype=np.float32)),
    )
    with timeline_searches(tmp_path, lines, 0.5, asked) as search:
        log: list[str] = []
        searched = search.vectors.search

        def logged(*args: Any, **kwargs: Any) -> Any:
            log.append("search")
            return searched(*args, **kwargs)

        def later() -> tuple[tuple[str, np.ndarray], ...]:
            log.append("aspects")
            return parts

        search.vectors.search = logged  # type: ignore[method-assign]
        order = plan_level(QuestionForm.ORDER)
        at_once = gather_level(replace(search, parts=parts), order)
        log.clear()
        waited = gather_level(replace(search, parts=later), order)
        assert [(u.id, u.text) for u, _ in waited] == [(u.id, u.text) for u, _ in at_once]
        assert log[0] == "search" and log.count("aspects") == 1
        log.clear()
        gather_level(replace(search, parts=later), plan_level(QuestionForm.RECALL))  # not diverse
        assert "aspects" not in log
