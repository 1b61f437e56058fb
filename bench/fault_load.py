"""The load of the fault benchmark (bench/faults.py): LoCoMo turns from many tenants, malformed events
among them, and a publisher that keeps a steady rate whatever Kafka does.

Every tenant replays one LoCoMo conversation, round after round, so the stream lasts as long as the
run does; each round has its own session and message ids (``r3-D1:5``), so ids stay unique per tenant.
Tenants are interleaved turn by turn, each tenant's turns in order, as many live chats would be.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

import orjson
from aiokafka import AIOKafkaProducer

from bench.locomo_data import Conversation
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.settings import Settings
from simplemem.streams.kafka_io import record_key
from simplemem.streams.topics import MAX_RECORD_BYTES

# What frontends get wrong, and the share of malformed events of each kind (the huge blob is rare:
# ~900 KB each). Every kind is published at least once.
MALFORMED_KINDS = {
    "invalid_json": 0.30,
    "missing_field": 0.25,
    "naive_timestamp": 0.25,
    "oversized_text": 0.15,
    "huge_blob": 0.05,
}
BLOB_BYTES = 900 * 1024


@dataclass
class Record:
    """One record for the turns topic, and what became of its publication."""

    raw: bytes
    key: bytes | None
    tenant: str
    session: str
    message_id: str | None = None  # a valid turn's id (None for a malformed event)
    fact: bool = False  # a valid turn with a fact (bench.stream.fact_turns): it enters the buffer
    kind: str | None = None  # the malformed kind
    sent_at: float | None = None  # first handed to the producer (perf_counter)
    position: tuple[int, int] | None = None  # (partition, offset), once Kafka acknowledged it
    sends: int = 0

    @property
    def turn(self) -> tuple[str, str] | None:
        return None if self.message_id is None else (self.tenant, self.message_id)


def tenant_turns(
    conv: Conversation, tenant: str, facts: set[tuple[str, str]]
) -> Iterator[tuple[dict[str, object], bool]]:
    """A tenant's events forever: its conversation again and again, with new ids each round."""
    base = conv.events()
    for rnd in itertools.count():
        for e in base:
            session = str(e["session_id"]).split("/", 1)[1]
            event = {
                **e,
                "tenant_id": tenant,
                "session_id": f"{tenant}/r{rnd}-{session}",
                "message_id": f"r{rnd}-{e['message_id']}",
            }
            yield event, (conv.tenant_id, str(e["message_id"])) in facts


def malformed(kind: str, event: dict[str, object], n: int, rng: random.Random, max_text: int) -> bytes:
    """A broken variant of ``event`` as a buggy frontend would send it (ids ``bad-<n>``: unique)."""
    bad = {**event, "message_id": f"bad-{n}"}
    if kind == "invalid_json":
        raw = orjson.dumps(bad)
        return raw[: rng.randrange(1, len(raw) - 1)]
    if kind == "missing_field":
        del bad[rng.choice(["speaker", "ts", "role", "text", "message_id"])]
    elif kind == "naive_timestamp":
        bad["ts"] = str(bad["ts"])[:19]  # 2023-05-08T13:56:00, no offset
    elif kind == "oversized_text":
        text = str(bad["text"]) + " "
        bad["text"] = text * (max_text // len(text) + 2)
    elif kind == "huge_blob":
        return b"\x89BLOB" + rng.randbytes(BLOB_BYTES)
    return orjson.dumps(bad)


def load(
    convs: list[Conversation],
    tenants: int,
    facts: set[tuple[str, str]],
    settings: Settings,
    seed: int,
    malformed_share: float = 0.01,
    malformed_kinds: list[str] | None = None,
) -> Iterator[Record]:
    """The endless stream: tenants round-robin; after any turn, a malformed event with the given
    probability (keyed by its session as a frontend would, or unkeyed when it could not tell)."""
    rng = random.Random(seed)
    names = [f"{convs[i % len(convs)].tenant_id}-t{i:02d}" for i in range(tenants)]
    streams = [tenant_turns(convs[i % len(convs)], names[i], facts) for i in range(tenants)]
    kinds = malformed_kinds or list(MALFORMED_KINDS)
    weights = [MALFORMED_KINDS[k] for k in kinds]
    n_bad = 0
    for stream in itertools.cycle(streams):
        event, fact = next(stream)
        tenant, session = str(event["tenant_id"]), str(event["session_id"])
        raw = orjson.dumps(event)
        yield Record(raw, record_key(raw), tenant, session, message_id=str(event["message_id"]), fact=fact)
        if rng.random() < malformed_share:
            kind = kinds[n_bad] if n_bad < len(kinds) else rng.choices(kinds, weights)[0]
            bad = malformed(kind, event, n_bad, rng, settings.max_text_chars)
            keyed = kind not in ("invalid_json", "huge_blob") or rng.random() < 0.5
            key = SessionKey(tenant, session).encode() if keyed else None
            yield Record(bad, key, tenant, session, kind=kind)
            n_bad += 1


class Publisher:
    """Publishes records at a steady rate, as a frontend would: a local queue absorbs what Kafka
    cannot take (while it restarts), and a send that fails is sent again until acknowledged."""

    def __init__(self, settings: Settings, source: Iterator[Record], rate: float) -> None:
        self.settings = settings
        self.source = source
        self.rate = rate
        self.records: list[Record] = []
        self.recent_sessions: dict[tuple[str, str], float] = {}  # (tenant, session) -> last send
        self.resends = 0
        self.backlog_max = 0
        self._queue: deque[Record] = deque()
        self._inflight: set[asyncio.Task[None]] = set()

    @property
    def acknowledged(self) -> int:
        return sum(r.position is not None for r in self.records)

    async def run(self, stop: asyncio.Event) -> None:
        """Until ``stop`` is set, then until everything generated is acknowledged."""
        prod = AIOKafkaProducer(
            bootstrap_servers=self.settings.kafka_endpoint,
            acks="all",
            enable_idempotence=True,
            linger_ms=5,
            max_request_size=MAX_RECORD_BYTES,
            request_timeout_ms=180_000,  # outlives a Kafka restart; a send failing anyway is re-sent
        )
        await prod.start()
        try:
            pacer = asyncio.create_task(self._generate(stop))
            while not (pacer.done() and not self._queue):
                if not self._queue:
                    await asyncio.sleep(0.005)
                    continue
                await self._send(prod, self._queue.popleft())
            while self._inflight:
                await asyncio.gather(*list(self._inflight))
            await pacer
        finally:
            await prod.stop()

    async def _generate(self, stop: asyncio.Event) -> None:
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i in itertools.count(1):
            if stop.is_set():
                return
            record = next(self.source)
            self.records.append(record)
            self._queue.append(record)
            self.backlog_max = max(self.backlog_max, len(self._queue))
            delay = start + i / self.rate - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)

    async def _send(self, prod: AIOKafkaProducer, record: Record) -> None:
        topic = self.settings.topic(self.settings.turns_topic)
        while True:
            record.sends += 1
            if record.sent_at is None:
                record.sent_at = time.perf_counter()
            self.recent_sessions[(record.tenant, record.session)] = time.perf_counter()
            try:
                future = await prod.send(topic, record.raw, key=record.key)
                break
            except Exception:  # Kafka unreachable long enough to time out the send: send again
                self.resends += 1
                await asyncio.sleep(1.0)
        task = asyncio.create_task(self._acknowledged(prod, record, future))
        self._inflight.add(task)
        task.add_done_callback(self._inflight.discard)

    async def _acknowledged(
        self, prod: AIOKafkaProducer, record: Record, future: asyncio.Future[object]
    ) -> None:
        try:
            meta = await future
        except Exception:  # not acknowledged: its fate is unknown, send it again (at least once)
            self.resends += 1
            await asyncio.sleep(1.0)
            await self._send(prod, record)
            return
        record.position = (meta.partition, meta.offset)  # type: ignore[attr-defined]
