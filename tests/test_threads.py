"""Threads: a tenant's sessions grouped by subject, and what an order or a summary reads of them."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from simplemem.processors.retrieval.derived import (
    PLANS,
    Searches,
    gather_level,
    reads_one_subject,
    session_lines,
)
from simplemem.processors.retrieval.forms import QuestionForm
from simplemem.processors.retrieval.threads import (
    NO_THREADS,
    TenantThreads,
    Threads,
    average_linkage,
    focused_sessions,
    session_threads,
    thread_centres,
)
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.processors.stores.sqlite_vectors import SqliteVectorStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
COMMON = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)  # what every line shares


def rows(*directions: np.ndarray) -> np.ndarray:
    """Unit vectors of the common part plus each of ``directions``."""
    out = np.stack([COMMON + d for d in directions]).astype(np.float32)
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def unit(v: np.ndarray) -> np.ndarray:
    return (v / np.linalg.norm(v)).astype(np.float32)


def axis(i: int, size: float = 0.6) -> np.ndarray:
    v = np.zeros(6, dtype=np.float32)
    v[i] = size
    return v


def test_average_linkage_merges_while_groups_stay_alike() -> None:
    similarity = np.array(
        [
            [1.0, 0.9, 0.1, 0.0],
            [0.9, 1.0, 0.2, 0.1],
            [0.1, 0.2, 1.0, 0.5],
            [0.0, 0.1, 0.5, 1.0],
        ]
    )
    assert average_linkage(similarity, 0.4) == [[0, 1], [2, 3]]
    assert average_linkage(similarity, 0.6) == [[0, 1], [2], [3]]
    # group to group is the mean of its members' pairs (0.1, 0.2, 0.0, 0.1), not the closest pair
    assert average_linkage(similarity, 0.15) == [[0, 1], [2, 3]]


def test_sessions_of_two_projects_are_two_threads() -> None:
    """What all sessions share (the common part) does not join them; what a project's sessions share does."""
    lines = {
        "budget-1": rows(axis(1), axis(1) + axis(3, 0.2)),
        "budget-2": rows(axis(1) + axis(4, 0.2), axis(1)),
        "garden-1": rows(axis(2), axis(2) + axis(5, 0.2)),
        "garden-2": rows(axis(2) + axis(3, 0.2)),
    }
    threads = session_threads(lines)
    assert threads["budget-1"] == threads["budget-2"] != threads["garden-1"] == threads["garden-2"]


def test_the_sessions_of_one_subject_are_each_a_thread_of_their_own() -> None:
    """A tenant with one subject: its sessions differ only by their sub-topics, which do not join them
    (a thread of one session decides nothing)."""
    lines = {f"s{i}": rows(axis(1) + axis(2 + i, 0.3)) for i in range(4)}
    assert len(set(session_threads(lines).values())) == 4


def line(uid: str, session: str, when: datetime = T0) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=f"user: I'm trying to sort out the garden step {uid} — assistant: Start small",
        kind=MemoryKind.TIMELINE,
        source_ids=[f"m{uid}", f"a{uid}"],
        stated_at=when.isoformat(),
        session_id=session,
    )


def two_projects(relevance_b: float = 0.1) -> tuple[Threads, np.ndarray]:
    """Threads A (sessions A1-A3) and B (B1, B2) pointing different ways, and a question about A."""
    centres = {0: unit(axis(1)), 1: unit(axis(2))}
    thread_of = {"A1": 0, "A2": 0, "A3": 0, "B1": 1, "B2": 1}
    return Threads(thread_of, {}, centres, unit(axis(1) + axis(2))), unit(axis(1))


def test_the_heaviest_thread_holds_the_subject_though_another_has_the_heaviest_session() -> None:
    """Thread A's lines are many and relevant; thread B has the single best session (many weak lines).
    The subject is A's sessions, all of them (one of them matched nothing), and no session of B."""
    a_lines = [line("a1", "A1"), line("a2", "A2")]
    units = {u.id: u for u in [*a_lines, *(line(f"b{i}", "B1") for i in range(20))]}
    relevance = {uid: (1.0 if units[uid] in a_lines else 0.1) for uid in units}
    threads, question = two_projects()
    assert focused_sessions(list(units), relevance, units, threads, question) == {"A1", "A2", "A3"}


def test_a_question_as_near_the_whole_history_as_the_thread_reads_no_thread() -> None:
    """The phases of one long project are threads too: a question about the whole project is as near
    all the lines as the phase it weighs most, and the session rule decides."""
    units = {u.id: u for u in [line("a1", "A1"), line("a2", "A2"), line("b1", "B1"), line("b2", "B2")]}
    relevance = {uid: 1.0 if str(units[uid].session_id).startswith("A") else 0.5 for uid in units}
    threads, about_a = two_projects()
    assert focused_sessions(list(units), relevance, units, threads, about_a) == {"A1", "A2", "A3"}
    about_both = unit(axis(1) + axis(2))
    assert focused_sessions(list(units), relevance, units, threads, about_both) == {"A1", "A2", "B1", "B2"}


def test_a_thread_is_the_subject_when_the_question_is_nearer_it_than_all_lines() -> None:
    threads, about_a = two_projects()
    assert threads.is_subject(0, about_a) and not threads.is_subject(1, about_a)
    assert not threads.is_subject(0, unit(axis(1) + axis(2)))
    assert not replace(threads, overall=None).is_subject(0, about_a)  # not read: nothing is decided
    assert not threads.is_subject(7, about_a)


def test_thread_centres_point_where_their_sessions_lines_do() -> None:
    lines = {"A1": rows(axis(1)), "A2": rows(axis(1), axis(1)), "B1": rows(axis(2))}
    centres, overall = thread_centres(lines, {"A1": 0, "A2": 0, "B1": 1})
    assert np.allclose(centres[0], rows(axis(1))[0], atol=1e-6)
    assert np.allclose(centres[1], rows(axis(2))[0], atol=1e-6)
    assert overall is not None and abs(float(np.linalg.norm(overall)) - 1.0) < 1e-6
    assert float(overall @ centres[0]) > float(overall @ centres[1])  # three of its four lines are A's
    assert thread_centres({}, {}) == ({}, None)


def test_without_threads_of_several_sessions_the_session_rule_decides() -> None:
    units = {u.id: u for u in [line("a", "s1"), line("b", "s2"), line("c", "s3")]}
    a, b, c = units
    relevance = {a: 1.0, b: 0.5, c: 0.1}
    expected = {"s1", "s2"}  # s3 weighs less than a quarter of s1
    question = rows(axis(1))[0]
    assert focused_sessions([a, b, c], relevance, units, NO_THREADS, question) == expected
    singletons = Threads({"s1": 0, "s2": 1, "s3": 2}, {}, {t: question for t in range(3)}, rows(axis(2))[0])
    assert focused_sessions([a, b, c], relevance, units, singletons, question) == expected


def test_an_order_question_reads_every_line_of_its_threads_sessions(tmp_path: Path) -> None:
    """Lines of the subject's sessions that the search cannot find (other words, far in meaning) are
    read all the same; another thread's lines that match the question's words are not; a line stated
    after the question is not."""
    garden = [line(f"g{i}", f"garden-{i % 2}", T0 + timedelta(hours=i)) for i in range(6)]
    hidden = MemoryUnit.build(
        tenant_id="t",
        text="user: compost bins arrived — assistant: Layer browns",
        kind=MemoryKind.TIMELINE,
        source_ids=["mh"],
        stated_at=(T0 + timedelta(hours=7)).isoformat(),
        session_id="garden-1",
    )
    later = line("late", "garden-0", T0 + timedelta(days=9))
    other = [line(f"o{i}", f"office-{i % 2}") for i in range(3)]
    units = [*garden, hidden, later, *other]
    vectors = np.array(
        [[1.0, 0.1 * i, 0.0] for i in range(6)] + [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]] + [[0.2, 0.0, 1.0]] * 3,
        dtype=np.float32,
    )
    lexical = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    store = SqliteVectorStore(tmp_path / "vectors.sqlite", dim=3)
    try:
        lexical.upsert(units)
        store.upsert(units, vectors)
        read = TenantThreads(lexical, store).read("t")
        assert set(read.lines_of["garden-1"]) == {u.id for u in garden[1::2]} | {hidden.id}
        thread_of = {"garden-0": 0, "garden-1": 0, "office-0": 1, "office-1": 1}
        vec_of = store.vectors("t", [u.id for u in units])
        rows_of = {s: np.stack([vec_of[uid] for uid in ids]) for s, ids in read.lines_of.items()}
        threads = Threads(thread_of, read.lines_of, *thread_centres(rows_of, thread_of))
        q = np.array([1.0, 0.0, 0.0], dtype=np.float32)
        search = Searches(
            lexical, store, "t", T0 + timedelta(days=1), 64, "In what order did I sort out the garden?", q
        )
        order = replace(
            next(lv for lv in PLANS[QuestionForm.ORDER].levels if lv.whole_sessions), digest=False
        )
        cited = {s for u, _ in gather_level(replace(search, threads=threads), order) for s in u.source_ids}
        assert "mh" in cited and "mlate" not in cited
        assert not any(s.startswith("mo") for s in cited)
        # the lines the search did not find join below the least relevant it found, when they fit
        found = {u.id: u for u in garden}
        fused = {uid: 0.5 for uid in found}
        added = session_lines(replace(search, threads=threads), order, {"garden-0", "garden-1"}, fused, found)
        assert added == [hidden.id] and 0 <= fused[hidden.id] < 0.5 and hidden.id in found
        few = replace(order, lines=2)  # 7 lines of the sessions are more than three times 2
        assert session_lines(replace(search, threads=threads), few, {"garden-0", "garden-1"}, {}, {}) == []
    finally:
        lexical.close()
        store.close()


def test_an_order_or_a_summary_reads_one_thread_unless_it_weighs_alternatives() -> None:
    order, summary, lookup = (
        PLANS[f] for f in (QuestionForm.ORDER, QuestionForm.SUMMARY, QuestionForm.LOOKUP)
    )
    assert reads_one_subject("In what order did I set up the garden beds?", order)
    assert reads_one_subject("Summarize how my garden project went", summary)
    assert not reads_one_subject("Which did I plant first, the tomatoes or the marigolds?", order)
    assert not reads_one_subject("Where are the garden beds?", lookup)
