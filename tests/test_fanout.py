"""A query's store requests side by side: at once with a pool, in order without, never a deadlock."""

from __future__ import annotations

import threading

import pytest

from simplemem.processors.retrieval.fanout import FanOut


def _meeting(barrier: threading.Barrier, value: str) -> str:
    barrier.wait(timeout=5)  # both calls must be waiting at once to get past it
    return value


def test_both_runs_the_two_calls_at_once() -> None:
    fan_out = FanOut(threads=2)
    barrier = threading.Barrier(2)
    try:
        assert fan_out.both(lambda: _meeting(barrier, "a"), lambda: _meeting(barrier, "b")) == ("a", "b")
    finally:
        fan_out.close()


def test_without_a_pool_the_calls_run_in_order_in_the_caller() -> None:
    fan_out = FanOut(threads=1)
    seen: list[tuple[str, str]] = []

    def call(name: str) -> str:
        seen.append((name, threading.current_thread().name))
        return name

    assert fan_out.both(lambda: call("first"), lambda: call("second")) == ("first", "second")
    caller = threading.current_thread().name
    assert seen == [("first", caller), ("second", caller)]


def test_a_pool_thread_runs_nested_calls_in_order_so_one_thread_is_enough() -> None:
    fan_out = FanOut(threads=2)  # one pool thread, taken by the outer second call
    try:
        inner = fan_out.both(lambda: 1, lambda: fan_out.both(lambda: 2, lambda: 3))
        assert inner == (1, (2, 3))
    finally:
        fan_out.close()


def test_later_starts_the_call_at_once_and_waits_for_it_when_asked() -> None:
    fan_out = FanOut(threads=2)
    started = threading.Event()

    def slow() -> int:
        started.set()
        return 42

    try:
        result = fan_out.later(slow)
        assert started.wait(timeout=5)  # running before anyone asked for it
        assert result() == 42
    finally:
        fan_out.close()


def test_later_without_a_pool_runs_once_at_the_first_wait() -> None:
    calls: list[int] = []
    result = FanOut(threads=1).later(lambda: calls.append(1) or len(calls))
    assert calls == []
    assert (result(), result()) == (1, 1)


def test_an_error_in_the_pool_reaches_the_caller() -> None:
    fan_out = FanOut(threads=2)

    def fail() -> None:
        raise ValueError("store down")

    try:
        with pytest.raises(ValueError, match="store down"):
            fan_out.both(lambda: None, fail)
    finally:
        fan_out.close()
