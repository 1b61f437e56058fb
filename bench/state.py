"""A worker's memory over many sessions: session state has a lifetime, so RSS stays flat.

    python -m bench.state [--sessions 100000] [--turns 2]   # the services must be up: simplemem infra up

One worker in fresh topics. Sessions of a few turns each are published straight to the internal
``scrubbed`` topic (already analysed, no text to speak of: the memory stage and its sessions table
are what is measured, not spaCy), a few thousand sessions at a time. Each session goes silent, is
closed by the idle timer, and its state is removed after the grace period. Printed per step:
sessions published, session states the worker holds, and the worker's RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import psutil

from bench.stream import bench_env
from simplemem.schemas.codec import dumps
from simplemem.schemas.events import Role
from simplemem.schemas.settings import Settings, settings_for
from simplemem.schemas.stream import ScrubbedRecord, SourceRef
from simplemem.schemas.window import AnalyzedMessage
from tests.helpers.workers import WorkerProcess

STEP_SESSIONS = 5_000


def records(first: int, count: int, turns: int, tenant: str) -> list[tuple[bytes, bytes]]:
    """(key, value) of ``turns`` stage records for each of ``count`` sessions."""
    out = []
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    for s in range(first, first + count):
        for t in range(turns):
            message = AnalyzedMessage(
                tenant_id=tenant,
                session_id=f"s{s}",
                message_id=f"s{s}-m{t}",
                speaker="Ana",
                role=Role.USER,
                ts=ts,
                text="ok",
                prose="ok",
            )
            record = ScrubbedRecord.turn(message, SourceRef(topic="bench", partition=0, offset=t))
            out.append((record.session_key.encode(), dumps(record)))
    return out


async def publish(settings: Settings, batch: list[tuple[bytes, bytes]]) -> None:
    from simplemem.streams.kafka_io import producer

    prod = producer(settings)
    await prod.start()
    try:
        pending = [await prod.send(settings.topic(settings.scrubbed_topic), v, key=k) for k, v in batch]
        await asyncio.gather(*pending)
    finally:
        await prod.stop()


def rss_mb(worker: WorkerProcess) -> float:
    assert worker.proc is not None
    proc = psutil.Process(worker.proc.pid)
    return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--turns", type=int, default=2, help="turns per session")
    args = ap.parse_args()

    tag = f"bench-state-{uuid.uuid4().hex[:6]}"
    env = bench_env(tag) | {
        "SIMPLEMEM_STREAM_IDLE_SECONDS": "2",
        "SIMPLEMEM_SESSION_STATE_GRACE_SECONDS": "5",
    }
    settings = settings_for(env)
    from simplemem.streams.topics import ensure_topics

    asyncio.run(ensure_topics(settings))
    worker = WorkerProcess(env, Path(tempfile.mkdtemp(prefix=f"{tag}-")) / "worker.log").start()
    try:
        worker.wait_ready()
        print(f"{'sessions published':>20} {'states held':>12} {'turns decided':>14} {'worker RSS MB':>14}")
        print(f"{0:>20} {0:>12} {0:>14} {rss_mb(worker):>14.0f}")
        published = 0
        start = time.perf_counter()
        while published < args.sessions:
            count = min(STEP_SESSIONS, args.sessions - published)
            asyncio.run(publish(settings, records(published, count, args.turns, tag)))
            published += count
            want = published * args.turns
            while worker.metric("simplemem_turns_out_total") < want:  # the worker keeps up
                time.sleep(0.5)
            held = worker.metric("simplemem_sessions")
            print(f"{published:>20} {held:>12.0f} {want:>14} {rss_mb(worker):>14.0f}", flush=True)
        elapsed = time.perf_counter() - start
        time.sleep(10)  # past the grace period: the last sessions' states go too
        print(
            f"after the grace period: {worker.metric('simplemem_sessions'):.0f} states held, "
            f"{worker.metric('simplemem_sessions_removed_total'):.0f} removed, RSS {rss_mb(worker):.0f} MB"
        )
        print(f"{args.sessions} sessions in {elapsed:.0f} s")
    finally:
        worker.stop()


if __name__ == "__main__":
    main()
