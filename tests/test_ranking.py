"""Ranking rules of the retrieval steps (search, boosts, select) as pure functions (no store, no model)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from simplemem.processors.retrieval.boosts import Boosts
from simplemem.processors.retrieval.config import RetrievalConfig
from simplemem.processors.retrieval.gather import Candidates
from simplemem.processors.retrieval.plan import Plan, fusion_weight, plan
from simplemem.processors.retrieval.question import GATHER_CUES, asked_places, asked_role
from simplemem.processors.retrieval.search import favour_within, fuse
from simplemem.processors.retrieval.select import select
from simplemem.processors.retrieval.siblings import sibling_order
from simplemem.processors.stores.protocols import Hit
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest


def unit(
    uid: str,
    event_time: str | None = None,
    speaker: str | None = None,
    text: str | None = None,
    role: Role = Role.USER,
) -> MemoryUnit:
    return MemoryUnit(
        id=uid,
        tenant_id="t",
        text=text or f"memory {uid}",
        kind=MemoryKind.FACT,
        source_ids=[f"m-{uid}"],
        stated_at=datetime(2026, 3, 1, tzinfo=UTC).isoformat(),
        event_time=event_time,
        speaker=speaker,
        role=role,
    )


def test_a_memory_with_its_event_time_is_lifted_for_a_question_about_time() -> None:
    units = {u.id: u for u in (unit("said"), unit("dated", "2026-02-28"), unit("far", "2026-01"))}
    ranked = [("said", 0.9), ("dated", 0.8), ("far", 0.5), ("unread", 0.4)]
    boosted = Boosts(event=0.2).apply(ranked, units)
    assert [uid for uid, _ in boosted] == ["dated", "said", "far", "unread"]
    assert dict(boosted)["far"] == 0.7 and dict(boosted)["unread"] == 0.4  # not read: not boosted


def test_what_the_named_person_said_themselves_is_lifted() -> None:
    units = {
        u.id: u
        for u in (
            unit("about", speaker="Caroline"),
            unit("own", speaker="Melanie"),
            unit("user", speaker="user"),
        )
    }
    ranked = [("about", 0.9), ("own", 0.85), ("user", 0.8)]
    boosted = Boosts(speakers=frozenset({"melanie"}), speaker=0.1).apply(ranked, units)
    assert [uid for uid, _ in boosted] == ["own", "about", "user"]
    assert Boosts(speakers=frozenset({"priya"}), speaker=0.1).apply(ranked, units) == ranked  # never speaks


@pytest.mark.parametrize(
    ("query", "role"),
    [
        ("How long have I been working in my current role?", Role.USER),
        ("What time do I wake up on Saturday mornings?", Role.USER),
        ("I’ve been struggling with my slow cooker. Any advice?", Role.USER),
        ("Can you remind me of the hostel you recommended?", Role.ASSISTANT),
        ("I was going through our previous chat: which venue was last?", Role.ASSISTANT),
        ("Which game did you say dancers perform at powwows?", Role.ASSISTANT),
        ("What did Melanie paint?", None),
        ("Which seeds were started first, the tomatoes or the marigolds?", None),
    ],
)
def test_the_role_a_question_is_about(query: str, role: Role | None) -> None:
    assert asked_role(query) == role


def said_in(roles: dict[str, Role]) -> dict[str, MemoryUnit]:
    """Units by id, each said in the given role."""
    return {uid: unit(uid, role=role) for uid, role in roles.items()}


def test_what_the_asked_role_said_is_lifted() -> None:
    units = said_in({"answer": Role.ASSISTANT, "own": Role.USER, "list": Role.ASSISTANT})
    ranked = [("answer", 0.9), ("list", 0.8), ("own", 0.7)]
    assert [uid for uid, _ in Boosts(asked=Role.USER, role=0.3).apply(ranked, units)] == [
        "own",
        "answer",
        "list",
    ]
    lifted = Boosts(asked=Role.ASSISTANT, role=0.3).apply(ranked, units)
    assert [uid for uid, _ in lifted] == ["answer", "list", "own"]
    assert [round(sc, 6) for _, sc in lifted] == [1.2, round(0.8 + 0.3 * 0.8 / 0.9, 6), 0.7]
    assert Boosts(asked=None, role=0.3).apply(ranked, units) == ranked


def test_an_unrelated_line_of_the_asked_role_stays_below_a_related_reply() -> None:
    """For "why was I charged 90?" the user's unrelated line ("account number ...") gets a tenth of
    the role's lift and stays below the assistant's reply about the refund."""
    units = said_in(
        {"charged": Role.USER, "fee": Role.ASSISTANT, "refund": Role.ASSISTANT, "account": Role.USER}
    )
    ranked = [("charged", 1.0), ("fee", 0.64), ("refund", 0.33), ("account", 0.13)]
    boosted = Boosts(asked=Role.USER, role=0.3).apply(ranked, units)
    assert [uid for uid, _ in boosted] == ["charged", "fee", "refund", "account"]
    assert [round(sc, 6) for _, sc in boosted] == [1.3, 0.64, 0.33, round(0.13 + 0.3 * 0.13, 6)]


def test_no_boost_keeps_the_order() -> None:
    units = {u.id: u for u in (unit("said", speaker="Sam"), unit("dated", "2026-02-28"))}
    ranked = [("said", 0.9), ("dated", 0.8)]
    assert Boosts(speakers=frozenset({"sam"})).apply(ranked, units) == ranked


def test_a_memory_within_the_date_is_favoured_and_one_outside_still_competes() -> None:
    wide = [("outside-strong", 1.0), ("inside", 0.5), ("outside-weak", 0.3)]
    within = [("inside", 0.55), ("inside-only", 0.2)]
    ranked = favour_within(wide, within, 0.4)
    assert [uid for uid, _ in ranked] == ["outside-strong", "inside", "inside-only", "outside-weak"]
    assert dict(ranked)["inside"] == 0.55 + 0.4  # its better score of the two searches, boosted


def planned(query: str, **config: object) -> Plan:
    """The plan of ``query`` for a tenant that knows no person names, with these config changes."""
    request = QueryRequest(tenant_id="t", query=query)
    return plan(request, None, RetrievalConfig().with_(**config), lambda words: [])


class Units:
    """The one lexical-store call the selection makes (without siblings): the units by id."""

    def __init__(self, units: list[MemoryUnit]) -> None:
        self.units = {u.id: u for u in units}

    def get(self, tenant_id: str, ids: list[str], *, with_context: bool = True) -> list[MemoryUnit]:
        return [self.units[i] for i in ids if i in self.units]


def test_a_boost_reaches_a_memory_ranked_well_below_k() -> None:
    """The selection reads ``select_head_factor`` * k candidates: a dated memory ranked 8th of a
    question about time still makes a top 2."""
    units = [unit(f"u{i}", text=f"a different statement number {i} about topic {i}") for i in range(7)]
    units.append(unit("dated", "2026-02-28", text="the boat trip happened on the last day of February"))
    ranked = [(u.id, 1.0 - i * 0.01) for i, u in enumerate(units)]
    question = planned("When was the boat trip?", k_min=2, k_max=2, sibling_units=0, event_time_boost=0.2)
    chosen = select(Units(units), question, Candidates(ranked)).chosen  # type: ignore[arg-type]
    assert [u.id for u, _ in chosen] == ["dated", "u0"]
    narrow = planned("When was the boat trip?", k_min=2, k_max=2, sibling_units=0, select_head_factor=3)
    chosen = select(Units(units), narrow, Candidates(ranked)).chosen  # type: ignore[arg-type]
    assert [u.id for u, _ in chosen] == ["u0", "u1"]  # ranked below the head read: not lifted


def test_one_long_answer_does_not_fill_the_top_k() -> None:
    """Twelve statements of one message rank first; the top 5 still takes only three of them and
    reaches the other sessions' memories."""

    answer = [
        MemoryUnit.model_validate(
            unit(f"a{i}", text=f"step {i} of the long plan").model_dump() | {"source_ids": ["m-answer"]}
        )
        for i in range(12)
    ]
    others = [unit(f"o{i}", text=f"a fact from session {i}") for i in range(3)]
    ranked = [(u.id, 1.0 - i * 0.01) for i, u in enumerate([*answer, *others])]
    question = planned("What was the plan?", k_min=5, k_max=5, sibling_units=0, units_per_message=3)
    chosen = [u.id for u, _ in select(Units([*answer, *others]), question, Candidates(ranked)).chosen]  # type: ignore[arg-type]
    assert chosen == ["a0", "a1", "a2", "o0", "o1"]


def test_a_long_messages_siblings_are_those_sharing_a_word_with_the_question() -> None:
    long = [
        unit(f"s{i}", text=f"item {i}: {w}")
        for i, w in enumerate(["museum pass", "hotel", "museum cafe", "train"] * 2)
    ]
    order = [u.id for u in sibling_order(long, {"museum"}, 6)]
    assert order == ["s0", "s2", "s4", "s6"]
    short = [unit("b"), unit("a")]
    assert [u.id for u in sibling_order(short, {"nothing"}, 6)] == ["a", "b"]  # all, in order


def test_questions_that_count_or_order_gather_capped_mentions_per_message() -> None:
    gathering = [
        "How many model kits have I bought?",
        "Which trip did I take first, Rome or Oslo?",
        "How long since I started the course?",
        "List all the books I read",
        "Can you list the hotels we talked about?",
        "Which seeds were started first, the tomatoes or the marigolds?",
    ]
    lookups = [
        "What is my dog's name?",
        "Where did Caroline move to?",
        "What was the discount on my first purchase?",  # an ordinal, not an order
        "Remind me of the last venue you recommended in the list of venues",  # the noun, not the verb
        "How do I find the median of an even sized list?",
    ]
    assert all(GATHER_CUES.search(q) for q in gathering)
    assert not any(GATHER_CUES.search(q) for q in lookups)
    units = [
        MemoryUnit.model_validate(
            unit(f"{m}{i}", text=f"kit {m}{i}").model_dump() | {"source_ids": [f"msg-{m}"]}
        )
        for m in "abc"
        for i in range(3)
    ]
    ranked = [(u.id, 1.0 - n * 0.01) for n, u in enumerate(units)]
    question = planned("How many kits did I buy?", k_max=9, gather_units_per_message=1)
    assert question.k == 9 and question.gathers
    chosen = select(Units(units), question, Candidates(ranked)).chosen  # type: ignore[arg-type]
    assert [u.id for u, _ in chosen] == ["a0", "b0", "c0"]


def test_a_vague_question_is_decided_by_meaning_not_by_the_common_word_it_shares() -> None:
    # "Any tips for my bedroom?": every cosine is low; "dresser" resembles it most, "wifi" merely
    # says "bedroom" too. As shares, the best cosine counts fully, as the best BM25 does.
    semantic = [Hit("dresser", 0.30), Hit("wifi", 0.10)]
    lexical = [Hit("wifi", 8.0)]
    scores = fuse(semantic, lexical, set(), 0.8, 0.75)
    assert scores["dresser"] == pytest.approx(0.8)
    assert scores["wifi"] == pytest.approx(0.8 * 0.10 / 0.30 + 0.2)
    assert scores["dresser"] > scores["wifi"]


def test_a_memory_without_a_vector_takes_part_of_its_bm25_share_for_its_cosine() -> None:
    semantic, lexical = [Hit("resembles", 0.5)], [Hit("statement", 6.0), Hit("other", 3.0)]
    scores = fuse(semantic, lexical, {"statement", "other"}, 0.5, 0.75)
    assert scores == pytest.approx({"resembles": 0.5, "statement": 0.875, "other": 0.4375})
    # "resembles" has the best meaning, "statement" the best words: as a statement with a vector
    # and no resemblance at all, it would be below "resembles"; found by words alone, above it
    assert fuse(semantic, lexical, set(), 0.5, 0.75)["statement"] == pytest.approx(0.5)


def test_a_long_answers_statement_found_by_its_words_stays_below_the_closest_meaning() -> None:
    # a first-person question: the user's statement closest in meaning shares none of its words, a
    # later statement of a long answer (no vector) all of them; at the default share of its BM25 share
    # for its cosine, it ranks below (a generic closing line, "By following these strategies, you can
    # stay motivated...", matches many questions' words)
    c = RetrievalConfig()
    scores = fuse([Hit("said", 0.6)], [Hit("closing", 9.0)], {"closing"}, 0.8, c.words_only_cosine_factor)
    assert scores["closing"] < scores["said"] == pytest.approx(0.8)
    # about someone else (half the weight on meaning) its words still put it above
    scores = fuse([Hit("said", 0.6)], [Hit("closing", 9.0)], {"closing"}, 0.5, c.words_only_cosine_factor)
    assert scores["closing"] > scores["said"]


def test_a_question_about_the_users_own_life_weighs_meaning_more() -> None:
    s = RetrievalConfig(semantic_weight=0.5, first_person_semantic_weight=0.8)
    assert fusion_weight(asked_role("I was thinking about rearranging my bedroom. Any tips?"), s) == 0.8
    assert fusion_weight(asked_role("What did Melanie paint?"), s) == 0.5
    assert fusion_weight(asked_role("Can you remind me of the hostel you recommended?"), s) == 0.5


def test_the_list_place_a_question_about_an_answer_names_is_lifted() -> None:
    lead = "Assistant, item {} ({}) of 3 of 'Venues in Portland': {}"
    units = {
        "first": unit("first", text=lead.format(1, "first", "Mississippi Studios"), role=Role.ASSISTANT),
        "second": unit("second", text=lead.format(2, "second", "Holocene"), role=Role.ASSISTANT),
        "last": unit("last", text=lead.format(3, "third, last", "Revolution Hall"), role=Role.ASSISTANT),
    }
    ranked = [("first", 0.77), ("second", 0.75), ("last", 0.64)]
    for question, top in [
        ("Remind me of the last venue you recommended", "last"),
        ("What was the second venue you suggested?", "second"),
        ("Which was the 3rd one you listed?", "last"),
        ("What was item 2 on that list again?", "second"),
        ("Remind me what #1 was", "first"),
    ]:
        places = asked_places(question)
        assert Boosts(places=places, place=0.3).apply(ranked, units)[0][0] == top, question
    assert asked_places("What was my first purchase?") == frozenset()
    assert Boosts(places=frozenset({"7"}), place=0.3).apply(ranked, units) == ranked  # no such place
