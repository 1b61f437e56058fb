"""The right to be forgotten through Kafka: a request on the deletions topic is carried out by a
worker's forget agent on every service store, the units topic gets tombstones, and neither a replay
of the turns topic nor ``simplemem replay`` of the scrubbed history brings the messages back."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest
from tests.helpers.forget_data import (
    COFFEE,
    FESTIVAL,
    KEPT,
    QUESTION_ID,
    coffee_ids,
    conversation,
    files_holding,
    stored_bytes,
)
from tests.helpers.workers import WorkerProcess
from tests.services import drop_stream_env, require, running_worker, stream_env
from tests.test_streams import (
    kcat_publish,
    outcomes,
    replay,
    settings_of,
    wait_for,
)

pytestmark = pytest.mark.integration
TENANT = "rtbf-stream"
ERASURE_DEADLINE = 5  # seconds: Kafka's cleaner checks every 15 s, so erasure takes a little longer


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    values = stream_env(
        "forget",
        tmp_path_factory.mktemp("faust"),
        2,
        3,
        SIMPLEMEM_CONSOLIDATION_INTERVAL_SECONDS="5",
        SIMPLEMEM_ERASURE_DEADLINE_SECONDS=str(ERASURE_DEADLINE),
    )
    settings = settings_of(values)
    require(settings, kafka=True)
    yield values
    drop_stream_env(settings)


@pytest.fixture(scope="module")
def worker(env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[WorkerProcess]:
    yield from running_worker(env, tmp_path_factory.mktemp("logs"))


def units_tombstones(settings: Settings) -> set[str]:
    from simplemem.streams.kafka_io import read_topic

    records = asyncio.run(read_topic(settings, settings.topic(settings.units_topic)))
    return {r.key.decode() for r in records if r.value is None and r.key}


def latest_outcomes(settings: Settings) -> Any:
    """(message id, latest value) per key of the outcomes topic (None: a tombstone)."""
    from simplemem.streams.kafka_io import read_topic

    latest: dict[str, bytes | None] = {}
    for r in asyncio.run(read_topic(settings, settings.topic(settings.outcomes_topic))):
        key = orjson.loads(r.key) if r.key else None
        if isinstance(key, list):  # not a segment-roll marker
            latest[key[1]] = r.value
    return latest.items()


def test_a_deletion_on_the_topic_reaches_every_store_and_survives_replays(
    env: dict[str, str], worker: WorkerProcess, tmp_path: Path
) -> None:
    from simplemem.runtime import open_runtime
    from simplemem.streams.deletions import publish_deletion

    settings = settings_of(env)
    turns = [orjson.dumps(e) for e in conversation(TENANT)]
    kcat_publish(settings, turns)
    wanted = {orjson.loads(t)["message_id"] for t in turns}
    wait_for(lambda: wanted <= set(outcomes(settings)), 180, "an outcome for every turn")
    rt = open_runtime(settings)
    try:
        gone_ids = [*coffee_ids(), QUESTION_ID]
        derived = {u.id for u in rt.lexical.units_from_sources(TENANT, gone_ids)}
        assert derived and COFFEE[1].encode() in stored_bytes(rt)

        request = DeletionRequest(
            tenant_id=TENANT, message_ids=gone_ids, requested_by="test", requested_at=datetime.now(UTC)
        )
        asyncio.run(publish_deletion(settings, request))
        wait_for(lambda: bool(rt.tombstones.records(TENANT)), 60, "the deletion record (written last)")
        [record] = rt.tombstones.records(TENANT)
        assert not rt.lexical.units_from_sources(TENANT, gone_ids)
        print(f"\nrequest to gone from every store (forget agent): {record.seconds:.3f} s")
        stored = stored_bytes(rt)
        for word in (*COFFEE, *FESTIVAL):
            assert word.lower().encode() not in stored, word
        assert KEPT[1].encode() in stored
        wait_for(lambda: derived <= units_tombstones(settings), 30, "tombstones on the units topic")
        wait_for(
            lambda: latest_outcomes(settings) >= {k: None for k in gone_ids}.items(),
            30,
            "the outcomes of the forgotten turns tombstoned",
        )

        # the turns again on the turns topic (a frontend replaying its history): dropped
        kcat_publish(settings, turns)
        wait_for(
            lambda: worker.metric("simplemem_turns_forgotten_total") >= len(gone_ids),
            60,
            "the worker to drop the forgotten turns",
        )
        time.sleep(2 * float(env["SIMPLEMEM_STREAM_IDLE_SECONDS"]) + 2)  # their windows would have closed
        assert not rt.lexical.units_from_sources(TENANT, gone_ids)
    finally:
        rt.close()

    # the scrubbed history replayed into a fresh embedded store: the deletions topic keeps them out
    fresh = tmp_path / "rebuilt"
    proc = replay(env, TENANT, fresh)
    assert b"deletion requests" in proc.stdout, proc.stdout
    assert files_holding(fresh, (*COFFEE, *FESTIVAL)) == []
    assert files_holding(fresh, KEPT)


def test_the_consolidation_timer_and_agent_publish_their_decisions(
    env: dict[str, str], worker: WorkerProcess
) -> None:
    from simplemem.runtime import open_runtime
    from simplemem.schemas.stream import ConsolidationDecision
    from simplemem.streams.kafka_io import read_topic
    from tests.helpers.consolidation_data import order_ids, stream

    settings = settings_of(env)
    tenant, orders = "consolidate-stream", 8
    kcat_publish(settings, [orjson.dumps(e) for e in stream(tenant, orders)])

    def decisions() -> list[ConsolidationDecision]:
        records = asyncio.run(read_topic(settings, settings.topic(settings.consolidation_topic)))
        found = [ConsolidationDecision.model_validate_json(r.value) for r in records if r.value]
        return [d for d in found if d.tenant_id == tenant]

    def covering() -> list[ConsolidationDecision]:  # a first run may see only the orders indexed by then
        return [d for d in decisions() if set(d.source_ids) == set(order_ids(orders))]

    wait_for(lambda: bool(covering()), 120, "a consolidation decision over every order")
    decision = covering()[-1]
    rt = open_runtime(settings)
    try:
        # published before it is applied (simplemem.streams.worker.ConsolidateStep): the stores follow
        def stored() -> list[Any]:
            return rt.lexical.get(tenant, [decision.abstract_id or ""])

        wait_for(lambda: bool(stored()), 60, "the decision's abstract in the stores")
        [abstract] = stored()
        assert abstract.kind == "abstract" and set(abstract.source_ids) == set(order_ids(orders))
    finally:
        rt.close()


def scrubbed_turns(settings: Settings) -> dict[str, set[str]]:
    """Tenant -> message ids of the turns with a record (not a tombstone) on the scrubbed topic."""
    from simplemem.schemas.stream import ScrubbedRecord
    from simplemem.streams.kafka_io import read_topic

    found: dict[str, set[str]] = {}
    for r in asyncio.run(read_topic(settings, settings.topic(settings.scrubbed_topic))):
        record = ScrubbedRecord.model_validate_json(r.value) if r.value else None
        if record is not None and record.message is not None:
            found.setdefault(record.tenant_id, set()).add(record.message.message_id)
    return found


def test_forgotten_turns_are_erased_from_the_kept_scrubbed_history(
    env: dict[str, str], worker: WorkerProcess
) -> None:
    """The scrubbed topic is kept for replay: a forgotten message's record there is erased by Kafka's
    compaction (its tombstone), a forgotten tenant's every record, and nothing else goes."""
    from simplemem.streams.deletions import publish_deletion

    settings = settings_of(env)
    one, whole, kept = "erase-messages", "erase-tenant", "erase-kept"
    turns = [orjson.dumps(e) for t in (one, whole, kept) for e in conversation(t)]
    kcat_publish(settings, turns)
    wanted = {orjson.loads(t)["message_id"] for t in turns}
    wait_for(lambda: wanted <= set(outcomes(settings)), 180, "an outcome for every turn")
    before = scrubbed_turns(settings)
    gone = {*coffee_ids(), QUESTION_ID}
    assert gone <= before[one] and before[whole] and before[kept] == before[one]

    now = datetime.now(UTC)
    for request in (
        DeletionRequest(tenant_id=one, message_ids=sorted(gone), requested_by="test", requested_at=now),
        DeletionRequest(tenant_id=whole, whole_tenant=True, requested_by="test", requested_at=now),
    ):
        asyncio.run(publish_deletion(settings, request))
    started = time.monotonic()
    wait_for(
        lambda: not gone & scrubbed_turns(settings).get(one, set()) and whole not in scrubbed_turns(settings),
        240,
        "Kafka's compaction to erase the forgotten turns from the scrubbed topic",
    )
    print(f"\nrequest to erased from the scrubbed topic: {time.monotonic() - started:.0f} s")
    after = scrubbed_turns(settings)
    assert after[one] == before[one] - gone
    assert after[kept] == before[kept], "compaction keeps every turn that was not forgotten"
