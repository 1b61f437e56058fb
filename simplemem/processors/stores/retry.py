"""Store writes through an outage: retry with backoff; wait as long as the store is unreachable.

An unreachable store (connection refused, timeout, gRPC unavailable) is an outage: the stage keeps
retrying, so its consumer stops taking input and nothing is committed past what is stored. Any other
error (the store answered and refused) is retried ``attempts`` times and then raised, so the caller
dead-letters what it was writing with the reason.

A wait for a store is cancellable: :meth:`StoreRetry.cancel` (a worker shutting down) wakes every
waiting call, which then raises :class:`WriteCancelled`; the batch stays unacknowledged and is
replayed. The outage callback is told which store (by the client library that raised) is blocked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_delay, wait_exponential

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
HTTP_UNAVAILABLE = 503  # a store that answers but cannot serve yet (OpenSearch after a restart)
_UNREACHABLE_PHRASES = ("unavailable", "connect", "timed out", "deadline exceeded", "not ready")


# The client library an exception comes from names the store it was talking to.
_STORE_OF_MODULE = {"opensearchpy": "opensearch", "pymilvus": "milvus", "grpc": "milvus", "redis": "redis"}


class WriteCancelled(BaseException):
    """A store wait ended by shutdown. A BaseException (like ``asyncio.CancelledError``) so that
    the stages' ``except Exception`` (which dead-letters what a store refused) lets it through."""


def store_of(exc: BaseException) -> str:
    """Which store an exception is about, from the client library that raised it."""
    root = type(exc).__module__.split(".")[0]
    return _STORE_OF_MODULE.get(root, root or "unknown")


def is_outage(exc: BaseException) -> bool:
    """Whether ``exc`` says the store cannot be reached (as opposed to refusing the request)."""
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    for cls in type(exc).__mro__:
        if cls.__name__ in _UNREACHABLE_NAMES:
            return True
    if getattr(exc, "status_code", None) == HTTP_UNAVAILABLE:  # OpenSearch recovering its shards
        return True
    if type(exc).__name__ == "MilvusException" or store_of(exc) == "milvus":  # gRPC errors too
        text = str(exc).lower()
        return any(p in text for p in _UNREACHABLE_PHRASES)
    return False


class StoreRetry:
    """Calls a store write until it succeeds, through outages; gives up on other errors after a few tries."""

    def __init__(
        self,
        attempts: int,
        max_wait_seconds: float,
        on_outage: Callable[[str, bool], None] | None = None,
        wait_multiplier: float = 0.2,
    ) -> None:
        self.attempts = attempts
        self.wait = wait_exponential(multiplier=wait_multiplier, max=max_wait_seconds)
        self.on_outage = on_outage or (lambda _store, _blocked: None)
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Wake every waiting call and make it (and any later one) raise :class:`WriteCancelled`."""
        self._cancelled.set()

    def _sleep(self, seconds: float) -> None:
        self._cancelled.wait(seconds)  # a shutdown interrupts the wait

    def _stop(self, state: RetryCallState) -> bool:
        exc = state.outcome.exception() if state.outcome else None
        if exc is not None and is_outage(exc):
            return False
        return state.attempt_number >= self.attempts

    def __call__(self, call: Callable[[], T]) -> T:
        blocked: set[str] = set()  # the stores this call waits for: the gauge counts waiting calls

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome else None
            outage = exc is not None and is_outage(exc)
            if exc is not None and outage and store_of(exc) not in blocked:
                blocked.add(store_of(exc))
                self.on_outage(store_of(exc), True)
            log.warning("store write failed (attempt %d, outage=%s): %s", state.attempt_number, outage, exc)

        try:
            for attempt in Retrying(
                stop=self._stop,
                wait=self.wait,
                sleep=self._sleep,
                before_sleep=before_sleep,
                reraise=True,
            ):
                if self._cancelled.is_set():
                    raise WriteCancelled("shutting down while waiting for a store")
                with attempt:
                    return call()
        finally:
            for store in blocked:
                self.on_outage(store, False)
        raise AssertionError("unreachable")  # pragma: no cover


def connect(make: Callable[[], T], wait_seconds: float) -> T:
    """``make()`` (a store client that connects when built), waiting up to ``wait_seconds`` while the
    store is unreachable: a process started beside its stores (compose, a test, a restart of both)
    must not exit because a store was slow to answer its first call. Any other error raises at once."""

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "waiting for %s (attempt %d): %s", store_of(exc) if exc else "a store", state.attempt_number, exc
        )

    for attempt in Retrying(
        retry=retry_if_exception(is_outage),
        stop=stop_after_delay(wait_seconds),
        wait=wait_exponential(multiplier=0.5, max=5.0),
        before_sleep=before_sleep,
        reraise=True,
    ):
        with attempt:
            return make()
    raise AssertionError("unreachable")  # pragma: no cover
