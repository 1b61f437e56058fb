"""Store writes through an outage: retry with backoff; wait as long as the store is unreachable.

An unreachable store (connection refused, timeout, gRPC unavailable) is an outage: the stage keeps
retrying, so its consumer stops taking input and nothing is committed past what is stored. Any other
error (the store answered and refused) is retried ``attempts`` times and then raised, so the caller
dead-letters what it was writing with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryCallState, Retrying, wait_exponential

log = logging.getLogger(__name__)

T = TypeVar("T")

# Exception class names (by name: the store clients need not be importable) that mean "not reachable".
_UNREACHABLE_NAMES = {
    "ConnectionError",  # opensearch-py, redis, requests
    "ConnectionTimeout",  # opensearch-py
    "TimeoutError",  # redis
    "BusyLoadingError",  # redis still loading its data
    "MilvusUnavailableException",
}
_UNREACHABLE_PHRASES = ("unavailable", "connect", "timed out", "deadline exceeded", "not ready")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the store cannot be reached (as opposed to refusing the request)."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    for cls in type(exc).__mro__:
        if cls.__name__ in _UNREACHABLE_NAMES:
            return True
    if type(exc).__name__ == "MilvusException":
        text = str(exc).lower()
        return any(p in text for p in _UNREACHABLE_PHRASES)
    return False


class StoreRetry:
    """Calls a store write until it succeeds, through outages; gives up on other errors after a few tries."""

    def __init__(
        self,
        attempts: int,
        max_wait_seconds: float,
        on_outage: Callable[[bool], None] | None = None,
        wait_multiplier: float = 0.2,
    ) -> None:
        self.attempts = attempts
        self.wait = wait_exponential(multiplier=wait_multiplier, max=max_wait_seconds)
        self.on_outage = on_outage or (lambda _blocked: None)

    def _stop(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if exc is not None and is_outage(exc):
            return False
        return state.attempt_number >= self.attempts

    def _before_sleep(self, state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        outage = exc is not None and is_outage(exc)
        if outage:
            self.on_outage(True)
        log.warning("store write failed (attempt %d, outage=%s): %s", state.attempt_number, outage, exc)

    def __call__(self, call: Callable[[], T]) -> T:
        try:
            for attempt in Retrying(
                stop=self._stop, wait=self.wait, before_sleep=self._before_sleep, reraise=True
            ):
                with attempt:
                    return call()
        finally:
            self.on_outage(False)
        raise AssertionError("unreachable")  # pragma: no cover
