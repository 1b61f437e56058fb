"""The right to be forgotten in embedded mode, with the real models and stores: a forgotten message
leaves nothing in any file of the store, a replay does not bring it back, other tenants keep theirs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from simplemem.cli.errors import ExitCode
from simplemem.cli.main import app
from simplemem.processors.ingest.admission import FORGOTTEN_REASON
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.stream import DeletionRequest
from tests.helpers.forget_data import (
    COFFEE,
    FESTIVAL,
    KEPT,
    OTHER_TENANT,
    QUESTION_ID,
    coffee_ids,
    conversation,
    event,
    files_holding,
    lines,
)

pytestmark = pytest.mark.slow
AS_OF = "2026-03-01T00:00:00Z"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("forget-store")


@pytest.fixture(scope="module")
def rt(store: Path, settings: Any) -> Iterator[Any]:
    from simplemem.runtime import open_runtime

    runtime = open_runtime(settings, store)
    yield runtime
    runtime.close()


def request(tenant: str, ids: list[str] | None = None) -> DeletionRequest:
    return DeletionRequest(
        tenant_id=tenant,
        message_ids=ids or [],
        whole_tenant=ids is None,
        requested_by="test",
        requested_at=datetime.now(UTC),
    )


def units_of(rt: Any, tenant: str) -> list[MemoryUnit]:
    return [u for page in rt.lexical.iter_units(tenant, 100) for u in page]


def ask(rt: Any, tenant: str, query: str) -> str:
    return str(rt.retriever.query(QueryRequest(tenant_id=tenant, query=query, as_of=AS_OF)).context)


def test_forgotten_messages_leave_no_byte_in_the_store_and_a_replay_brings_none_back(
    rt: Any, store: Path
) -> None:
    tenant, other = "rtbf", "rtbf-other"
    mine, theirs = conversation(tenant), conversation(other, cafe=OTHER_TENANT[0], festival=OTHER_TENANT[0])
    rt.pipeline.ingest(lines(mine + theirs))
    before = units_of(rt, tenant)
    assert {s for u in before for s in u.source_ids} >= set(coffee_ids())
    assert any(u.context_ids == [QUESTION_ID] for u in before), "the answer quotes the question"
    assert COFFEE[0] in ask(rt, tenant, "Where did I order an oat latte?")
    theirs_before = rt.lexical.count(other)

    result = rt.forget(request(tenant, [*coffee_ids(), QUESTION_ID]))

    assert result.record.units_deleted >= len(coffee_ids())
    assert result.record.units_rewritten >= 1  # the answer, without the quoted question
    assert files_holding(store, (*COFFEE, *FESTIVAL)) == []
    left = units_of(rt, tenant)
    assert not {s for u in left for s in [*u.source_ids, *u.context_ids]} & {*coffee_ids(), QUESTION_ID}
    assert {u.id for u in left} == {u.id for u in before} - set(result.deleted)
    assert rt.vectors.count(tenant) == len(left)
    assert COFFEE[0] not in ask(rt, tenant, "Where did I order an oat latte?")
    assert KEPT[0] in ask(rt, tenant, "Which orchestra does Tomas play in?")  # the rest stays
    assert rt.lexical.count(other) == theirs_before  # the same message ids of another tenant stay
    assert OTHER_TENANT[0] in ask(rt, other, "Where did I order an oat latte?")

    replay = rt.pipeline.ingest(lines(mine))
    forgotten = {r.where for r in replay.rejected if r.reason == FORGOTTEN_REASON}
    assert forgotten == {*coffee_ids(), QUESTION_ID}
    assert files_holding(store, (*COFFEE, *FESTIVAL)) == []
    assert COFFEE[0] not in ask(rt, tenant, "Where did I order an oat latte?")
    [record] = rt.tombstones.records(tenant)
    assert (
        record.request.message_ids == [*coffee_ids(), QUESTION_ID] and record.request.requested_by == "test"
    )


def test_a_forgotten_tenant_is_gone_and_stays_gone_until_it_starts_over(rt: Any, store: Path) -> None:
    tenant, other = "rtbf-all", "rtbf-all-other"
    rt.pipeline.ingest(
        lines(conversation(tenant) + conversation(other, cafe=OTHER_TENANT[0], festival=OTHER_TENANT[0]))
    )
    assert rt.lexical.count(tenant) > 0
    theirs = rt.lexical.count(other)

    rt.forget(request(tenant))

    assert rt.lexical.count(tenant) == 0 and rt.vectors.count(tenant) == 0
    assert rt.lexical.count(other) == theirs == rt.vectors.count(other)
    assert ask(rt, tenant, "Where did I order an oat latte?") == ""
    replay = rt.pipeline.ingest(lines(conversation(tenant)))
    assert replay.accepted == 0 and rt.lexical.count(tenant) == 0
    later = event(tenant, "new", 1, "Jordan", "I adopted a grey cat called Miso.", 0)
    later["ts"] = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    rt.pipeline.ingest([("new", orjson.dumps(later))])
    assert rt.lexical.count(tenant) > 0  # a turn stated after the deletion is a new start


def test_forget_from_the_command_line(tmp_path: Path) -> None:
    store = tmp_path / "store"
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(orjson.dumps(e) for e in conversation("cli-rtbf")) + b"\n")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(events), "--store", str(store)]).exit_code == 0
    assert files_holding(store, COFFEE)

    args = ["forget", "--tenant", "cli-rtbf", "--store", str(store)]
    for mid in coffee_ids():
        args += ["--message-id", mid]
    done = runner.invoke(app, [*args, "--json"])
    assert done.exit_code == 0, done.output
    record = orjson.loads(done.stdout)
    assert record["request"]["message_ids"] == coffee_ids() and record["request"]["requested_by"] == "cli"
    assert record["units_deleted"] >= len(coffee_ids())
    assert files_holding(store, COFFEE) == []

    both = runner.invoke(
        app, ["forget", "--tenant", "cli-rtbf", "--all", "--message-id", "x", "--store", str(store)]
    )
    assert both.exit_code == ExitCode.USAGE
    nowhere = runner.invoke(
        app, ["forget", "--tenant", "cli-rtbf", "--all", "--store", str(tmp_path / "none")]
    )
    assert nowhere.exit_code == ExitCode.ERROR and "no store" in nowhere.output
    from simplemem.api.directory import Scope, SqliteDirectory

    scopes = SqliteDirectory(store / "api_keys.sqlite", lambda text: "<scrubbed>")  # what serve's mem0 kept
    scopes.record("cli-rtbf", Scope(user_id="jordan@example.com"))
    scopes.record("someone-else", Scope(user_id="kim@example.com"))
    everything = runner.invoke(app, ["forget", "--tenant", "cli-rtbf", "--all", "--store", str(store)])
    assert everything.exit_code == 0 and "the whole tenant" in everything.stdout
    assert files_holding(store, (*COFFEE, *FESTIVAL, *KEPT)) == []
    assert scopes.sessions("cli-rtbf", Scope()) == {}, "the tenant's mem0 scopes go with it"
    assert len(scopes.sessions("someone-else", Scope())) == 1
