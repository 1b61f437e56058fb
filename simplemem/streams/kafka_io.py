"""Plain Kafka clients for the CLI: publish turns, read a topic to its end, fetch one record.

Publishing keys each event by its session, the JSON array ``[tenant_id, session_id]`` (murmur2, the Java client's partitioner, like
Faust), so a session's turns stay ordered on one partition. Lines that are not a JSON object are sent
unkeyed: the worker dead-letters them with the reason, so bad input is visible in one place.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.partitioner import DefaultPartitioner

from simplemem.schemas.keys import SessionKey
from simplemem.schemas.settings import Settings
from simplemem.streams.topics import MAX_RECORD_BYTES


def session_key(raw: bytes) -> SessionKey | None:
    """The session of a raw event, or None if it has none (bad input)."""
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    tenant, session = data.get("tenant_id"), data.get("session_id")
    if isinstance(tenant, str) and isinstance(session, str):
        return SessionKey(tenant, session)
    return None


def session_partition(key: SessionKey, partitions: int) -> int:
    """The partition the producers' default partitioner gives the session's key: a record keyed by
    something else (a turn on the compacted scrubbed topic) still lands beside its session's other
    records and its sessions-table state (co-partitioned, in order)."""
    return int(DefaultPartitioner()(key.encode(), list(range(partitions)), []))


def record_key(raw: bytes) -> bytes | None:
    """The Kafka key of a raw event: its session's encoding, or None for bad input."""
    key = session_key(raw)
    return None if key is None else key.encode()


@dataclass
class PublishReport:
    published: int = 0
    unkeyed: int = 0


def producer(settings: Settings) -> AIOKafkaProducer:
    return AIOKafkaProducer(
        bootstrap_servers=settings.kafka_endpoint,
        acks="all",
        enable_idempotence=True,
        linger_ms=5,
        max_request_size=MAX_RECORD_BYTES,
    )


async def publish(
    settings: Settings,
    lines: Iterable[bytes],
    topic: str | None = None,
    progress: Callable[[int], None] | None = None,
    chunk: int = 500,
) -> PublishReport:
    """Send raw events to the turns topic (or ``topic``), waiting for every acknowledgement."""
    topic = topic or settings.topic(settings.turns_topic)
    report = PublishReport()
    prod = producer(settings)
    await prod.start()
    try:
        pending: list[asyncio.Future[object]] = []
        for raw in lines:
            key = record_key(raw)
            report.unkeyed += key is None
            pending.append(await prod.send(topic, raw, key=key))
            if len(pending) >= chunk:
                await asyncio.gather(*pending)
                report.published += len(pending)
                if progress:
                    progress(len(pending))
                pending = []
        await asyncio.gather(*pending)
        report.published += len(pending)
        if progress:
            progress(len(pending))
    finally:
        await prod.stop()
    return report


async def partitions_of(settings: Settings, topic: str) -> list[int]:
    """The topic's partition numbers (none if it does not exist)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        [described] = await admin.describe_topics([topic])
    finally:
        await admin.close()
    if described.get("error_code"):
        return []
    return sorted(p["partition"] for p in described.get("partitions", []))


async def _started_consumer(settings: Settings) -> AIOKafkaConsumer:
    """A group-less consumer. The sleep lets its coordinator task start: aiokafka 0.14 raises
    CancelledError from ``stop()`` if that task was cancelled before it ever ran."""
    consumer = AIOKafkaConsumer(bootstrap_servers=settings.kafka_endpoint, enable_auto_commit=False)
    await consumer.start()
    await asyncio.sleep(0)
    return consumer


async def stream_topic(
    settings: Settings, topic: str, fetch_records: int = 500
) -> AsyncGenerator[ConsumerRecord[bytes, bytes], None]:
    """Every record of ``topic`` from its start up to its end as of now (no consumer group), one
    partition after another, a fetch at a time: memory does not grow with the topic."""
    partitions = [TopicPartition(topic, p) for p in await partitions_of(settings, topic)]
    if not partitions:
        return
    consumer = await _started_consumer(settings)
    try:
        ends = await consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            while await consumer.position(tp) < ends[tp]:
                batch = await consumer.getmany(tp, timeout_ms=1000, max_records=fetch_records)
                for msg in batch.get(tp, []):
                    if msg.offset < ends[tp]:
                        yield msg
    finally:
        await consumer.stop()


async def read_topic(settings: Settings, topic: str) -> list[ConsumerRecord[bytes, bytes]]:
    """Every record of ``topic`` up to its end as of now, in a list (for small topics)."""
    return [record async for record in stream_topic(settings, topic)]


def iter_topic(settings: Settings, topic: str) -> Iterator[ConsumerRecord[bytes, bytes]]:
    """:func:`stream_topic` for synchronous code (the embedded pipeline reads it as it goes)."""
    loop = asyncio.new_event_loop()
    records = stream_topic(settings, topic)
    try:
        while True:
            try:
                yield loop.run_until_complete(anext(records))
            except StopAsyncIteration:
                return
    finally:
        loop.run_until_complete(records.aclose())
        loop.close()


async def fetch_record(
    settings: Settings, topic: str, partition: int, offset: int
) -> ConsumerRecord[bytes, bytes] | None:
    """The record at one position, or None if it is gone (retention) or beyond the end."""
    consumer = await _started_consumer(settings)
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, offset)
        batch = await consumer.getmany(tp, timeout_ms=5000, max_records=1)
        for msg in batch.get(tp, []):
            if msg.offset == offset:
                return msg
        return None
    finally:
        await consumer.stop()


async def fetch_range(
    settings: Settings, topic: str, partition: int, start: int, end: int, patience: float = 60.0
) -> list[ConsumerRecord[bytes, bytes]]:
    """The records at offsets ``start`` (included) to ``end`` (excluded) of one partition, all of
    them: an empty fetch (a busy broker) is tried again, and after ``patience`` seconds without
    progress this raises rather than return part of the range (the gap guard marks the whole range
    as consumed, so a short answer would let the group commit past records no agent saw)."""
    consumer = await _started_consumer(settings)
    records: list[ConsumerRecord[bytes, bytes]] = []
    try:
        tp = TopicPartition(topic, partition)
        consumer.assign([tp])
        consumer.seek(tp, start)
        waited = 0.0
        while await consumer.position(tp) < end:
            batch = await consumer.getmany(tp, timeout_ms=5000, max_records=end - start)
            msgs = batch.get(tp, [])
            if msgs:
                waited = 0.0
            elif (waited := waited + 5.0) >= patience:
                raise RuntimeError(
                    f"{topic}/{partition}: offsets {start}..{end - 1} not readable in {patience:.0f} s"
                )
            records.extend(m for m in msgs if start <= m.offset < end)
    finally:
        await consumer.stop()
    return records


async def committed_offset(settings: Settings, group: str, topic: str, partition: int) -> int | None:
    """The consumer group's committed offset of one partition, None if it committed none."""
    return (await committed_offsets(settings, group)).get((topic, partition))


async def committed_offsets(settings: Settings, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of a consumer group, by (topic, partition)."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(group)
    finally:
        await admin.close()
    return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items() if meta.offset >= 0}


async def end_offsets(settings: Settings, partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """The next offset to be written of each partition (its end)."""
    if not partitions:
        return {}
    consumer = await _started_consumer(settings)
    try:
        ends = await consumer.end_offsets([TopicPartition(t, p) for t, p in partitions])
    finally:
        await consumer.stop()
    return {(tp.topic, tp.partition): int(offset) for tp, offset in ends.items()}


async def first_offset(settings: Settings, topic: str, partition: int) -> int:
    """The oldest offset still in the partition (retention may have removed older ones)."""
    consumer = await _started_consumer(settings)
    try:
        tp = TopicPartition(topic, partition)
        offsets = await consumer.beginning_offsets([tp])
        return int(offsets[tp])
    finally:
        await consumer.stop()
