"""When to try a request again, and how long to wait: 429 and 503 after the service's
``Retry-After`` (seconds or an HTTP date), a connection that failed after an exponential, jittered
backoff. Everything else is the caller's to handle, at once."""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from tenacity import RetryCallState

from simplemem.client.errors import RateLimited, ServiceError, Unavailable

RETRIED_STATUSES = (429, 503)


@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` in all (1: never retry); a ``Retry-After`` longer than ``max_wait`` seconds is
    not waited for: the error is raised with it, for the caller to decide."""

    attempts: int = 4
    first_backoff: float = 0.5
    max_backoff: float = 8.0
    max_wait: float = 60.0

    def pause(self, seconds: float) -> None:
        time.sleep(seconds)

    async def pause_async(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def should_retry(self, error: BaseException) -> bool:
        if isinstance(error, RateLimited | Unavailable) and (
            error.status is None or error.status in RETRIED_STATUSES
        ):
            return error.retry_after is None or error.retry_after <= self.max_wait
        return False

    def wait(self, state: RetryCallState) -> float:
        """The service's ``Retry-After`` when it gave one, else the backoff."""
        error = state.outcome.exception() if state.outcome else None
        if isinstance(error, ServiceError) and error.retry_after is not None:
            return error.retry_after
        step = min(self.max_backoff, self.first_backoff * 2 ** (state.attempt_number - 1))
        return step * random.uniform(0.5, 1.0)  # jittered: clients refused together do not retry together


def retry_after_seconds(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
