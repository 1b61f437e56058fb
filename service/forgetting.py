"""Where deletion requests go: the forget path, which completes the cascade (not this package).

Services mode publishes each :class:`DeletionRequest` to the deletions topic, keyed by its tenant.
Embedded mode hands it to a :class:`Forgetter` in this process (the one that owns the store): the
forget path's ``processors.forget.forget`` when it is there, else a pending log under the store that
the forget path works off (``<store>/deletions/pending.jsonl``, ids only).
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


def embedded_forgetter(store_dir: Path) -> Forgetter:
    """The forget path's entry if this build has it, else the pending log."""
    try:
        from processors import forget as forget_path  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return PendingLog(store_dir / PENDING_FILE)
    return CallForgetter(forget_path.forget)
