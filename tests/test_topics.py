"""Topics exist only as declared: no broker auto-creation, and a differing topic stops the worker."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from simplemem.schemas.settings import Settings
from simplemem.streams.topics import TopicMismatch, ensure_topics, topic_specs
from tests.services import require

pytestmark = pytest.mark.integration


def _settings() -> Settings:
    settings = Settings(topic_prefix=f"test-topics-{uuid.uuid4().hex[:8]}.", topic_partitions=2)
    require(settings, kafka=True)
    return settings


async def _drop(settings: Settings) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        mine = [t for t in await admin.list_topics() if t.startswith(settings.topic_prefix)]
        if mine:
            await admin.delete_topics(mine)
    finally:
        await admin.close()


def test_publishing_to_a_missing_topic_does_not_create_it() -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    settings = _settings()
    topic = settings.topic(settings.turns_topic)

    async def scenario() -> list[str]:
        producer = AIOKafkaProducer(bootstrap_servers=settings.kafka_endpoint, request_timeout_ms=3000)
        await producer.start()
        try:
            with pytest.raises(KafkaError):
                await asyncio.wait_for(producer.send_and_wait(topic, b"{}"), timeout=10)
        except TimeoutError:
            pass  # the client may keep waiting for the topic's metadata: the topic still must not exist
        finally:
            await producer.stop()
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
        await admin.start()
        try:
            return list(await admin.list_topics())
        finally:
            await admin.close()

    assert topic not in asyncio.run(scenario())


def test_topics_are_created_as_declared_and_a_differing_one_is_reported() -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    settings = _settings()
    dlq = settings.topic(settings.dlq_topic)

    async def scenario() -> tuple[list[str], str]:
        admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
        await admin.start()
        try:
            # someone made the dead-letter topic by hand, with the broker's default retention
            await admin.create_topics([NewTopic(dlq, settings.topic_partitions, 1)])
        finally:
            await admin.close()
        with pytest.raises(TopicMismatch) as err:
            await ensure_topics(settings)
        again = Settings(topic_prefix=settings.topic_prefix + "ok.", topic_partitions=2)
        created = await ensure_topics(again)
        assert await ensure_topics(again) == [], "a second start verifies and creates nothing"
        await _drop(again)
        return created, str(err.value)

    try:
        created, message = asyncio.run(scenario())
    finally:
        asyncio.run(_drop(settings))
    assert len(created) == len(topic_specs(settings))
    assert dlq in message and "retention.ms" in message and "max.message.bytes" in message
