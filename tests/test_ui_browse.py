"""The browsing reads behind the /ui/ page (simplemem/api/browse.py) on a real embedded lexical store:
filters, paging, counts, a memory's provenance, a session's messages, and no other tenant's memory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path

import pytest

from simplemem.api.browse import count_units, list_units, provenance, session_messages
from simplemem.processors.stores.protocols import LexicalStore, SymbolicFilter
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.schemas.browse import BrowseFilter
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit


def unit(tenant: str, text: str, source: str, session: str, day: int, **fields: object) -> MemoryUnit:
    kind = fields.pop("kind", MemoryKind.FACT)
    assert isinstance(kind, MemoryKind)
    return MemoryUnit.build(
        tenant_id=tenant,
        text=text,
        kind=kind,
        source_ids=[source],
        stated_at=f"2026-03-{day:02d}T09:00:00+00:00",
        speaker="Ana",
        session_id=session,
        **fields,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteLexicalStore]:
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    old = unit("acme", "Ana lives in Lisbon.", "m1", "s1", 2)
    new = unit("acme", "Ana moved to Porto.", "m2", "s2", 9, supersedes=[old.id])
    units = [
        old.model_copy(update={"superseded_by": new.id}),
        new,
        # two statements of one message: its prose is their shared context
        unit(
            "acme",
            "Ana has a dog.",
            "m3",
            "s2",
            10,
            context="I have a dog and a cat.",
            event_time="2026-03-10",
        ),
        unit("acme", "Ana has a cat.", "m3", "s2", 10, context="I have a dog and a cat."),
        unit("acme", "print('hi')", "m4", "s3", 12, kind=MemoryKind.CODE, context="Ana: the script"),
        unit("beta", "Beta's secret plan is in Lisbon.", "b1", "s1", 2),
    ]
    lexical.upsert(units)
    yield lexical
    lexical.close()


def texts(page: object) -> list[str]:
    return [m.text for m in page.memories]  # type: ignore[attr-defined]


def test_without_filters_the_page_is_in_stated_order_with_the_total(store: SqliteLexicalStore) -> None:
    page = list_units(store, "acme", BrowseFilter(), 0, 2)
    assert texts(page) == ["Ana lives in Lisbon.", "Ana moved to Porto."]
    assert (page.total, page.next_offset) == (5, 2)
    assert [m.state for m in page.memories] == ["superseded", "active"]
    last = list_units(store, "acme", BrowseFilter(), 4, 2)
    assert texts(last) == ["print('hi')"] and last.next_offset is None


def test_filters_combine_and_page(store: SqliteLexicalStore) -> None:
    s2 = BrowseFilter(session="s2")
    first = list_units(store, "acme", s2, 0, 2)
    assert sorted(texts(first)) == ["Ana has a dog.", "Ana moved to Porto."] or len(texts(first)) == 2
    assert first.total == 3 and first.next_offset == 2  # the store counts the matches
    rest = list_units(store, "acme", s2, 2, 2)
    assert len(rest.memories) == 1 and rest.next_offset is None and rest.total == 3
    assert {*texts(first), *texts(rest)} == {"Ana moved to Porto.", "Ana has a dog.", "Ana has a cat."}
    assert texts(list_units(store, "acme", BrowseFilter(kind="code"), 0, 10)) == ["print('hi')"]
    assert texts(list_units(store, "acme", BrowseFilter(state="superseded"), 0, 10)) == [
        "Ana lives in Lisbon."
    ]
    dated = BrowseFilter(since="2026-03-09", until="2026-03-10", session="s2")
    assert sorted(texts(list_units(store, "acme", dated, 0, 10))) == sorted(
        ["Ana moved to Porto.", "Ana has a dog.", "Ana has a cat."]
    )
    assert texts(list_units(store, "acme", BrowseFilter(until="2026-03-08"), 0, 10)) == [
        "Ana lives in Lisbon."
    ]


def test_text_search_finds_any_state_and_only_the_tenants_own(store: SqliteLexicalStore) -> None:
    found = list_units(store, "acme", BrowseFilter(q="Lisbon"), 0, 10)
    assert texts(found) == ["Ana lives in Lisbon."] and found.total == 1
    assert texts(list_units(store, "beta", BrowseFilter(q="Lisbon"), 0, 10)) == [
        "Beta's secret plan is in Lisbon."
    ]
    assert texts(list_units(store, "acme", BrowseFilter(q="secret plan"), 0, 10)) == []
    assert list_units(store, "nobody", BrowseFilter(), 0, 10).memories == []


def test_counts_by_state_kind_and_session(store: SqliteLexicalStore) -> None:
    c = count_units(store, "acme", BrowseFilter())
    assert (c.total, c.matching) == (5, 5)
    assert c.by_state == {"superseded": 1, "active": 4}
    assert c.by_kind == {"fact": 4, "code": 1}
    assert c.sessions == {"s2": 3, "s1": 1, "s3": 1}
    assert count_units(store, "acme", BrowseFilter(kind="fact", session="s2")).matching == 3


def test_provenance_shows_the_message_its_siblings_and_the_supersession(store: SqliteLexicalStore) -> None:
    dog = next(
        m for m in list_units(store, "acme", BrowseFilter(), 0, 10).memories if m.text == "Ana has a dog."
    )
    p = provenance(store, "acme", dog.id)
    assert p is not None
    (source,) = p.sources
    assert (source.message_id, source.speaker, source.text, source.verbatim) == (
        "m3",
        "Ana",
        "I have a dog and a cat.",
        True,
    )
    assert [s.text for s in p.siblings] == ["Ana has a cat."]
    porto = list_units(store, "acme", BrowseFilter(q="Porto"), 0, 1).memories[0]
    moved = provenance(store, "acme", porto.id)
    assert moved is not None and [m.text for m in moved.supersedes] == ["Ana lives in Lisbon."]
    lived = provenance(store, "acme", moved.supersedes[0].id)
    assert (
        lived is not None
        and lived.superseded_by is not None
        and lived.superseded_by.text == "Ana moved to Porto."
    )
    # a one-statement message keeps no copy of its text: its memory's words stand for it, said so
    assert (lived.sources[0].text, lived.sources[0].verbatim) == ("Ana lives in Lisbon.", False)


def test_provenance_of_another_tenants_memory_is_none(store: SqliteLexicalStore) -> None:
    beta = list_units(store, "beta", BrowseFilter(), 0, 1).memories[0]
    assert provenance(store, "acme", beta.id) is None
    assert provenance(store, "beta", beta.id) is not None


def test_an_abstract_lists_what_it_summarises(tmp_path: Path) -> None:
    lexical = SqliteLexicalStore(tmp_path / "l.db")
    a = unit("t", "Ana runs on Mondays.", "m1", "s1", 2)
    b = unit("t", "Ana runs on Fridays.", "m2", "s1", 3)
    abstract = MemoryUnit.build(
        tenant_id="t",
        text="Ana runs twice a week.",
        kind=MemoryKind.ABSTRACT,
        source_ids=["m1", "m2"],
        stated_at="2026-03-03T09:00:00+00:00",
    )
    archived = {"status": MemoryStatus.ARCHIVED, "archived_in": abstract.id}
    lexical.upsert([a.model_copy(update=archived), b.model_copy(update=archived), abstract])
    p = provenance(lexical, "t", abstract.id)
    assert p is not None and sorted(m.text for m in p.summarises) == sorted([a.text, b.text])
    assert [s.message_id for s in p.sources] == ["m1", "m2"]
    member = provenance(lexical, "t", a.id)
    assert member is not None and member.archived_in is not None and member.archived_in.text == abstract.text
    assert member.memory.state == "archived"
    lexical.close()


def test_a_sessions_messages_are_those_its_memories_cite(store: SqliteLexicalStore) -> None:
    assert sorted(session_messages(store, "acme", "s2")) == ["m2", "m3"]
    assert session_messages(store, "beta", "s2") == []


def test_the_store_walks_a_tenant_in_the_order_stated_within_a_date_range(store: SqliteLexicalStore) -> None:
    walked = [u.text for batch in store.iter_units("acme", 2) for u in batch]
    assert walked[:2] == ["Ana lives in Lisbon.", "Ana moved to Porto."] and len(walked) == 5
    march = SymbolicFilter(first_day=date(2026, 3, 9), last_day=date(2026, 3, 11), active_only=False)
    within = [u.text for batch in store.iter_units("acme", 2, march) for u in batch]
    assert sorted(within) == ["Ana has a cat.", "Ana has a dog.", "Ana moved to Porto."]
    assert [u.text for batch in store.iter_units("beta", 2, march) for u in batch] == []


def derived_lines_are_listed_as_active_memories(lexical: LexicalStore, tenant: str) -> None:
    """A tenant of a statement, an archived one and a timeline line (kept apart by its status field):
    the listing and the counts show the line as an active memory of its kind; a units' search still
    leaves it out."""
    fact = unit(tenant, "Ana planted tomatoes in the garden.", "m1", "s1", 2)
    old = unit(tenant, "Ana grows basil.", "m0", "s1", 1, status=MemoryStatus.ARCHIVED)
    line = unit(tenant, "Ana: I planted tomatoes in the garden.", "m1", "s1", 2, kind=MemoryKind.TIMELINE)
    lexical.upsert([fact, old, line])
    every = count_units(lexical, tenant, BrowseFilter())
    assert (every.total, every.matching) == (3, 3)
    assert every.by_state == {"active": 2, "archived": 1} and every.by_kind == {"fact": 2, "timeline": 1}
    active = BrowseFilter(state="active")
    assert {m.id for m in list_units(lexical, tenant, active, 0, 10).memories} == {fact.id, line.id}
    assert count_units(lexical, tenant, active).matching == 2
    dated = BrowseFilter(since="2026-03-02", until="2026-03-02", session="s1")
    assert {m.id for m in list_units(lexical, tenant, dated, 0, 10).memories} == {fact.id, line.id}
    timeline = list_units(lexical, tenant, BrowseFilter(kind="timeline"), 0, 10)
    assert [(m.id, m.kind, m.state) for m in timeline.memories] == [(line.id, "timeline", "active")]
    assert {m.id for m in list_units(lexical, tenant, BrowseFilter(q="tomatoes"), 0, 10).memories} == {
        fact.id,
        line.id,
    }
    units_only = SymbolicFilter(active_only=False)  # retrieval's searches: the units alone
    assert {u.id for batch in lexical.iter_units(tenant, 10, units_only) for u in batch} == {fact.id, old.id}
    assert {h.id for h in lexical.search(tenant, "tomatoes", 10, units_only)} == {fact.id}


def test_derived_lines_are_active_memories_of_their_kind_in_sqlite(tmp_path: Path) -> None:
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    derived_lines_are_listed_as_active_memories(lexical, "acme")
    lexical.close()


@pytest.mark.integration
def test_derived_lines_are_active_memories_of_their_kind_in_opensearch() -> None:
    from simplemem.processors.stores.opensearch_lexical import OpenSearchLexicalStore
    from tests.services import store_settings

    with store_settings("browse") as s:
        lexical = OpenSearchLexicalStore(s.opensearch_endpoint, s.opensearch_index)
        try:
            derived_lines_are_listed_as_active_memories(lexical, "acme")
        finally:
            lexical.close()


def many_sessions(tenant: str, sessions: int, per_session: int) -> list[MemoryUnit]:
    """Units of ``sessions`` sessions, each stated after the one before (a later session's match
    comes after every earlier session's units in the order stated)."""
    return [
        unit(tenant, f"Ana noted item {s}-{i}.", f"m{s}-{i}", f"s{s}", 1 + s, keywords=[f"k{i}"])
        for s in range(sessions)
        for i in range(per_session)
    ]


def filtered_reads_decode_only_what_they_show(lexical: LexicalStore, decoded: Callable[[], int]) -> None:
    """A session stated last, a rare kind, a state: the page reads the units it shows, the counts
    read none (``decoded``: units read back so far)."""
    units = many_sessions("big", 4, 60)
    rare = unit("big", "print('rare')", "mc", "s3", 4, kind=MemoryKind.CODE)
    lexical.upsert([*units, rare])
    before = decoded()
    page = list_units(lexical, "big", BrowseFilter(session="s3"), 0, 5)
    assert len(page.memories) == 5 and {m.session_id for m in page.memories} == {"s3"}
    assert page.total == 61 and page.next_offset == 5
    assert decoded() - before == 5
    before = decoded()
    counted = count_units(lexical, "big", BrowseFilter(session="s3"))
    assert (counted.matching, counted.by_kind, counted.sessions) == (61, {"fact": 60, "code": 1}, {"s3": 61})
    assert count_units(lexical, "big", BrowseFilter(kind="code")).matching == 1
    assert decoded() == before
    code = list_units(lexical, "big", BrowseFilter(kind="code", since="2026-03-04"), 0, 5)
    assert [m.text for m in code.memories] == ["print('rare')"] and code.total == 1
    assert decoded() - before == 1


def test_a_filtered_listing_reads_only_its_rows_in_sqlite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simplemem.processors.stores.sqlite_lexical import base

    calls = [0]
    real = base.read_unit

    def counted(*args: object, **kw: object) -> MemoryUnit:
        calls[0] += 1
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(base, "read_unit", counted)
    lexical = SqliteLexicalStore(tmp_path / "lexical.db")
    filtered_reads_decode_only_what_they_show(lexical, lambda: calls[0])
    lexical.close()


@pytest.mark.integration
def test_a_filtered_listing_reads_only_its_rows_in_opensearch(monkeypatch: pytest.MonkeyPatch) -> None:
    from simplemem.processors.stores.opensearch_lexical import OpenSearchLexicalStore
    from simplemem.processors.stores.opensearch_lexical.base import OpenSearchBase
    from tests.services import store_settings

    calls = [0]
    real = OpenSearchBase._with_contexts

    def counted(self: OpenSearchBase, tenant_id: str, hits: list, with_context: bool = True) -> list:  # type: ignore[type-arg]
        calls[0] += len(hits)
        return real(self, tenant_id, hits, with_context)

    monkeypatch.setattr(OpenSearchBase, "_with_contexts", counted)
    with store_settings("listing") as s:
        lexical = OpenSearchLexicalStore(s.opensearch_endpoint, s.opensearch_index)
        try:
            filtered_reads_decode_only_what_they_show(lexical, lambda: calls[0])
        finally:
            lexical.close()


@pytest.mark.integration
def test_filters_combine_and_count_alike_in_opensearch(store: SqliteLexicalStore) -> None:
    """The embedded store's listing and counts, repeated on OpenSearch with the same units."""
    from simplemem.processors.stores.opensearch_lexical import OpenSearchLexicalStore
    from tests.services import store_settings

    units = [u for batch in store.iter_units("acme", 100) for u in batch]
    units += [u for batch in store.iter_units("beta", 100) for u in batch]
    filters = [
        BrowseFilter(),
        BrowseFilter(session="s2"),
        BrowseFilter(kind="code"),
        BrowseFilter(kind="fact", session="s2"),
        BrowseFilter(state="superseded"),
        BrowseFilter(state="active"),
        BrowseFilter(since="2026-03-09", until="2026-03-10", session="s2"),
        BrowseFilter(until="2026-03-08"),
    ]
    with store_settings("listing_alike") as s:
        lexical = OpenSearchLexicalStore(s.opensearch_endpoint, s.opensearch_index)
        try:
            lexical.upsert(units)
            for flt in filters:
                for tenant in ("acme", "beta"):
                    mine, theirs = (
                        list_units(store, tenant, flt, 0, 10),
                        list_units(lexical, tenant, flt, 0, 10),
                    )
                    assert sorted(texts(mine)) == sorted(texts(theirs)) and mine.total == theirs.total, flt
                    a, b = count_units(store, tenant, flt), count_units(lexical, tenant, flt)
                    assert (a.matching, a.by_state, a.by_kind, a.sessions) == (
                        b.matching,
                        b.by_state,
                        b.by_kind,
                        b.sessions,
                    ), flt
                    assert a.sessions_left_out == b.sessions_left_out
        finally:
            lexical.close()
