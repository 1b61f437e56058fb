"""The dead letters of a services deployment, counted for the /ui/ page's activity tab.

A dead letter names its tenant when the turn it failed was one (bad input that never parsed names
none): a tenant's key counts its own, the admin's every one. The topic is read from its start, up to
``DEAD_LETTERS_READ`` records (it holds failures only, and its retention trims it).
"""

from __future__ import annotations

import asyncio
from collections import Counter

from pydantic import ValidationError

from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeadLetter

DEAD_LETTERS_READ = 10_000
READ_SECONDS = 10.0


async def dead_letters(settings: Settings, tenant: str | None) -> dict[str, object]:
    """Dead letters by stage and reason class (``tenant`` None: all of them)."""
    try:
        return await asyncio.wait_for(_count(settings, tenant), READ_SECONDS)
    except Exception as exc:  # the activity tab reports, it does not fail
        return {"unread": f"{type(exc).__name__}: {str(exc)[:200]}"}


async def _count(settings: Settings, tenant: str | None) -> dict[str, object]:
    from simplemem.streams.kafka_io import stream_topic

    counts: Counter[str] = Counter()
    read = 0
    async for record in stream_topic(settings, settings.topic(settings.dlq_topic)):
        read += 1
        if read > DEAD_LETTERS_READ:
            break
        try:
            letter = DeadLetter.model_validate_json(record.value or b"")
        except ValidationError:
            continue
        if tenant is None or letter.tenant_id == tenant:
            counts[f"{letter.stage.value} / {letter.code}"] += 1
    found: dict[str, object] = {"total": sum(counts.values()), **dict(counts.most_common())}
    if read > DEAD_LETTERS_READ:
        found["note"] = f"the first {DEAD_LETTERS_READ} records read"
    return found
