"""Where deletion requests go: the forget path, which completes the cascade (not this package).

Services mode publishes each :class:`DeletionRequest` to the deletions topic, keyed by its tenant.
Embedded mode hands it to a :class:`Forgetter` in this process (the one that owns the store): the
forget path's entry once ``service.build`` wires it in, until then a pending log under the store
(``<store>/deletions/pending.jsonl``, ids only) that the forget path can work off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from schemas.stream import DeletionRequest

PENDING_FILE = Path("deletions") / "pending.jsonl"


class Forgetter(Protocol):
    def forget(self, request: DeletionRequest) -> str:
        """Take the request in; returns what became of it (``forgotten`` or ``pending``)."""
        ...


class PendingLog:
    """Accepted requests appended to a file (ids only) until the forget path takes them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def forget(self, request: DeletionRequest) -> str:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, self.path.open("ab") as out:
            out.write(request.model_dump_json().encode() + b"\n")
        return "pending"

    def pending(self) -> list[DeletionRequest]:
        if not self.path.exists():
            return []
        return [DeletionRequest.model_validate_json(line) for line in self.path.read_bytes().splitlines()]


class CallForgetter:
    """A forget function run in this process."""

    def __init__(self, call: Callable[[DeletionRequest], object]) -> None:
        self._call = call

    def forget(self, request: DeletionRequest) -> str:
        self._call(request)
        return "forgotten"


def embedded_forgetter(
    store_dir: Path, forget: Callable[[DeletionRequest], object] | None = None
) -> Forgetter:
    """The forget path's entry when the caller wires one in (``service.build``), else the pending log.

    Wiring: ``forget`` runs in the serving process under the embedded backend's lock, with the
    runtime's stores (``processors.forget.forget(request, Stores(...), tombstones, settings)``).
    """
    if forget is None:
        return PendingLog(store_dir / PENDING_FILE)
    return CallForgetter(forget)
