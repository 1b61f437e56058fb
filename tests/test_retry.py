"""Store writes wait through an outage and give up on a refusal."""

from __future__ import annotations

import pytest

from processors.retry import StoreRetry, is_outage


class Flaky:
    def __init__(self, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return "stored"


def test_an_outage_is_waited_out_beyond_the_attempt_limit() -> None:
    states: list[bool] = []
    retry = StoreRetry(attempts=2, max_wait_seconds=0.01, on_outage=states.append, wait_multiplier=0)
    call = Flaky(failures=6, error=ConnectionError("connection refused"))
    assert retry(call) == "stored"
    assert call.calls == 7
    assert states[0] is True and states[-1] is False


def test_a_refusal_is_raised_after_the_attempts() -> None:
    retry = StoreRetry(attempts=3, max_wait_seconds=0.01, wait_multiplier=0)
    call = Flaky(failures=10, error=ValueError("mapping conflict"))
    with pytest.raises(ValueError, match="mapping conflict"):
        retry(call)
    assert call.calls == 3


def test_outage_classification_covers_the_store_clients() -> None:
    import redis
    from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
    from pymilvus.exceptions import MilvusException

    assert is_outage(redis.exceptions.ConnectionError("refused"))
    assert is_outage(OpenSearchConnectionError("N/A", "refused", None))
    assert is_outage(MilvusException(code=2, message="Fail connecting to server on localhost:19530"))
    assert not is_outage(MilvusException(code=1100, message="invalid parameter"))
    assert not is_outage(ValueError("bad"))
