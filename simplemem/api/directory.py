"""mem0's scopes (``user_id``, ``agent_id``, ``run_id``, ``app_id``) as sessions inside the key's tenant.

A scope is kept as its fields, never joined into one string: the session id is the SHA-256 of the
scope's JSON array (an id every store accepts), and the directory maps it back to the fields, so a
search for one ``user_id`` finds the sessions of every agent and run of that user. Embedded mode
keeps the directory in the keys' SQLite file, services mode in Redis (shared by the replicas).

End users' ids are often e-mail addresses or names, and the directory is durable, so a scope is
stored as each field's SHA-256 (what requests are matched on) and its text scrubbed of PII (what
mem0's answers show); never the ids as given. Forgetting an end user or a tenant removes its scopes.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import orjson
from pydantic import BaseModel, Field

from simplemem.api.keys import KEYS_FILE
from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    import redis

SESSION_PREFIX = "mem0-"
SCOPE_FIELDS = ("user_id", "agent_id", "run_id", "app_id")

Scrub = Callable[[str], str]


def field_digest(field: str, value: str) -> str:
    return hashlib.sha256(orjson.dumps([field, value])).hexdigest()


class Scope(BaseModel):
    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None
    app_id: str | None = None
    digests: dict[str, str] = Field(
        default_factory=dict,
        exclude=True,
        description="a stored scope's fields, hashed (its text is scrubbed)",
    )

    def session_id(self) -> str:
        fields: list[str | None] = [self.user_id, self.agent_id, self.run_id]
        if self.app_id is not None:  # a scope without an app keeps the session it had before apps
            fields.append(self.app_id)
        return SESSION_PREFIX + hashlib.sha256(orjson.dumps(fields)).hexdigest()[:32]

    def digest_of(self, field: str) -> str | None:
        value = getattr(self, field)
        return self.digests.get(field) or (field_digest(field, value) if value is not None else None)

    def matches(self, wanted: Scope) -> bool:
        """Whether this scope lies within ``wanted`` (its unset fields match anything)."""
        return all(
            getattr(wanted, f) is None or self.digest_of(f) == wanted.digest_of(f) for f in SCOPE_FIELDS
        )

    @property
    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in SCOPE_FIELDS)

    def stored(self, scrub: Scrub) -> bytes:
        """What the directory keeps of this scope: each field's digest and its scrubbed text."""
        given = {f: getattr(self, f) for f in SCOPE_FIELDS if getattr(self, f) is not None}
        return orjson.dumps(
            {
                "digests": {f: field_digest(f, v) for f, v in given.items()},
                "shown": {f: scrub(v) for f, v in given.items()},
            }
        )


def load_scope(raw: bytes | str) -> Scope:
    """A stored scope; one written before scopes were hashed holds its ids as given (the directory
    rewrites it on its next read)."""
    data = orjson.loads(raw)
    if "digests" in data:
        return Scope(**data["shown"], digests=data["digests"])
    return Scope(**data)


def _legacy(raw: bytes | str) -> bool:
    return b'"digests"' not in (raw.encode() if isinstance(raw, str) else raw)


class SessionDirectory(Protocol):
    def record(self, tenant_id: str, scope: Scope) -> str: ...

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]: ...

    def forget(self, tenant_id: str, wanted: Scope) -> int:
        """Remove the tenant's scopes within ``wanted`` (every one for an empty scope); how many."""
        ...


class SqliteDirectory:
    def __init__(self, path: Path, scrub: Scrub) -> None:
        private_file(path)
        self._scrub = scrub
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA secure_delete=ON")  # a forgotten or rewritten scope's bytes are zeroed
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS mem0_scopes (tenant_id TEXT NOT NULL, session_id TEXT NOT NULL, "
            "scope TEXT NOT NULL, PRIMARY KEY (tenant_id, session_id))"
        )
        self._lock = threading.Lock()

    def record(self, tenant_id: str, scope: Scope) -> str:
        sid = scope.session_id()
        with self._lock:
            known = self._db.execute(
                "SELECT 1 FROM mem0_scopes WHERE tenant_id=? AND session_id=?", (tenant_id, sid)
            ).fetchone()
        if known is None:
            stored = scope.stored(self._scrub).decode()
            with self._lock:
                self._db.execute(
                    "INSERT OR IGNORE INTO mem0_scopes VALUES (?, ?, ?)", (tenant_id, sid, stored)
                )
        return sid

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]:
        with self._lock:
            rows = self._db.execute(
                "SELECT session_id, scope FROM mem0_scopes WHERE tenant_id=?", (tenant_id,)
            ).fetchall()
        found = {sid: load_scope(raw) for sid, raw in rows}
        for sid, raw in rows:
            if _legacy(raw):
                stored = found[sid].stored(self._scrub).decode()
                with self._lock:
                    self._db.execute(
                        "UPDATE mem0_scopes SET scope=? WHERE tenant_id=? AND session_id=?",
                        (stored, tenant_id, sid),
                    )
        return {sid: s for sid, s in found.items() if s.matches(wanted)}

    def forget(self, tenant_id: str, wanted: Scope) -> int:
        with self._lock:
            rows = self._db.execute(
                "SELECT session_id, scope FROM mem0_scopes WHERE tenant_id=?", (tenant_id,)
            ).fetchall()
            gone = [(tenant_id, sid) for sid, raw in rows if load_scope(raw).matches(wanted)]
            self._db.executemany("DELETE FROM mem0_scopes WHERE tenant_id=? AND session_id=?", gone)
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # no copy left in the write-ahead log
        return len(gone)


class RedisDirectory:
    def __init__(self, client: redis.Redis, prefix: str, scrub: Scrub) -> None:
        self._r = client
        self._keys = RedisKeys(prefix)
        self._scrub = scrub

    def _key(self, tenant_id: str) -> bytes:
        return self._keys.mem0_scopes(tenant_id)

    def record(self, tenant_id: str, scope: Scope) -> str:
        sid = scope.session_id()
        if not self._r.hexists(self._key(tenant_id), sid):
            self._r.hsetnx(self._key(tenant_id), sid, scope.stored(self._scrub))
        return sid

    def sessions(self, tenant_id: str, wanted: Scope) -> dict[str, Scope]:
        raw: dict[bytes, bytes] = self._r.hgetall(self._key(tenant_id))  # type: ignore[assignment]
        found = {k.decode(): load_scope(v) for k, v in raw.items()}
        for key, value in raw.items():
            if _legacy(value):
                self._r.hset(self._key(tenant_id), key, found[key.decode()].stored(self._scrub))
        return {sid: s for sid, s in found.items() if s.matches(wanted)}

    def forget(self, tenant_id: str, wanted: Scope) -> int:
        if wanted.empty:
            return int(self._r.delete(self._key(tenant_id)))
        gone = list(self.sessions(tenant_id, wanted))
        if gone:
            self._r.hdel(self._key(tenant_id), *gone)
        return len(gone)


def open_directory(settings: Settings, store_dir: Path, scrub: Scrub) -> SessionDirectory:
    """The directory of the configured mode; ``scrub`` removes PII from the scopes' shown text."""
    if settings.mode == "services":
        import redis

        return RedisDirectory(redis.Redis.from_url(settings.redis_endpoint), settings.redis_key_prefix, scrub)
    return SqliteDirectory(store_dir / KEYS_FILE, scrub)
