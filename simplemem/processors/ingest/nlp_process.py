"""The NLP half of ingestion (spaCy, Presidio) in a child process of its own, for batch runs.

On a thread, spaCy and Presidio (Python most of their time) share the interpreter lock with the
writer, which windows, decomposes and indexes: one of them waits whenever the other runs, and a
batch run keeps less than two cores busy while MiniLM waits for its next batch. A child process has
its own lock. It costs a second copy of spaCy's model in memory and a few seconds to start, in
parallel with MiniLM loading in the parent; a query process never starts one.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait

from simplemem.processors.ingest.analysis import NlpPreparer
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.window import AnalyzedMessage

# The child's preparer, built once by the pool's initializer (one per child process).
_preparer: NlpPreparer | None = None


def _start_child(build: Callable[[], NlpPreparer]) -> None:
    """Build the preparer in the child. Ctrl-C goes to the whole process group: the parent stops the
    run and shuts the pool down, the child has nothing of its own to say about it."""
    global _preparer
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, name="parent-watch", daemon=True).start()
    _preparer = build()


def _exit_with_parent() -> None:
    """A parent killed outright (SIGKILL, out of memory) shuts nothing down, and the child, holding
    both ends of its own task queue, would wait for work forever with spaCy in memory: it leaves
    as soon as the parent is gone."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        wait([parent.sentinel])
        os._exit(0)


def _prepare(events: list[ChatEvent]) -> list[AnalyzedMessage]:
    if _preparer is None:  # the initializer always runs first; this keeps the type checker honest
        raise RuntimeError("the NLP child process has no preparer")
    return _preparer.prepare(events)


class ProcessPreparer:
    """Runs :class:`NlpPreparer` in one child process. ``build`` makes the preparer there: it must be
    picklable (a module-level function, or a :func:`functools.partial` of one and the settings).

    Batches are prepared in the order they are submitted. A child that dies (killed, out of memory)
    fails the batches it held, which the pipeline then accounts message by message; the next
    submission starts a new child."""

    def __init__(self, build: Callable[[], NlpPreparer]) -> None:
        self._build = build
        self._pool = self._start()

    def _start(self) -> ProcessPoolExecutor:
        # spawn, not fork: the parent has threads (the writer, ONNX Runtime's), and a forked child
        # would inherit their locks in whatever state they were.
        return ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_child,
            initargs=(self._build,),
        )

    def submit(self, events: list[ChatEvent]) -> Future[list[AnalyzedMessage]]:
        try:
            return self._pool.submit(_prepare, events)
        except BrokenProcessPool:
            self._pool.shutdown(wait=False)
            self._pool = self._start()
            return self._pool.submit(_prepare, events)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
