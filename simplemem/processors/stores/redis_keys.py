"""Every Redis key simplemem writes, in one place: the formats are what stored data is found by, so
they change here or nowhere (a changed byte loses what a deployment holds).

A key is ``<prefix>:<kind>``, then for a tenant or a session its JSON-array byte key
(:mod:`simplemem.schemas.keys`): ids may hold ":", and a raw id followed by more parts would let two
keys of different tenants or kinds coincide. One kind keeps the raw tenant id for the data stored
under it: the migration state, where nothing follows the id (safe alone: one tenant, one key).
"""

from __future__ import annotations

from simplemem.schemas.keys import SessionKey, tenant_key


def quota_identifier(tenant_id: str) -> str:
    """A tenant's identifier within the rate limiter's keys (the limits library builds those)."""
    return tenant_key(tenant_id).decode()


class RedisKeys:
    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._base = prefix.encode() + b":"

    def _of(self, kind: bytes, tenant_id: str) -> bytes:
        return self._base + kind + b":" + tenant_key(tenant_id)

    # --- recent-turn buffer (processors/retrieval/buffer.py) ---
    def buffer_turns(self, tenant_id: str, session_id: str) -> bytes:
        """A session's hash: message id -> turn."""
        return self._buffer(tenant_id, session_id) + b":turns"

    def buffer_order(self, tenant_id: str, session_id: str) -> bytes:
        """A session's sorted set: message id by time (for trimming)."""
        return self._buffer(tenant_id, session_id) + b":order"

    def _buffer(self, tenant_id: str, session_id: str) -> bytes:
        return self._base + b"buf:" + SessionKey(tenant_id, session_id).encode()

    def buffer_sessions(self, tenant_id: str) -> bytes:
        """A tenant's sorted set of live buffered sessions."""
        return self._of(b"buf-sessions", tenant_id)

    # --- tombstone set (processors/stores/tombstones.py) ---
    def forgotten_tenants(self) -> bytes:
        """One sorted set: tenant id -> the cut-off time of its whole-tenant deletion."""
        return self._base + b"forgotten-tenants"

    def forgotten_messages(self, tenant_id: str) -> bytes:
        return self._of(b"forgotten-messages", tenant_id)

    def deletion_records(self, tenant_id: str) -> bytes:
        return self._of(b"forgotten-records", tenant_id)

    # --- ingestion accounting (processors/stores/activity.py) ---
    def activity(self, tenant_id: str) -> bytes:
        """A tenant's hash of counters: accepted, outcomes, PII scrubbed, time-to-memory buckets."""
        return self._of(b"activity", tenant_id)

    def activity_arrivals(self, tenant_id: str) -> bytes:
        """A tenant's sorted set: message id by arrival time, while its turn is undecided."""
        return self._of(b"activity-arrivals", tenant_id)

    # --- lazy migration (processors/lifecycle/migration.py) ---
    def migration(self, tenant_id: str) -> bytes:
        """A tenant's migration state: the raw id, as stored since the start (nothing follows it)."""
        return self._base + b"migration:" + tenant_id.encode()

    def migration_detail(self, tenant_id: str) -> bytes:
        """What the tenant's import did. Once ``migration:<tenant>:detail``, which for tenant ``a``
        was the state key of tenant ``a:detail``; now a kind of its own."""
        return self._of(b"migration-detail", tenant_id)

    # --- the service (api/) ---
    def feedback(self) -> bytes:
        return self._base + b"feedback"

    def api_keys(self) -> bytes:
        """One hash: key id -> key record."""
        return self._base + b"api_keys"

    def api_keys_of(self, tenant_id: str) -> bytes:
        return self._of(b"api_keys_of", tenant_id)

    def mem0_scopes(self, tenant_id: str) -> bytes:
        return self._of(b"mem0_scopes", tenant_id)

    def quota_prefix(self) -> str:
        """The prefix the rate limiter puts before its own keys."""
        return f"{self.prefix}:quota"
