"""Knowledge updates: the offline rule (pure), then the changed-facts set through the real pipeline:
the current value ranks first after the rule, the context says which is current, a question asked
before the change is not affected, and forgetting the newer statement makes the older current again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bench.updates import ASKED_AT, load, report, run, tenant_of
from simplemem.processors.lifecycle.updates import claim_of, claims, rewritten, supersessions
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.stream import DeletionRequest

T0 = datetime(2026, 1, 5, tzinfo=UTC)


def unit(
    i: int, text: str, days: float = 0, speaker: str = "Riley", kind: MemoryKind = MemoryKind.FACT
) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=kind,
        source_ids=[f"m{i}"],
        stated_at=(T0 + timedelta(days=days)).isoformat(),
        speaker=speaker,
        persons=[speaker],
    )


@pytest.mark.parametrize(
    ("text", "attribute", "value"),
    [
        ("Riley lives in Lisbon, right by the river.", "home", "lisbon"),
        ("Big news: Riley moved to Berlin last week!", "home", "berlin"),
        ("Riley is based in Toronto these days.", "home", "toronto"),
        ("Riley works as a nurse at St Mary's.", "job", "nurse"),
        ("Riley started a new job as a paramedic last month!", "job", "paramedic"),
        ("Riley joined Stripe on Monday.", "job", "stripe"),
        ("Riley's girlfriend is Maya.", "partner", "maya"),
        ("Riley is engaged to Marcus!!", "partner", "marcus"),
        ("Riley broke up with Jess.", "partner", "(ended) jess"),
        ("Riley's favourite food is tacos now.", "favorite food", "tacos"),
        ("Riley went vegan in January.", "diet", "vegan"),
    ],
)
def test_a_statement_claims_its_attribute(text: str, attribute: str, value: str) -> None:
    claim = claim_of(unit(0, text))
    assert claim is not None and (claim.subject, claim.attribute, claim.value) == ("riley", attribute, value)


def test_statements_without_a_tracked_attribute_or_subject_claim_nothing() -> None:
    assert claim_of(unit(0, "Riley loves the river in Lisbon.")) is None
    assert claim_of(unit(0, "Berlin lives in Riley's heart.")) is None  # not a person of the memory
    assert claim_of(unit(0, "Riley lives in Lisbon.", kind=MemoryKind.CODE)) is None


def test_a_changed_value_supersedes_and_a_restatement_does_not() -> None:
    lisbon, berlin, again = (
        unit(1, "Riley lives in Lisbon.", 0),
        unit(2, "Riley moved to Berlin.", 30),
        unit(3, "Riley lives in Berlin.", 60),
    )
    phone1, phone2 = (
        unit(4, "Riley's phone number is <PHONE_NUMBER>.", 0),
        unit(5, "Riley's new phone number is <PHONE_NUMBER>.", 9),
    )
    other = unit(6, "Sam lives in Rome.", 40, speaker="Sam")
    pointers = supersessions(claims([again, other, berlin, lisbon, phone2, phone1]))
    assert pointers == {lisbon.id: berlin.id, phone1.id: phone2.id}
    changed = {u.id: u for u in rewritten([lisbon, berlin, again, other], pointers)}
    assert changed[lisbon.id].superseded_by == berlin.id and changed[berlin.id].supersedes == [lisbon.id]
    assert again.id not in changed and other.id not in changed
    back = unit(7, "Riley moved to Lisbon.", 90)  # back where it started: the first is current again
    assert supersessions(claims([lisbon, berlin, back])) == {berlin.id: back.id}


# --- the changed-facts set through the real pipeline (embedded) --------------------------------


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory, settings: Any) -> Iterator[tuple[Any, Any, Any, Any]]:
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path_factory.mktemp("updates"))
    cases = load()
    before, after, _ = run(rt, cases)
    print("\n" + "\n".join(report(cases, before, after)))
    yield rt, cases, before, after
    rt.close()


@pytest.mark.slow
def test_the_current_value_ranks_first_after_the_rule_and_the_context_says_so(judged: Any) -> None:
    _, cases, before, after = judged
    assert len(cases) >= 20 and {c["kind"] for c in cases} == {
        "home",
        "job",
        "phone",
        "partner",
        "preference",
    }
    first_before = sum(j.current_first for j in before.values())
    first_after = sum(j.current_first for j in after.values())
    marked = sum(j.marked for j in after.values())
    assert first_after > first_before
    assert first_after >= 0.75 * len(cases) and marked >= 0.75 * len(cases)
    assert not any(j.marked for j in before.values())


@pytest.mark.slow
def test_a_question_before_the_change_and_a_forgotten_update(judged: Any) -> None:
    rt, cases, _, after = judged
    case = next(c for c in cases if c["kind"] == "home" and after[c["id"]].marked)
    tenant = tenant_of(case)
    early = rt.retriever.query(
        QueryRequest(tenant_id=tenant, query=case["question"], as_of="2026-02-01T00:00:00Z")
    )
    assert "(outdated" not in early.context and not any(
        "new:" in s for m in early.memories for s in m.source_ids
    )
    rt.forget(DeletionRequest(tenant_id=tenant, message_ids=["new:m1"], requested_at=datetime.now(UTC)))
    old = [u for page in rt.lexical.iter_units(tenant, 100) for u in page if "old:m1" in u.source_ids]
    assert old and all(u.superseded_by is None for u in old)
    now = rt.retriever.query(QueryRequest(tenant_id=tenant, query=case["question"], as_of=ASKED_AT))
    assert "(outdated" not in now.context and any("old:m1" in m.source_ids for m in now.memories)
