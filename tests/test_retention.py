"""Durable history holds no raw PII: with a short raw retention, after it passes, no retained topic
holds a raw PII string, and the memory can still be re-derived from the scrubbed history."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from simplemem.schemas.accounting import MessageOutcome
from simplemem.schemas.settings import Settings, settings_for
from tests.helpers import store_bytes
from tests.helpers.kcat import kcat_publish
from tests.helpers.workers import WorkerProcess
from tests.services import drop_stream_env, require, stream_env
from tests.test_streams import replay, wait_for

pytestmark = pytest.mark.integration

RAW_RETENTION_SECONDS = 20
PII = ["415-555-0123", "dana.w@example.org", "4111 1111 1111 1111"]
TURNS = [
    f"You can call me at {PII[0]} after six.",
    f"My work e-mail is {PII[1]}, use that for the invoices.",
    "The invoices go to the finance team in Leeds.",
    f"The card for the deposit is {PII[2]}.",
]


def event(i: int, text: str) -> bytes:
    return orjson.dumps(
        {
            "tenant_id": "retention",
            "session_id": "s1",
            "message_id": f"r{i}",
            "speaker": "Dana",
            "role": "user",
            "text": text,
            "ts": f"2026-05-0{i + 1}T10:00:00Z",
        }
    )


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    values = stream_env(
        "ret",
        tmp_path_factory.mktemp("faust"),
        2,
        2,
        SIMPLEMEM_RAW_RETENTION_SECONDS=str(RAW_RETENTION_SECONDS),
    )
    settings = settings_for(values)
    require(settings, kafka=True)
    yield values
    drop_stream_env(settings)


async def every_retained_record(settings: Settings) -> list[bytes]:
    """Keys and values of every record in every topic of this deployment (Faust's included)."""
    from aiokafka.admin import AIOKafkaAdminClient

    from simplemem.streams.kafka_io import read_topic

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        mine = [
            t
            for t in await admin.list_topics()
            if t.startswith((settings.topic_prefix, settings.stream_app_id))
        ]
    finally:
        await admin.close()
    found: list[bytes] = []
    for topic in mine:
        for record in await read_topic(settings, topic):
            found += [record.key or b"", record.value or b""]
    return found


def test_no_raw_pii_is_retained_after_the_raw_retention(env: dict[str, str], tmp_path: Path) -> None:
    from simplemem.streams.topics import ensure_topics

    settings = settings_for(env)
    asyncio.run(ensure_topics(settings))
    worker = WorkerProcess(env, tmp_path / "worker.log").start()
    try:
        worker.wait_ready()
        bad = b'{"tenant_id": "retention", "text": "reach me on ' + PII[0].encode() + b'"'
        kcat_publish(settings, [*(event(i, t) for i, t in enumerate(TURNS)), bad])
        records = asyncio.run(every_retained_record(settings))
        assert any(p.encode() in r for p in PII for r in records), "raw input is there before the retention"

        def decided() -> bool:
            from tests.test_streams import read

            found = [MessageOutcome.model_validate_json(v) for v in read(settings, settings.outcomes_topic)]
            return {f"r{i}" for i in range(len(TURNS))} <= {o.message_id for o in found}

        wait_for(decided, 120, "every turn decided")

        def raw_pii_gone() -> bool:
            retained = asyncio.run(every_retained_record(settings))
            return not any(p.encode() in r for p in PII for r in retained)

        wait_for(raw_pii_gone, 180, "raw PII to leave every retained topic")
    finally:
        worker.stop()

    fresh = tmp_path / "rebuilt"
    proc = replay(env, "retention", fresh)
    assert f"{len(TURNS)} of".encode() in proc.stdout, proc.stdout
    stored = store_bytes(fresh)
    assert b"Leeds" in stored and not any(p.encode() in stored for p in PII)
