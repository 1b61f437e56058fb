"""Recent-turn lookaside buffer: the last N scrubbed turns per (tenant, session), with a TTL.

A fact stated a moment ago is answerable before its window closes and is indexed: retrieval merges
buffer hits with long-term hits. Redis in services mode, a process-local dict in embedded mode.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import orjson

from schemas.window import BufferedTurn


class RecentTurnBuffer(Protocol):
    def push(self, turns: Sequence[BufferedTurn]) -> None: ...

    def recent(self, tenant_id: str) -> list[BufferedTurn]: ...

    def close(self) -> None: ...


class InMemoryBuffer:
    def __init__(self, turns: int, ttl_seconds: int, clock: Callable[[], float] = time.time) -> None:
        self.turns = turns
        self.ttl = ttl_seconds
        self.clock = clock
        self._sessions: dict[str, dict[str, tuple[float, deque[BufferedTurn]]]] = {}
        self._lock = threading.Lock()

    def push(self, turns: Sequence[BufferedTurn]) -> None:
        now = self.clock()
        with self._lock:
            for t in turns:
                sessions = self._sessions.setdefault(t.tenant_id, {})
                _, queue = sessions.get(t.session_id, (now, deque(maxlen=self.turns)))
                queue.append(t)
                sessions[t.session_id] = (now, queue)

    def recent(self, tenant_id: str) -> list[BufferedTurn]:
        now = self.clock()
        with self._lock:
            sessions = self._sessions.get(tenant_id, {})
            for sid in [s for s, (seen, _) in sessions.items() if now - seen > self.ttl]:
                del sessions[sid]
            return [t for _, queue in sessions.values() for t in queue]

    def close(self) -> None:
        pass


class RedisBuffer:
    """One list per session (LPUSH + LTRIM + EXPIRE) and a per-tenant sorted set of live sessions."""

    def __init__(self, url: str, turns: int, ttl_seconds: int, prefix: str = "simplemem") -> None:
        import redis

        self.r = redis.Redis.from_url(url)
        self.turns = turns
        self.ttl = ttl_seconds
        self.prefix = prefix

    def _session_key(self, tenant_id: str, session_id: str) -> str:
        return f"{self.prefix}:buf:{tenant_id}:{session_id}"

    def _index_key(self, tenant_id: str) -> str:
        return f"{self.prefix}:buf-sessions:{tenant_id}"

    def push(self, turns: Sequence[BufferedTurn]) -> None:
        if not turns:
            return
        now = time.time()
        pipe = self.r.pipeline(transaction=False)
        for t in turns:
            key = self._session_key(t.tenant_id, t.session_id)
            pipe.lpush(key, orjson.dumps(t.model_dump(mode="json")))
            pipe.ltrim(key, 0, self.turns - 1)
            pipe.expire(key, self.ttl)
            pipe.zadd(self._index_key(t.tenant_id), {t.session_id: now})
            pipe.expire(self._index_key(t.tenant_id), self.ttl)
        pipe.execute()

    def recent(self, tenant_id: str) -> list[BufferedTurn]:
        index = self._index_key(tenant_id)
        now = time.time()
        self.r.zremrangebyscore(index, "-inf", now - self.ttl)
        sessions = [s.decode() if isinstance(s, bytes) else str(s) for s in self.r.zrange(index, 0, -1)]
        if not sessions:
            return []
        pipe = self.r.pipeline(transaction=False)
        for sid in sessions:
            pipe.lrange(self._session_key(tenant_id, sid), 0, -1)
        return [BufferedTurn.model_validate(orjson.loads(raw)) for rows in pipe.execute() for raw in rows]

    def close(self) -> None:
        self.r.close()
