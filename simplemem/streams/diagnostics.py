"""Where a stalled worker waits: every asyncio task's await chain, logged on ``SIGUSR2``.

Faust's own ``SIGUSR1`` dump stops at the first async generator of a chain, and our agents iterate
their batches through async generators (:mod:`simplemem.streams.batching`), so it cannot show where an agent
waits. This walk follows coroutines, async generators (an ``asend`` object refers to its
generator) and plain generators down to the future at the bottom. Only code locations are logged:
no record content.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import signal
import types
from typing import Any

log = logging.getLogger(__name__)

_ASEND_TYPES = ("async_generator_asend", "async_generator_athrow")
MAX_DEPTH = 64  # a chain longer than this is cut (a cycle that the id check did not catch)


def _frame(obj: Any) -> types.FrameType | None:
    for attr in ("cr_frame", "ag_frame", "gi_frame"):
        frame = getattr(obj, attr, None)
        if frame is not None:
            return frame
    return None


def _awaited(obj: Any) -> Any:
    if isinstance(obj, asyncio.Task):  # awaiting another task: go on into its coroutine
        return obj.get_coro()
    for attr in ("cr_await", "ag_await", "gi_yieldfrom"):
        if hasattr(obj, attr):
            return getattr(obj, attr)
    if type(obj).__name__ in _ASEND_TYPES:
        return next((r for r in gc.get_referents(obj) if isinstance(r, types.AsyncGeneratorType)), None)
    if type(obj).__name__ == "FutureIter":  # ``await future`` awaits the future's iterator
        return next((r for r in gc.get_referents(obj) if isinstance(r, asyncio.Future)), None)
    if type(obj).__name__ == "coroutine_wrapper":  # ``coro.__await__()``, as Faust awaits an agent
        return next((r for r in gc.get_referents(obj) if isinstance(r, types.CoroutineType)), None)
    return None


def await_chain(coro: Any) -> list[str]:
    """``file:line function`` of each frame from ``coro`` down to what it waits for."""
    lines: list[str] = []
    obj, seen = coro, set()
    while obj is not None and id(obj) not in seen and len(lines) < MAX_DEPTH:
        seen.add(id(obj))
        frame = _frame(obj)
        if frame is not None:
            lines.append(f"{frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}")
        nxt = _awaited(obj)
        if isinstance(obj, asyncio.Future):
            lines.append(f"waits for {obj!r}")
        obj = nxt
    return lines


def partition_states(consumer: Any) -> str:
    """The partitions Faust's consumer holds paused and active, for a stall report: a partition left
    paused (Faust pauses the active ones while it restores a table) would fetch nothing for good.
    Faust keeps these in private attributes: read defensively, for a log line only."""

    def names(attr: str) -> str:
        tps = getattr(consumer, attr, None) or ()
        return ", ".join(sorted(f"{tp.topic}/{tp.partition}" for tp in tps)) or "none"

    return f"paused: {names('_paused_partitions')}; active: {names('_active_partitions')}"


def dump_tasks() -> None:
    """Log the await chain of every task of the running loop (one log record)."""
    parts = []
    for task in asyncio.all_tasks():
        chain = "\n    ".join(await_chain(task.get_coro()))
        parts.append(f"task {task.get_name()}:\n    {chain}")
    log.warning("await chains of %d tasks:\n%s", len(parts), "\n".join(parts))


def install(loop: asyncio.AbstractEventLoop, signum: int = signal.SIGUSR2) -> None:
    """``kill -USR2 <worker pid>`` logs where each task waits."""
    loop.add_signal_handler(signum, dump_tasks)
