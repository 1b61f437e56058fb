"""Store writes wait through an outage and give up on a refusal."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
import redis
from opensearchpy.exceptions import ConnectionError as OpenSearchConnectionError
from pymilvus import MilvusException

from simplemem.processors.stores.retry import StoreRetry, WriteCancelled, connect, is_outage


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
    states: list[tuple[str, bool]] = []
    retry = StoreRetry(
        attempts=2, max_wait_seconds=0.01, on_outage=lambda *s: states.append(s), wait_multiplier=0
    )
    call = Flaky(failures=6, error=redis.exceptions.ConnectionError("connection refused"))
    assert retry(call) == "stored"
    assert call.calls == 7
    assert states == [("redis", True), ("redis", False)], "one report per store and call"


def test_the_outage_gauge_is_per_store_and_not_reset_by_other_writes() -> None:
    gauge: Counter[str] = Counter()
    retry = StoreRetry(
        attempts=2,
        max_wait_seconds=0.01,
        on_outage=lambda store, down: gauge.update({store: 1 if down else -1}),
        wait_multiplier=0,
    )
    milvus_back = threading.Event()
    snapshots: list[Counter[str]] = []

    def milvus_write() -> str:
        if not milvus_back.is_set():
            raise MilvusException(code=2, message="Fail connecting to server on localhost:19530")
        return "stored"

    blocked = threading.Thread(target=retry, args=(milvus_write,))
    blocked.start()
    time.sleep(0.1)
    assert retry(Flaky(failures=1, error=OpenSearchConnectionError("N/A", "refused", None))) == "stored"
    assert retry(lambda: "stored") == "stored"
    snapshots.append(+gauge)
    milvus_back.set()
    blocked.join(timeout=5)
    assert snapshots == [Counter({"milvus": 1})], "OpenSearch recovered; Milvus is still waited for"
    assert +gauge == Counter()


def test_a_shutdown_wakes_a_write_waiting_for_a_store() -> None:
    retry = StoreRetry(attempts=2, max_wait_seconds=30, wait_multiplier=30)
    call = Flaky(failures=10**9, error=ConnectionError("connection refused"))
    raised: list[BaseException] = []

    def waiting() -> None:
        try:
            retry(call)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=waiting)
    thread.start()
    time.sleep(0.2)
    retry.cancel()
    thread.join(timeout=5)
    assert not thread.is_alive(), "the write stopped waiting"
    assert len(raised) == 1 and isinstance(raised[0], WriteCancelled)


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


def test_a_grpc_error_of_an_unreachable_milvus_is_an_outage() -> None:
    import grpc

    class Unavailable(grpc.RpcError):
        def __str__(self) -> str:
            return "<_InactiveRpcError: StatusCode.UNAVAILABLE failed to connect to all addresses>"

    Unavailable.__module__ = "grpc._channel"
    assert is_outage(Unavailable())


def test_a_store_answering_503_is_an_outage_not_a_refusal() -> None:
    """OpenSearch answers 503 while it recovers its shards after a restart: the turn must wait, not be
    dead-lettered (the real outage test saw it once)."""
    from opensearchpy.exceptions import TransportError

    from simplemem.processors.stores.retry import is_outage

    assert is_outage(TransportError(503, "search_phase_execution_exception", {}))
    assert not is_outage(TransportError(400, "mapper_parsing_exception", {}))


def test_a_store_slow_to_answer_at_start_is_waited_for() -> None:
    """The query service exited at start when Milvus missed its 10 s connect deadline under load."""
    unreachable = MilvusException(message="Fail connecting to server on 127.0.0.1:19530, server unavailable")
    make = Flaky(failures=2, error=unreachable)
    assert connect(make, wait_seconds=30) == "stored"
    assert make.calls == 3


def test_a_start_gives_up_after_its_wait_and_at_once_on_a_refusal() -> None:
    gone = Flaky(failures=10**6, error=OpenSearchConnectionError("N/A", "refused", Exception()))
    with pytest.raises(OpenSearchConnectionError):
        connect(gone, wait_seconds=0)
    refused = Flaky(failures=1, error=ValueError("bad index mapping"))
    with pytest.raises(ValueError):
        connect(refused, wait_seconds=30)
    assert refused.calls == 1
