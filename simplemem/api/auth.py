"""Who is calling: a tenant's key (the tenant comes from it, never from the body) or the admin key.

Keys arrive as ``Authorization: Bearer <key>``, ``Authorization: Token <key>`` (mem0's clients) or
``X-API-Key``. A missing or unknown key is 401; a tenant key naming another tenant is 403.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import HTTPException, Request, status

from simplemem.api.keys import KeyStore, authenticate

SCHEMES = ("bearer", "token")


@dataclass(frozen=True)
class Caller:
    tenant_id: str | None  # None for the admin
    key_id: str

    @property
    def admin(self) -> bool:
        return self.tenant_id is None


def presented_key(headers: Mapping[str, str]) -> str | None:
    """The key in the headers (a case-insensitive mapping, as Starlette's)."""
    header = headers.get("authorization")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() in SCHEMES and value.strip():
            return value.strip()
    return headers.get("x-api-key") or None


def identify(request: Request, keys: KeyStore, admin_key: str | None) -> Caller:
    return identify_headers(request.headers, keys, admin_key)


def identify_headers(headers: Mapping[str, str], keys: KeyStore, admin_key: str | None) -> Caller:
    key = presented_key(headers)
    if key is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "an API key is required", headers={"WWW-Authenticate": "Bearer"}
        )
    if admin_key and hmac.compare_digest(key.encode(), admin_key.encode()):
        return Caller(None, "admin")
    record = authenticate(keys, key)
    if record is None:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "unknown or revoked API key", headers={"WWW-Authenticate": "Bearer"}
        )
    return Caller(record.tenant_id, record.key_id)


def tenant_of(caller: Caller, named: str | None = None) -> str:
    """The caller's tenant; 403 for the admin (it has none) or for a request naming another tenant."""
    if caller.tenant_id is None:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "the admin key names no tenant: use a tenant's key")
    if named is not None and named != caller.tenant_id:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this key belongs to another tenant")
    return caller.tenant_id


def require_admin(caller: Caller) -> None:
    if not caller.admin:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "this needs the admin key")
