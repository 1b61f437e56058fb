"""Consolidation: the clustering and the summary (pure), then the coffee-order stream through the
real pipeline and stores: one abstract with provenance, originals archived, code and unrelated facts
untouched, deterministic ids; forgetting recomputes the abstract, then removes it."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from typer.testing import CliRunner

from simplemem.cli.main import app
from simplemem.processors.lifecycle.consolidate import cluster, summarise
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationAction, DeletionRequest
from tests.helpers.consolidation_data import CAFE, order_ids, stream
from tests.helpers.forget_data import files_holding

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)


def unit(i: int, text: str, days: float, **fields: Any) -> MemoryUnit:
    return MemoryUnit.build(
        tenant_id="t",
        text=text,
        kind=MemoryKind.FACT,
        source_ids=[f"m{i}"],
        stated_at=(T0 + timedelta(days=days)).isoformat(),
        **fields,
    )


def direction(seed: int, near: np.ndarray | None = None, noise: float = 0.0) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=16).astype(np.float32)
    if near is not None:
        v = near + noise * v / np.linalg.norm(v)
    return v / np.linalg.norm(v)


def test_near_identical_memories_a_day_apart_cluster_and_unrelated_or_distant_ones_do_not() -> None:
    s = Settings()
    base = direction(0)
    units, vecs = [], []
    for day in range(10):  # near-identical, daily
        units.append(unit(day, f"order {day}", day))
        vecs.append(direction(100 + day, base, 0.2))
    units.append(unit(50, "unrelated", 4))
    vecs.append(direction(1))
    units.append(unit(51, "same words, a year later", 400))  # similar, but far in time
    vecs.append(direction(200, base, 0.5))
    matrix = np.stack(vecs)
    clusters = cluster(units, matrix, s)
    groups = sorted(sorted(units[i].id for i in c.members) for c in clusters)
    assert sorted(u.id for u in units[:10]) in groups
    assert [units[10].id] in groups and [units[11].id] in groups
    # the same memories in another order: the same clusters (deterministic)
    order = list(range(len(units)))
    random.Random(7).shuffle(order)
    again = cluster([units[i] for i in order], matrix[order], s)
    assert sorted(sorted(units[order[i]].id for i in c.members) for c in again) == groups


def test_the_summary_counts_dates_and_keeps_the_typical_statement_word_for_word() -> None:
    base = direction(0)
    units = [
        unit(
            i,
            f"Jordan ordered a {'latte' if i % 3 else 'mocha'} at Bluebird.",
            i,
            persons=["Jordan"],
            keywords=["latte" if i % 3 else "mocha", "bluebird"],
        )
        for i in range(6)
    ]
    vecs = np.stack([direction(10 + i, base, 0.1) for i in range(6)])
    abstract, vec = summarise("t", units, vecs)
    assert abstract.kind == MemoryKind.ABSTRACT and abstract.source_ids == sorted(f"m{i}" for i in range(6))
    assert any(abstract.text.startswith(u.text) for u in units)
    assert "6 similar memories from 2026-01-05 to 2026-01-10" in abstract.text
    assert (
        "bluebird 6/6" in abstract.text
        and "latte 4/6" in abstract.text
        and "mocha" not in abstract.text.split("usually")[1]
    )
    assert abstract.persons == ["Jordan"] and abstract.event_time == "2026-01-05/2026-01-10"
    assert summarise("t", units[::-1], vecs[::-1])[0].id == abstract.id
    assert abs(float(np.linalg.norm(vec)) - 1.0) < 1e-5


# --- the real pipeline (embedded) --------------------------------------------------------------

TENANT = "consolidate"
ORDERS = 50


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("consolidate-store")


@pytest.fixture(scope="module")
def rt(store: Path, settings: Any) -> Iterator[Any]:
    from simplemem.runtime import open_runtime

    runtime = open_runtime(settings, store)
    runtime.pipeline.ingest([(e["message_id"], orjson.dumps(e)) for e in stream(TENANT, ORDERS)])
    yield runtime
    runtime.close()


def all_units(rt: Any, tenant: str = TENANT) -> list[MemoryUnit]:
    return [u for page in rt.lexical.iter_units(tenant, 100) for u in page]


def ask(rt: Any, query: str, include_archived: bool = False) -> Any:
    return rt.retriever.query(
        QueryRequest(
            tenant_id=TENANT, query=query, as_of="2026-04-01T00:00:00Z", include_archived=include_archived
        )
    )


@pytest.mark.slow
def test_a_planned_run_writes_nothing_until_applied_and_applying_it_again_changes_nothing(
    tmp_path: Path, settings: Any
) -> None:
    """The stream stage publishes a plan before it applies it (simplemem.streams.worker.ConsolidateStep)."""
    from simplemem.runtime import open_runtime

    tenant = "planned"
    rt = open_runtime(settings, tmp_path)
    rt.pipeline.ingest([(e["message_id"], orjson.dumps(e)) for e in stream(tenant, ORDERS)])
    before = {u.id: u for u in all_units(rt, tenant)}

    plan = rt.consolidate(tenant, apply=False)

    [decision] = plan.decisions
    assert {u.id: u for u in all_units(rt, tenant)} == before and rt.vectors.count(tenant) == len(before)
    rt.apply_consolidation(tenant, plan)
    after = {u.id: u for u in all_units(rt, tenant)}
    assert decision.abstract_id in after and after.keys() == before.keys() | {decision.abstract_id}
    assert {u.id for u in plan.written} <= after.keys()
    assert all(after[u.id] == u for u in plan.written)
    assert rt.vectors.count(tenant) == len(after)
    rt.apply_consolidation(tenant, plan)
    assert {u.id: u for u in all_units(rt, tenant)} == after and rt.vectors.count(tenant) == len(after)
    assert rt.consolidate(tenant).decisions == []  # applied: the next run finds nothing to do
    rt.close()


@pytest.mark.slow
def test_a_stream_of_orders_becomes_one_abstract_and_forgetting_recomputes_then_removes_it(
    rt: Any, store: Path
) -> None:
    before = {u.id: u for u in all_units(rt)}
    orders = set(order_ids(ORDERS))
    assert {s for u in before.values() for s in u.source_ids} >= orders

    run = rt.consolidate(TENANT)

    [decision] = run.decisions
    assert decision.action == ConsolidationAction.CREATED and set(decision.source_ids) == orders
    assert decision.min_affinity is not None and decision.min_affinity >= rt.settings.consolidation_affinity
    units = {u.id: u for u in all_units(rt)}
    [abstract] = [u for u in units.values() if u.kind == MemoryKind.ABSTRACT]
    assert abstract.id == decision.abstract_id and set(abstract.source_ids) == orders
    assert (
        f"{ORDERS} similar memories from 2026-01-05 to 2026-02-23" in abstract.text and CAFE in abstract.text
    )
    for uid, old in before.items():  # orders archived with a pointer; the rest untouched
        now = units[uid]
        if set(old.source_ids) <= orders:
            assert now.status == MemoryStatus.ARCHIVED and now.archived_in == abstract.id
        else:
            assert now == old, now.text
    assert sum(u.kind == MemoryKind.CODE and u.status == MemoryStatus.ACTIVE for u in units.values()) == 3
    assert rt.vectors.count(TENANT) == len(units)

    answer = ask(rt, "What coffee does Jordan order?")
    assert answer.memories[0].id == abstract.id and answer.memories[0].kind == MemoryKind.ABSTRACT
    assert not {m.id for m in answer.memories} & {
        u.id for u in units.values() if u.status == MemoryStatus.ARCHIVED
    }
    archived = ask(rt, "What coffee does Jordan order?", include_archived=True)
    assert {m.id for m in archived.memories} & {
        uid for uid, u in units.items() if u.archived_in == abstract.id
    }

    again = rt.consolidate(TENANT)  # nothing new: nothing changes, the same abstract
    assert again.decisions == [] and {u.id for u in all_units(rt)} == set(units)

    first = order_ids(ORDERS)[0]
    forgot = rt.forget(DeletionRequest(tenant_id=TENANT, message_ids=[first], requested_at=datetime.now(UTC)))
    [recomputed] = forgot.decisions
    assert recomputed.action == ConsolidationAction.RECOMPUTED and recomputed.replaces == [abstract.id]
    [new] = [u for u in all_units(rt) if u.kind == MemoryKind.ABSTRACT]
    assert set(new.source_ids) == orders - {first} and f"{ORDERS - 1} similar memories" in new.text
    assert all(u.archived_in == new.id for u in all_units(rt) if u.status == MemoryStatus.ARCHIVED)

    rest = sorted(orders - {first})
    rt.forget(DeletionRequest(tenant_id=TENANT, message_ids=rest, requested_at=datetime.now(UTC)))
    left = all_units(rt)
    assert not [u for u in left if u.kind == MemoryKind.ABSTRACT or set(u.source_ids) & orders]
    assert files_holding(store, (CAFE, CAFE.lower()[:-2])) == []
    for include in (False, True):
        assert CAFE not in ask(rt, "What coffee does Jordan order?", include).context
    replay = rt.pipeline.ingest([(e["message_id"], orjson.dumps(e)) for e in stream(TENANT, ORDERS)])
    assert replay.rejected and files_holding(store, (CAFE, CAFE.lower()[:-2])) == []
    assert {u.id for u in all_units(rt)} == {u.id for u in left}


@pytest.mark.slow
def test_consolidate_from_the_command_line_is_deterministic(tmp_path: Path) -> None:
    """The same memories in two stores: the same abstract id (and a second run changes nothing)."""
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(orjson.dumps(e) for e in stream("cli-consolidate", 12)) + b"\n")
    runner = CliRunner()
    ids = []
    for name in ("a", "b"):
        store = tmp_path / name
        assert runner.invoke(app, ["ingest", str(events), "--store", str(store)]).exit_code == 0
        done = runner.invoke(app, ["consolidate", "--store", str(store), "--json"])
        assert done.exit_code == 0, done.output
        [decision] = [orjson.loads(line) for line in done.stdout.splitlines()]
        ids.append(decision["abstract_id"])
        again = runner.invoke(app, ["consolidate", "--store", str(store), "--tenant", "cli-consolidate"])
        assert again.exit_code == 0 and "0 abstracts made" in again.stdout
    assert ids[0] == ids[1]
