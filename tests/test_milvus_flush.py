"""When the vector store seals segments: Milvus Lite after writes (its searches need it); a server only
when forgetting expunges, since a server's flush waits until segments are persisted (minutes under load,
which held the memorize thread in bench.faults)."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from processors.stores.milvus_vectors import MilvusVectorStore


class Calls:
    def __init__(self) -> None:
        self.made: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self.made.append(name)


def store(server: bool) -> tuple[MilvusVectorStore, Calls]:
    calls = Calls()
    s = MilvusVectorStore.__new__(MilvusVectorStore)  # no connection: only the sealing decision
    s.client, s.server, s.collection, s._dirty = calls, server, "c", True  # type: ignore[assignment]
    s._lock = contextlib.nullcontext() if server else threading.Lock()
    return s, calls


def test_a_server_is_not_asked_to_flush_after_writes() -> None:
    s, calls = store(server=True)
    s.flush()
    assert calls.made == []


def test_forgetting_seals_and_compacts_on_a_server() -> None:
    s, calls = store(server=True)
    s.expunge()
    assert calls.made == ["flush", "compact"]


def test_milvus_lite_seals_after_writes() -> None:
    s, calls = store(server=False)
    s.flush()
    assert calls.made == ["flush"]
