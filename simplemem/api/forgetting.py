"""Where deletion requests go: the forget path (``simplemem.processors.lifecycle.forget``).

Services mode publishes each :class:`DeletionRequest` to the deletions topic, keyed by its tenant, for
the workers' forget agent. Embedded mode runs the cascade in this process (the one that owns the
store), under the embedded backend's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from simplemem.schemas.stream import DeletionRequest


class Forgetter(Protocol):
    def forget(self, request: DeletionRequest) -> str:
        """Carry the request out, or hand it on; returns what became of it (``forgotten``, ``queued``)."""
        ...


class CallForgetter:
    """A forget function run in this process (``Runtime.forget`` in embedded mode)."""

    def __init__(self, call: Callable[[DeletionRequest], object]) -> None:
        self._call = call

    def forget(self, request: DeletionRequest) -> str:
        self._call(request)
        return "forgotten"
