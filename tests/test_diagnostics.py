"""The stall dump follows an agent's await chain through async generators (Faust's stops there),
and the stall report names the partitions the consumer holds paused."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from types import SimpleNamespace

from faust.types import TP

from simplemem.streams.diagnostics import await_chain, partition_states


async def _batches() -> AsyncIterator[int]:
    while True:
        await _store_outage()
        yield 1


async def _store_outage() -> None:
    await asyncio.Event().wait()


async def _agent() -> None:
    async for _ in _batches():
        pass


def _chain_of(coro: Callable[[], Awaitable[None]]) -> list[str]:
    """The await chain of a task running ``coro`` once it waits."""

    async def main() -> list[str]:
        task = asyncio.create_task(coro())  # type: ignore[arg-type]
        await asyncio.sleep(0.01)
        try:
            return await_chain(task.get_coro())
        finally:
            task.cancel()

    return asyncio.run(main())


def test_the_chain_reaches_the_frame_inside_the_async_generator() -> None:
    chain = _chain_of(_agent)
    names = [line.rsplit(" ", 1)[-1] for line in chain if not line.startswith("waits for")]
    assert names[:3] == ["_agent", "_batches", "_store_outage"]
    assert chain[-1].startswith("waits for <Future pending")


class _Actor:
    """Awaited through ``__await__``, as Faust awaits an agent's coroutine."""

    def __init__(self) -> None:
        self.coro = _agent()

    def __await__(self):  # type: ignore[no-untyped-def]
        return self.coro.__await__()


def test_the_chain_goes_on_through_an_object_awaited_by_its_coroutine() -> None:
    async def run_actor() -> None:
        await _Actor()

    names = [line.rsplit(" ", 1)[-1] for line in _chain_of(run_actor) if not line.startswith("waits for")]
    assert names[:4] == ["run_actor", "_agent", "_batches", "_store_outage"]


def test_the_stall_report_names_the_paused_and_active_partitions() -> None:
    consumer = SimpleNamespace(
        _paused_partitions={TP("turns", 1)}, _active_partitions={TP("turns", 1), TP("scrubbed", 0)}
    )
    assert partition_states(consumer) == "paused: turns/1; active: scrubbed/0, turns/1"
    assert partition_states(object()) == "paused: none; active: none"
