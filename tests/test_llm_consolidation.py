"""The LLM paths of stage 2: the consolidation summariser and the knowledge-update judge.

The endpoint is a stand-in (httpx.MockTransport): these test our checks, fallbacks and how the
answers are applied, not a model. The lexical store is the real embedded one (SQLite, a temp file);
the vector store is a dict, since only our bookkeeping around it is under test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import orjson
import pytest

from simplemem.processors.lifecycle.consolidate import consolidate_tenant, summarise
from simplemem.processors.lifecycle.forget import Stores
from simplemem.processors.lifecycle.llm_summary import LlmSummariser, invented
from simplemem.processors.lifecycle.llm_updates import LlmUpdateJudge
from simplemem.processors.lifecycle.updates import update_tenant
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit
from simplemem.schemas.settings import Settings

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
Reply = Callable[[str], str]  # the user prompt -> the model's content


def endpoint(reply: Reply, status: int = 200) -> tuple[httpx.Client, list[str]]:
    """A chat endpoint answering ``reply(user prompt)``; the prompts it was sent, in order."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        user = orjson.loads(request.content)["messages"][-1]["content"]
        asked.append(user)
        return httpx.Response(status, json={"choices": [{"message": {"content": reply(user)}}]})

    return httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(handler)), asked


def settings(**fields: Any) -> Settings:
    return Settings(**{"llm_base_url": "http://llm.test/v1", "llm_max_retries": 0, **fields})


def summary(text: str) -> Reply:
    return lambda _user: orjson.dumps({"summary": text}).decode()


def orders(n: int = 6) -> tuple[list[MemoryUnit], npt.NDArray[np.float32]]:
    units = [
        MemoryUnit.build(
            tenant_id="t",
            text=f"Jordan ordered a {'latte' if i % 3 else 'mocha'} at Bluebird.",
            kind=MemoryKind.FACT,
            source_ids=[f"m{i}"],
            stated_at=(T0 + timedelta(days=10 * i)).isoformat(),
            speaker="Jordan",
            persons=["Jordan"],
            keywords=["latte" if i % 3 else "mocha", "bluebird"],
        )
        for i in range(n)
    ]
    rng = np.random.default_rng(0)
    base = rng.normal(size=16).astype(np.float32)
    vecs = np.stack([base + 0.05 * rng.normal(size=16).astype(np.float32) for _ in range(n)])
    return units, vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


GOOD = "Jordan usually orders a latte at Bluebird (6 orders, January-February 2026)."


# --- the summariser --------------------------------------------------------------------------


def test_a_valid_llm_summary_is_the_abstracts_text_and_the_rest_is_the_offline_abstract() -> None:
    units, vecs = orders()
    client, asked = endpoint(summary(GOOD))
    made = LlmSummariser(settings(summariser="llm"), client)("t", units, vecs)
    offline, mean = summarise("t", units, vecs)
    assert not made.fallback and made.unit.text == GOOD
    assert made.unit.id == offline.id and made.unit.tenant_id == "t"
    assert made.unit.source_ids == sorted(s for u in units for s in u.source_ids)
    assert made.unit.event_time == "2026-01-05/2026-02-24" and made.unit.kind == MemoryKind.ABSTRACT
    assert np.allclose(made.vector, mean)
    [prompt] = asked  # the model was given the counts and the (stored, scrubbed) members with dates
    assert offline.text in prompt and "[2026-01-15] Jordan ordered a latte at Bluebird." in prompt


def test_the_abstract_id_does_not_depend_on_the_models_wording_or_the_members_order() -> None:
    units, vecs = orders()
    first = LlmSummariser(settings(), endpoint(summary(GOOD))[0])("t", units, vecs)
    other = "Jordan orders coffee at Bluebird, mostly a latte (6 orders)."
    again = LlmSummariser(settings(), endpoint(summary(other))[0])("t", units[::-1], vecs[::-1])
    assert again.unit.text == other and again.unit.id == first.unit.id


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (orjson.dumps({"summary": "Jordan orders a latte at Bluebird (9 orders)."}).decode(), "a count"),
        (orjson.dumps({"summary": "Jordan and Priya order lattes at Bluebird."}).decode(), "a name"),
        (orjson.dumps({"summary": "Jordan orders a latte at Bluebird every May."}).decode(), "a month"),
        ("Jordan orders lattes.", "not JSON"),
        (orjson.dumps({"text": GOOD}).decode(), "another shape"),
        (orjson.dumps({"summary": "Jordan " + "really " * 80 + "likes lattes."}).decode(), "too long"),
    ],
)
def test_invented_content_or_malformed_output_falls_back_to_the_offline_summary(
    answer: str, why: str
) -> None:
    units, vecs = orders()
    made = LlmSummariser(settings(), endpoint(lambda _user: answer)[0])("t", units, vecs)
    assert made.fallback, why
    assert made.unit == summarise("t", units, vecs)[0]


def test_the_invention_check_reads_numbers_names_and_months_from_the_members() -> None:
    units, vecs = orders()
    offline = summarise("t", units, vecs)[0]
    assert (
        invented("Jordan orders at Bluebird: 6 memories, Jan to Feb 2026, 4/6 latte.", units, offline) == []
    )
    assert invented("Jordan met Sam on 2026-03-07 at Bluebird.", units, offline) == ["03", "07", "Sam"]


class DictVectors:
    """Only what consolidation calls on a vector store, in a dict."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str], npt.NDArray[np.float32]] = {}

    def vectors(self, tenant_id: str, ids: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        return {i: self.rows[(tenant_id, i)] for i in ids if (tenant_id, i) in self.rows}

    def upsert(self, units: Sequence[MemoryUnit], vectors: npt.NDArray[np.float32]) -> None:
        self.rows.update(((u.tenant_id, u.id), v) for u, v in zip(units, vectors, strict=True))

    def delete(self, tenant_id: str, ids: Sequence[str]) -> None:
        for i in ids:
            self.rows.pop((tenant_id, i), None)


@pytest.fixture
def lexical(tmp_path: Path) -> Iterator[SqliteLexicalStore]:
    store = SqliteLexicalStore(tmp_path / "lexical.sqlite")
    yield store
    store.close()


@pytest.mark.parametrize(("answer", "fallbacks"), [(GOOD, 0), ("Priya orders tea.", 1)])
def test_a_consolidation_run_writes_the_summariser_abstract_and_counts_its_fallbacks(
    lexical: SqliteLexicalStore, answer: str, fallbacks: int
) -> None:
    units, vecs = orders()
    vectors = DictVectors()
    vectors.upsert(units, vecs)
    lexical.upsert(units)
    s = settings(summariser="llm")
    stores = Stores(lexical, vectors)  # type: ignore[arg-type]
    run = consolidate_tenant("t", stores, s, summariser=LlmSummariser(s, endpoint(summary(answer))[0]))
    [decision] = run.decisions
    [abstract] = [u for page in lexical.iter_units("t", 100) for u in page if u.kind == MemoryKind.ABSTRACT]
    assert abstract.id == decision.abstract_id == summarise("t", units, vecs)[0].id
    assert (abstract.text == GOOD) == (fallbacks == 0) and run.summary_fallbacks == fallbacks
    archived = lexical.get("t", [u.id for u in units])
    assert all(u.status == MemoryStatus.ARCHIVED and u.archived_in == abstract.id for u in archived)


# --- the knowledge-update judge --------------------------------------------------------------


def fact(i: int, text: str, days: float) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"m{i}"],
        stated_at=(T0 + timedelta(days=days)).isoformat(),
        speaker="Riley",
        persons=["Riley"],
    )


def verdicts(by_newer_text: dict[str, str]) -> Reply:
    """Answers by the newer statement of the pair (the prompt's last line)."""
    return lambda user: by_newer_text[user.rsplit(": ", 1)[-1]]


YES, NO = '{"supersedes": true}', '{"supersedes": false}'


def test_the_judges_verdicts_replace_the_value_comparison_and_are_written_as_pointers(
    lexical: SqliteLexicalStore,
) -> None:
    nurse, also = fact(1, "Riley works as a nurse.", 0), fact(2, "Riley works as a paramedic.", 5)
    berlin, again = fact(3, "Riley lives in Berlin.", 0), fact(4, "Riley lives in Berlin.", 9)
    lexical.upsert([nurse, also, berlin, again])
    client, asked = endpoint(verdicts({also.text: NO, again.text: YES}))  # the offline rule says the opposite
    run = update_tenant("t", lexical, 100, LlmUpdateJudge(settings(update_judge="llm"), client))
    assert len(asked) == 2 and run.judged == 2 and run.fallbacks == 0
    got = {u.id: u for u in lexical.get("t", [nurse.id, also.id, berlin.id, again.id])}
    assert got[berlin.id].superseded_by == again.id and got[again.id].supersedes == [berlin.id]
    assert got[nurse.id].superseded_by is None and got[also.id].supersedes == []
    assert {u.id for u in run.changed} == {berlin.id, again.id}


@pytest.mark.parametrize("answer", ["yes", '{"supersedes": "maybe"}', '{"verdict": true}'])
def test_a_malformed_verdict_falls_back_to_the_offline_rule_for_that_pair(
    lexical: SqliteLexicalStore, answer: str
) -> None:
    lisbon, berlin = fact(1, "Riley lives in Lisbon.", 0), fact(2, "Riley moved to Berlin.", 30)
    nurse, also = fact(3, "Riley works as a nurse.", 0), fact(4, "Riley works as a paramedic.", 5)
    lexical.upsert([lisbon, berlin, nurse, also])
    client, _ = endpoint(verdicts({berlin.text: answer, also.text: NO}))
    run = update_tenant("t", lexical, 100, LlmUpdateJudge(settings(), client))
    assert run.fallbacks == 1 and run.judged == 1
    got = {u.id: u for u in lexical.get("t", [lisbon.id, berlin.id, nurse.id])}
    assert got[lisbon.id].superseded_by == berlin.id  # the value changed: the offline rule's pointer
    assert got[nurse.id].superseded_by is None  # the judge's "no" on the other pair still holds


def test_the_judge_asks_about_the_newest_pairs_only_up_to_its_bound(lexical: SqliteLexicalStore) -> None:
    homes = [fact(i, f"Riley lives in {city}.", 10 * i) for i, city in enumerate(["Lisbon", "Porto", "Rome"])]
    lexical.upsert(homes)
    client, asked = endpoint(lambda _user: NO)
    run = update_tenant("t", lexical, 100, LlmUpdateJudge(settings(update_judge_max_pairs=1), client))
    assert len(asked) == 1 and asked[0].endswith("Riley lives in Rome.") and run.judged == 1
    got = {u.id: u for u in lexical.get("t", [h.id for h in homes])}
    assert got[homes[0].id].superseded_by == homes[1].id  # not asked: the offline rule
    assert got[homes[1].id].superseded_by is None  # asked: the judge's "no"


def test_a_later_run_does_not_ask_again_and_a_failing_endpoint_is_asked_once_per_run(
    lexical: SqliteLexicalStore,
) -> None:
    homes = [fact(i, f"Riley lives in {city}.", 10 * i) for i, city in enumerate(["Lisbon", "Porto", "Rome"])]
    lexical.upsert(homes)
    client, asked = endpoint(lambda _user: NO)
    judge = LlmUpdateJudge(settings(), client)
    first, again = update_tenant("t", lexical, 100, judge), update_tenant("t", lexical, 100, judge)
    assert len(asked) == 2 and first.judged == again.judged == 2 and again.changed == []
    assert all(u.superseded_by is None for u in lexical.get("t", [h.id for h in homes]))

    down, asked_down = endpoint(lambda _user: NO, status=503)
    run = update_tenant("t", lexical, 100, LlmUpdateJudge(settings(llm_max_retries=1), down))
    assert len(asked_down) == 2 and run.fallbacks == 2 and run.judged == 0  # one pair, tried twice
    got = lexical.get("t", [h.id for h in homes])
    assert [u.superseded_by for u in got] == [homes[1].id, homes[2].id, None]  # the offline rule


def test_the_kept_verdicts_are_bounded(lexical: SqliteLexicalStore) -> None:
    homes = [fact(i, f"Riley lives in {city}.", 10 * i) for i, city in enumerate(["Lisbon", "Porto", "Rome"])]
    lexical.upsert(homes)
    client, asked = endpoint(lambda _user: NO)
    judge = LlmUpdateJudge(settings(update_judge_cache_pairs=1), client)
    update_tenant("t", lexical, 100, judge)
    update_tenant("t", lexical, 100, judge)
    assert len(asked) == 3 and len(judge.known) == 1  # the pair asked first was let go, asked again


# --- the settings choose -----------------------------------------------------------------------


def test_the_settings_choose_the_llm_steps_and_the_offline_ones_by_default(tmp_path: Path) -> None:
    from simplemem.processors.lifecycle.consolidate import offline_summariser
    from simplemem.runtime import Runtime

    offline = Runtime(Settings(), tmp_path)
    assert offline.summariser is offline_summariser and offline.update_judge is None
    llm = Runtime(settings(summariser="llm", update_judge="llm"), tmp_path)
    assert isinstance(llm.summariser, LlmSummariser) and isinstance(llm.update_judge, LlmUpdateJudge)
    with pytest.raises(ValueError, match="SIMPLEMEM_LLM_BASE_URL"):
        _ = Runtime(Settings(summariser="llm"), tmp_path).summariser
