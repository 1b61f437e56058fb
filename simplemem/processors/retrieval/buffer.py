"""Recent-turn lookaside buffer: the last N scrubbed turns per (tenant, session), with a TTL.

A fact stated a moment ago is answerable before its window closes and is indexed: retrieval merges
buffer hits with long-term hits. Once a turn's window is decided (indexed or filtered) the pipeline
discards it, so the buffer holds only what the stores cannot answer yet and stays small. Redis in
services mode, a process-local dict in embedded mode.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import orjson
from cachetools import TTLCache

from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.window import BufferedTurn


class RecentTurnBuffer(Protocol):
    def push(self, turns: Sequence[BufferedTurn]) -> None: ...

    def recent(self, tenant_id: str) -> list[BufferedTurn]: ...

    def discard(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> None: ...

    def forget(self, tenant_id: str, message_ids: Sequence[str] | None) -> int:
        """Remove these turns of the tenant, whichever session holds them (None: every turn and
        session of the tenant); returns how many turns were removed."""
        ...

    def close(self) -> None: ...


class InMemoryBuffer:
    """One process's buffer: per session its last ``turns`` turns, the session dropped ``ttl_seconds``
    after its last turn (a TTL cache, also bounded in sessions: a tenant that never asks again does
    not keep its turns)."""

    def __init__(
        self, turns: int, ttl_seconds: int, max_sessions: int, clock: Callable[[], float] = time.time
    ) -> None:
        self.turns = turns
        self._sessions: TTLCache[SessionKey, dict[str, BufferedTurn]] = TTLCache(
            maxsize=max_sessions, ttl=ttl_seconds, timer=clock
        )
        self._lock = threading.Lock()

    def push(self, turns: Sequence[BufferedTurn]) -> None:
        with self._lock:
            for t in turns:
                key = SessionKey(t.tenant_id, t.session_id)
                recent = dict(self._sessions.get(key, {}))
                recent[t.message_id] = t
                while len(recent) > self.turns:
                    del recent[next(iter(recent))]
                self._sessions[key] = recent  # set again: the session's TTL starts anew

    def recent(self, tenant_id: str) -> list[BufferedTurn]:
        with self._lock:
            self._sessions.expire()
            turns = [
                t
                for key, recent in self._sessions.items()
                if key.tenant_id == tenant_id
                for t in recent.values()
            ]
        return [t for t in turns if t.tenant_id == tenant_id]  # checked again where it is read

    def discard(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> None:
        with self._lock:
            recent = self._sessions.get(SessionKey(tenant_id, session_id))
            if recent is not None:
                for mid in message_ids:
                    recent.pop(mid, None)

    def forget(self, tenant_id: str, message_ids: Sequence[str] | None) -> int:
        removed = 0
        with self._lock:
            for key in [k for k in self._sessions if k.tenant_id == tenant_id]:
                recent = self._sessions[key]
                if message_ids is None:
                    removed += len(recent)
                    del self._sessions[key]
                    continue
                for mid in message_ids:
                    removed += recent.pop(mid, None) is not None
        return removed

    def __len__(self) -> int:
        """Sessions held (expired ones included until the next write or read)."""
        return len(self._sessions)

    def close(self) -> None:
        pass


class RedisBuffer:
    """Per session a hash (message id -> turn) and a sorted set (message id by time, for trimming);
    per tenant a sorted set of live sessions. Every key expires after the TTL."""

    def __init__(self, url: str, turns: int, ttl_seconds: int, prefix: str = "simplemem") -> None:
        import redis

        self.r = redis.Redis.from_url(url)
        self.turns = turns
        self.ttl = ttl_seconds
        self.prefix = prefix
        self.keys = RedisKeys(prefix)

    def _keys(self, tenant_id: str, session_id: str) -> tuple[bytes, bytes]:
        return self.keys.buffer_turns(tenant_id, session_id), self.keys.buffer_order(tenant_id, session_id)

    def _index_key(self, tenant_id: str) -> bytes:
        return self.keys.buffer_sessions(tenant_id)

    def push(self, turns: Sequence[BufferedTurn]) -> None:
        if not turns:
            return
        now = time.time()
        pipe = self.r.pipeline(transaction=False)
        sessions = set()
        for t in turns:
            turns_key, order_key = self._keys(t.tenant_id, t.session_id)
            pipe.hset(turns_key, t.message_id, orjson.dumps(t.model_dump(mode="json")))
            pipe.zadd(order_key, {t.message_id: t.ts.timestamp()})
            pipe.zadd(self._index_key(t.tenant_id), {t.session_id: now})
            sessions.add((t.tenant_id, t.session_id))
        pipe.execute()
        for tenant_id, session_id in sessions:
            turns_key, order_key = self._keys(tenant_id, session_id)
            old = self.r.zrange(order_key, 0, -(self.turns + 1))
            pipe = self.r.pipeline(transaction=False)
            if old:
                pipe.zrem(order_key, *old)
                pipe.hdel(turns_key, *old)
            for key in (turns_key, order_key, self._index_key(tenant_id)):
                pipe.expire(key, self.ttl)
            pipe.zremrangebyscore(self._index_key(tenant_id), "-inf", now - self.ttl)
            pipe.execute()

    def recent(self, tenant_id: str) -> list[BufferedTurn]:
        # a read only (one round trip): sessions silent past the TTL are trimmed by the next push
        live = self.r.zrangebyscore(self._index_key(tenant_id), time.time() - self.ttl, "+inf")
        sessions = [s.decode() if isinstance(s, bytes) else str(s) for s in live]
        if not sessions:
            return []
        pipe = self.r.pipeline(transaction=False)
        for sid in sessions:
            pipe.hvals(self._keys(tenant_id, sid)[0])
        turns = [BufferedTurn.model_validate(orjson.loads(raw)) for rows in pipe.execute() for raw in rows]
        return [t for t in turns if t.tenant_id == tenant_id]  # checked again where it is read

    def discard(self, tenant_id: str, session_id: str, message_ids: Sequence[str]) -> None:
        if not message_ids:
            return
        turns_key, order_key = self._keys(tenant_id, session_id)
        pipe = self.r.pipeline(transaction=False)
        pipe.hdel(turns_key, *message_ids)
        pipe.zrem(order_key, *message_ids)
        pipe.execute()

    def forget(self, tenant_id: str, message_ids: Sequence[str] | None) -> int:
        """Every session the tenant's index lists (a session's keys live no longer than its entry
        there: both expire after the TTL)."""
        index = self._index_key(tenant_id)
        sessions = [s.decode() if isinstance(s, bytes) else str(s) for s in self.r.zrange(index, 0, -1)]
        removed = 0
        for sid in sessions:
            turns_key, order_key = self._keys(tenant_id, sid)
            if message_ids is None:
                removed += int(self.r.hlen(turns_key))
                self.r.delete(turns_key, order_key)
                continue
            pipe = self.r.pipeline(transaction=False)
            pipe.hdel(turns_key, *message_ids)
            pipe.zrem(order_key, *message_ids)
            removed += int(pipe.execute()[0])
        if message_ids is None:
            self.r.delete(index)
        return removed

    def close(self) -> None:
        self.r.close()
