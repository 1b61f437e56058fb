"""Workers SIGKILLed while turns stream in, against the real Kafka, OpenSearch, Milvus and Redis: every
published turn is decided (indexed, filtered or failed), none twice.

The fault run (``bench.faults``) lost turns to the rebalances the kills cause: a batch with records of
a partition the worker kept and of one it lost was dropped, the batch behind it (kept partition only)
delivered, so a session's later turns reached the scrubbed topic before its earlier ones, which the
memorize step then skipped as replays (:mod:`simplemem.streams.ownership`). Two workers share the
partitions; a stream of 24 tenants' conversations, interleaved turn by turn and faster than the
workers take it (so batches wait behind the one in flight), runs while one worker then the other is
killed right after the group committed offsets, each replaced at once as a supervisor would: each
replacement's arrival takes partitions from a busy survivor.
"""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from simplemem.schemas.accounting import MessageOutcome
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.settings import Settings, settings_for
from tests.helpers.kcat import kcat_publish
from tests.helpers.workers import WorkerProcess
from tests.services import drop_stream_env, require, stream_env

pytestmark = pytest.mark.integration

RATE = 60  # turns per second: more than two workers take on this machine, so batches queue behind
KILLS = 3


@pytest.fixture
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Each test its own topics, group and stores."""
    values = stream_env("faultkill", tmp_path_factory.mktemp("faust"), 8, 3)
    settings = settings_for(values)
    require(settings, kafka=True)
    yield values
    drop_stream_env(settings)


def interleaved_turns(copies: int = 3) -> list[bytes]:
    """The shipped chat set, ``copies`` tenants per conversation, one turn of each tenant in turn."""
    from bench.chat_data import load_chat_set

    streams = []
    for conv in load_chat_set():
        for copy in range(copies):
            streams.append([orjson.dumps({**e, "tenant_id": f"{conv.name}-{copy}"}) for e in conv.events])
    lines = []
    for i in range(max(len(s) for s in streams)):
        lines += [s[i] for s in streams if i < len(s)]
    return lines


def read_values(settings: Settings, name: str) -> list[bytes]:
    from simplemem.streams.kafka_io import read_topic

    return [r.value for r in asyncio.run(read_topic(settings, settings.topic(name))) if r.value]


def decided(settings: Settings) -> set[tuple[str, str]]:
    """(tenant, message) of every turn with an outcome or a dead letter."""
    found = {
        (o.tenant_id, o.message_id) for o in map(_outcome, read_values(settings, settings.outcomes_topic))
    }
    for raw in read_values(settings, settings.dlq_topic):
        letter = orjson.loads(raw)
        if letter.get("tenant_id") and letter.get("message_id"):
            found.add((letter["tenant_id"], letter["message_id"]))
    return found


def _outcome(raw: bytes) -> MessageOutcome:
    return MessageOutcome.model_validate_json(raw)


def committed_scrubbed(settings: Settings) -> int:
    from simplemem.streams.kafka_io import committed_offsets

    offsets = asyncio.run(committed_offsets(settings, settings.stream_app_id))
    return sum(v for (topic, _), v in offsets.items() if topic == settings.topic(settings.scrubbed_topic))


def publish_steadily(settings: Settings, lines: list[bytes], done: threading.Event) -> None:
    for start in range(0, len(lines), RATE):
        began = time.monotonic()
        kcat_publish(settings, lines[start : start + RATE])
        time.sleep(max(0.0, 1.0 - (time.monotonic() - began)))
    done.set()


def kill_after_a_commit(settings: Settings, worker: WorkerProcess, timeout: float = 60) -> None:
    """SIGKILL as soon as the group's committed position on the scrubbed topic moves: the moment a
    batch's offsets are committed while its states may still be on their way to the changelog."""
    before, deadline = committed_scrubbed(settings), time.monotonic() + timeout
    while committed_scrubbed(settings) == before and time.monotonic() < deadline:
        time.sleep(0.05)
    worker.kill()


def test_workers_killed_mid_stream_lose_no_turn_and_store_none_twice(
    env: dict[str, str], tmp_path: Path
) -> None:
    from simplemem.streams.topics import ensure_topics

    settings = settings_for(env)
    asyncio.run(ensure_topics(settings))
    lines = interleaved_turns()
    published = {(e["tenant_id"], e["message_id"]) for e in map(orjson.loads, lines)}
    workers = [WorkerProcess(env, tmp_path / f"worker{slot}-0.log").start() for slot in range(2)]
    try:
        for w in workers:
            w.wait_ready()
        done = threading.Event()
        publisher = threading.Thread(target=publish_steadily, args=(settings, lines, done), daemon=True)
        publisher.start()
        for n in range(KILLS):
            time.sleep(5)
            slot = n % 2
            kill_after_a_commit(settings, workers[slot])
            workers[slot] = WorkerProcess(env, tmp_path / f"worker{slot}-{n + 1}.log").start()
            workers[slot].wait_ready()  # it joins the group: the survivor gives up partitions mid-batch
        publisher.join()
        missing = wait_until_decided(settings, published)
    finally:
        for w in workers:
            w.stop()
    assert not missing, f"{len(missing)} of {len(published)} turns never decided, e.g. {sorted(missing)[:5]}"
    twice = stored_twice(settings)
    assert not twice, f"{len(twice)} memories stored under two ids, e.g. {twice[:3]}"


def wait_until_decided(settings: Settings, published: set[tuple[str, str]]) -> set[tuple[str, str]]:
    """The turns still undecided once every turn is, or once nothing was decided for 90 s."""
    missing, changed = published - decided(settings), time.monotonic()
    while missing and time.monotonic() - changed < 90:
        time.sleep(3)
        now = published - decided(settings)
        if now != missing:
            missing, changed = now, time.monotonic()
    return missing


def stored_twice(settings: Settings) -> list[tuple[str, tuple[str, ...], str]]:
    """The same statement of a tenant from the same turns under two unit ids on the units topic
    (latest record per id; a tombstone removes its id)."""
    from simplemem.streams.kafka_io import read_topic

    latest: dict[bytes, MemoryUnit | None] = {}
    for r in asyncio.run(read_topic(settings, settings.topic(settings.units_topic))):
        latest[r.key] = MemoryUnit.model_validate_json(r.value) if r.value else None
    stated = (MemoryKind.FACT, MemoryKind.CODE)  # what windows make (consolidation's are derived)
    counts = Counter(
        (u.tenant_id, tuple(sorted(u.source_ids)), u.text)
        for u in latest.values()
        if u is not None and u.kind in stated
    )
    return [key for key, n in counts.items() if n > 1]


def test_a_worker_paused_past_its_session_timeout_loses_no_turn_when_it_comes_back(
    env: dict[str, str], tmp_path: Path
) -> None:
    """A worker that stalls (a long GC pause, a frozen VM) longer than the group's session timeout
    loses its partitions to the other, which goes on from their committed offsets; when it wakes up,
    the batches it had taken are from a generation that has ended and must not be written, even on a
    partition the group gives back to it."""
    from simplemem.streams.topics import ensure_topics

    settings = settings_for(env)
    asyncio.run(ensure_topics(settings))
    lines = interleaved_turns()
    published = {(e["tenant_id"], e["message_id"]) for e in map(orjson.loads, lines)}
    workers = [WorkerProcess(env, tmp_path / f"worker{slot}.log").start() for slot in range(2)]
    try:
        for w in workers:
            w.wait_ready()
        kcat_publish(settings, lines)  # all at once: both workers have batches in flight
        for paused in workers:
            time.sleep(5)
            assert paused.proc is not None
            os.killpg(paused.proc.pid, signal.SIGSTOP)
            time.sleep(settings.stream_session_timeout_seconds + 10)
            os.killpg(paused.proc.pid, signal.SIGCONT)
        missing = wait_until_decided(settings, published)
    finally:
        for w in workers:
            if w.proc is not None and w.proc.poll() is None:
                os.killpg(w.proc.pid, signal.SIGCONT)
            w.stop()
    assert not missing, f"{len(missing)} of {len(published)} turns never decided, e.g. {sorted(missing)[:5]}"
    twice = stored_twice(settings)
    assert not twice, f"{len(twice)} memories stored under two ids, e.g. {twice[:3]}"
