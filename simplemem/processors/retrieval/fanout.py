"""A query's independent store requests side by side (services mode).

A services-mode query makes about seven requests to OpenSearch and Milvus, each a few milliseconds
of waiting on a socket; one after the other they were most of its latency. Requests that do not need
each other's answer (the vector search and the BM25 search; the person check and the candidates'
documents) run at once on a small shared pool, while the calling thread runs the first itself.

A pool thread never waits for work queued after its own: a call made from one runs its parts in
order. So a pool as small as one thread cannot deadlock, however many queries share it. With ``threads`` 1 (embedded
mode: SQLite answers in microseconds, under one lock) everything runs in order in the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import TypeVar

A = TypeVar("A")
B = TypeVar("B")


class FanOut:
    def __init__(self, threads: int = 1) -> None:
        self._pool = (
            ThreadPoolExecutor(threads - 1, thread_name_prefix="simplemem-query") if threads > 1 else None
        )
        self._inside = threading.local()

    @property
    def parallel(self) -> bool:
        """Whether calls run at once (a round trip saved is worth more than a few more rows read)."""
        return self._pool is not None

    def both(self, first: Callable[[], A], second: Callable[[], B]) -> tuple[A, B]:
        """``first()`` and ``second()``, the second on the pool while this thread runs the first."""
        if self._pool is None or getattr(self._inside, "pool_thread", False):
            return first(), second()
        future = self._pool.submit(self._in_pool, second)
        return first(), future.result()

    def later(self, call: Callable[[], A]) -> Callable[[], A]:
        """``call`` started now on the pool; the function returned waits for its result. Without a
        pool it runs at the first wait. (A pool thread may wait for it: it was queued before any
        task that can wait for it, and the queue is first in, first out.)"""
        if self._pool is None or getattr(self._inside, "pool_thread", False):
            return cache(call)
        future = self._pool.submit(self._in_pool, call)
        return future.result

    def _in_pool(self, call: Callable[[], B]) -> B:
        self._inside.pool_thread = True
        return call()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
