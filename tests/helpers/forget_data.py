"""A conversation to forget parts of, shared by the forget benchmark and the forget tests.

Each forgettable statement carries a made-up word (``MARKERS``) found nowhere else, so a byte scan
of a store can tell whether anything of it is left: the word as written and its lower-cased stem
(what an FTS index keeps).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from tests.helpers.events import chat_event

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)

# made-up words, their stems (Porter) as the lexical index would keep them
COFFEE = ("Quillfeather", "quillfeath")
FESTIVAL = ("Marrowlight", "marrowlight")
OTHER_TENANT = ("Pemberwick", "pemberwick")
KEPT = ("Zanzolino", "zanzolino")

COFFEE_ORDERS = 5


def event(tenant: str, session: str, i: int, speaker: str, text: str, minutes: int) -> dict[str, Any]:
    return chat_event(tenant, session, text, T0 + timedelta(minutes=minutes), i, speaker)


def conversation(tenant: str, cafe: str = COFFEE[0], festival: str = FESTIVAL[0]) -> list[dict[str, Any]]:
    """Coffee orders in separate sessions (one a day), a question and its answer, unrelated facts."""
    events = []
    for day in range(COFFEE_ORDERS):
        events.append(
            event(
                tenant,
                f"coffee{day}",
                1,
                "Jordan",
                f"I ordered an oat latte at the {cafe} cafe on Elm Street this morning.",
                day * 1440,
            )
        )
    events += [
        event(tenant, "chat", 1, "Alex", f"Have you been to the {festival} festival in Leeds?", 9000),
        event(tenant, "chat", 2, "Jordan", "Yes, I went twice and loved the brass bands there.", 9001),
        event(
            tenant, "chat", 3, "Jordan", f"My brother Tomas plays the trumpet in {KEPT[0]} orchestra.", 9002
        ),
        event(tenant, "chat", 4, "Alex", "My sister moved to Porto last spring for a nursing job.", 9003),
    ]
    return events


def lines(events: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    return [(e["message_id"], orjson.dumps(e)) for e in events]


def coffee_ids() -> list[str]:
    return [f"coffee{day}:m1" for day in range(COFFEE_ORDERS)]


QUESTION_ID = "chat:m1"


def files_holding(folder: Path, words: tuple[str, ...]) -> list[str]:
    """Every file under ``folder`` whose bytes hold one of ``words`` (any case): a byte scan."""
    found = []
    needles = [w.lower().encode() for w in words]
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes().lower()
        found += [f"{path.relative_to(folder)}: {n.decode()}" for n in needles if n in data]
    return found


def stored_bytes(rt: Any) -> bytes:
    """Every document of the indexes (units and contexts, all of ``_source``) and every Redis key and
    value under the prefix, read whole. (Milvus holds no text: ids, tenant, status, days and vectors.)"""
    from opensearchpy.helpers import scan

    indexes = f"{rt.lexical.index},{rt.lexical.contexts}"
    rt.lexical.client.indices.refresh(index=indexes)
    docs = [h["_source"] for h in scan(rt.lexical.client, index=indexes, query={"query": {"match_all": {}}})]
    stored = orjson.dumps(docs)
    redis = rt.buffer.r
    readers = {
        b"hash": lambda k: [b for kv in redis.hgetall(k).items() for b in kv],
        b"zset": lambda k: redis.zrange(k, 0, -1),
        b"set": lambda k: list(redis.smembers(k)),
        b"list": lambda k: redis.lrange(k, 0, -1),
        b"string": lambda k: [redis.get(k) or b""],
    }
    for key in redis.scan_iter(match=f"{rt.settings.redis_key_prefix}*"):
        stored += key + b"\n" + b"\n".join(readers[redis.type(key)](key))
    return stored.lower()
