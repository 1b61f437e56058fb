"""Identifiers: what a tenant, session or message id may contain, and the one key of a session.

Ids stay structured. A session is the pair (tenant_id, session_id), never a delimited string: any
delimiter is also a character some frontend puts in its ids, and then tenant ``a|b`` session ``c``
and tenant ``a`` session ``b|c`` would share one key. Every byte key (Kafka record keys, the
sessions table, Redis) is the JSON array of the parts, an encoding that cannot collide.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Annotated, NamedTuple

import orjson
from pydantic import AfterValidator, Field

# Letters and digits of any script, and the separators frontends use in their ids (ULIDs, Slack
# timestamps, "user:42", "golden/2026-01-05"). No whitespace, control characters, quotes or
# backslashes: ids reach store expressions, file names and terminals.
_ID = re.compile(r"[\w.:/@|+=#~-]+")
# A tenant id also names files (lazy migration reads <tenant_id>.jsonl): no "/", and it starts with
# a letter, digit or "_" (so never "." or ".." or an option-like "-x").
_TENANT_ID = re.compile(r"\w[\w.:@|+=#~-]*")

MAX_ID_CHARS = 256  # the longest id any store field is made for (Settings.max_id_chars may lower it)

ID_RULE = "letters, digits and . : / @ | + = # ~ - _ only (no spaces or control characters)"
TENANT_RULE = "letters, digits and . : @ | + = # ~ - _ only, starting with a letter, digit or _"


def id_problem(value: str, *, tenant: bool = False) -> str | None:
    """Why ``value`` is not an acceptable id, or None if it is."""
    if len(value) > MAX_ID_CHARS:
        return f"over {MAX_ID_CHARS} characters"
    pattern, rule = (_TENANT_ID, TENANT_RULE) if tenant else (_ID, ID_RULE)
    if pattern.fullmatch(value) is None:
        return f"must contain {rule}"
    return None


def has_control_characters(value: str) -> bool:
    """Whether ``value`` holds a C0 control character or DEL (names and ids reach terminals and
    store expressions)."""
    return any(ord(c) < 32 or ord(c) == 127 for c in value)


def check_id(value: str, *, tenant: bool = False) -> str:
    """``value`` if it is an acceptable id; raises ``ValueError`` with the rule otherwise."""
    problem = id_problem(value, tenant=tenant)
    if problem is not None:
        raise ValueError(problem)
    return value


# What the schemas document: Python's ``\w`` (letters and digits of any script) is ``\p{L}\p{N}_``
# in a JSON Schema, where ``\w`` means ASCII.
ID_PATTERN = r"^[\p{L}\p{N}_.:/@|+=#~-]+$"
TENANT_PATTERN = r"^[\p{L}\p{N}_][\p{L}\p{N}_.:@|+=#~-]*$"

TenantId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ID_CHARS, json_schema_extra={"pattern": TENANT_PATTERN}),
    AfterValidator(partial(check_id, tenant=True)),
]
"""A tenant id as every model field takes it."""
ItemId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_ID_CHARS, json_schema_extra={"pattern": ID_PATTERN}),
    AfterValidator(check_id),
]
"""A session or message id as every model field takes it."""


class SessionKey(NamedTuple):
    """A session: its tenant and its id within the tenant (a dict key as it is)."""

    tenant_id: str
    session_id: str

    def encode(self) -> bytes:
        """The byte key of the session (Kafka keys, the sessions table, Redis)."""
        return orjson.dumps([self.tenant_id, self.session_id])

    @classmethod
    def decode(cls, raw: bytes) -> SessionKey:
        """The inverse of :meth:`encode`; raises ``ValueError`` for anything else."""
        parts = orjson.loads(raw)
        if not (isinstance(parts, list) and len(parts) == 2 and all(isinstance(p, str) for p in parts)):
            raise ValueError(f"not a session key: {raw[:80]!r}")
        return cls(parts[0], parts[1])


def message_key(tenant_id: str, message_id: str) -> bytes:
    """The byte key of one message of a tenant (the compacted outcomes topic, dead letters)."""
    return orjson.dumps([tenant_id, message_id])


def turn_key(tenant_id: str, message_id: str) -> bytes:
    """The byte key of one turn on the compacted scrubbed topic: an object, so that it can never equal
    a session's key (an array) on the same topic, whatever the ids are."""
    return orjson.dumps({"tenant_id": tenant_id, "message_id": message_id})


def tenant_key(tenant_id: str) -> bytes:
    """The byte form of a tenant id alone, for keys that are per tenant (Redis session index)."""
    return orjson.dumps([tenant_id])
