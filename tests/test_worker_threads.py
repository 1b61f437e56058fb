"""Which thread a worker's stages run on: a consolidation in progress holds neither indexing nor the
event loop, and forgetting waits for it. The runtime is a stand-in (no stores): what is tested is
the worker's scheduling, not the stages."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from simplemem.processors.ingest.streaming import MemoryResult
from simplemem.processors.lifecycle.consolidate import ConsolidationRun
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ConsolidationAction, ConsolidationDecision, DeletionRequest
from simplemem.streams.lifecycle_steps import ConsolidateStep, ForgetStep
from simplemem.streams.runner import Output
from simplemem.streams.worker import MemorizeStep, SessionTable, Worker

WAIT = 5.0  # seconds: far longer than any of these steps takes when it is not blocked


class BlockedConsolidation:
    """A runtime whose consolidation runs until released; forgetting is recorded."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.release = threading.Event()
        self.forgotten: list[str] = []
        self.events: list[str] = []

    def consolidate(self, tenant: str, *, apply: bool = True) -> ConsolidationRun:
        self.events.append(f"plan {tenant}" if not apply else f"consolidate {tenant}")
        self.started.set()
        self.release.wait(WAIT * 4)
        return ConsolidationRun(decisions=[decision(tenant)])

    def apply_consolidation(self, tenant: str, run: ConsolidationRun) -> None:
        self.events.append(f"apply {tenant}")

    def forget(self, request: DeletionRequest) -> Any:
        self.forgotten.append(request.tenant_id)
        return None


def decision(tenant: str) -> ConsolidationDecision:
    return ConsolidationDecision(
        tenant_id=tenant,
        action=ConsolidationAction.CREATED,
        abstract_id="a",
        member_ids=[],
        source_ids=[],
        decided_at=datetime.now(UTC),
    )


class EmptyMemoryStage:
    def run(self, records: Any, states: Any, write: Any) -> MemoryResult:
        return MemoryResult(states=dict(states))


def blocked_worker() -> tuple[Worker, BlockedConsolidation]:
    worker = Worker(Settings())
    runtime = BlockedConsolidation()
    worker.__dict__["runtime"] = runtime  # the cached properties, filled in before first use
    worker.__dict__["turn_memorizer"] = EmptyMemoryStage()
    return worker, runtime


def consolidate_step(worker: Worker, runtime: BlockedConsolidation, fail: bool = False) -> ConsolidateStep:
    async def deliver(records: Sequence[Output]) -> None:
        runtime.events.append(f"deliver {len(records)}")
        if fail:
            raise RuntimeError("the broker refused the batch")

    return ConsolidateStep(worker, deliver)


def test_indexing_goes_on_while_a_consolidation_runs() -> None:
    asyncio.run(_indexing_during_consolidation())


async def _indexing_during_consolidation() -> None:
    worker, runtime = blocked_worker()
    consolidation = asyncio.ensure_future(consolidate_step(worker, runtime).finish(["acme"]))
    try:
        assert await asyncio.to_thread(runtime.started.wait, WAIT)
        memorize = MemorizeStep(worker, SessionTable({}))
        handled = await asyncio.wait_for(memorize.finish([]), WAIT)  # a batch on the memorize thread
        assert handled.outputs == []
        assert not consolidation.done()
    finally:
        runtime.release.set()
        await consolidation
        worker.shutdown()


def test_forgetting_waits_for_the_consolidation_in_progress() -> None:
    asyncio.run(_forgetting_during_consolidation())


async def _forgetting_during_consolidation() -> None:
    worker, runtime = blocked_worker()
    consolidation = asyncio.ensure_future(consolidate_step(worker, runtime).finish(["acme"]))
    request = DeletionRequest(tenant_id="acme", whole_tenant=True, requested_at=datetime.now(UTC))
    try:
        assert await asyncio.to_thread(runtime.started.wait, WAIT)
        forgetting = asyncio.ensure_future(
            worker.in_thread(worker.memory_pool, ForgetStep(worker)._forget, [request])
        )
        await asyncio.sleep(0.5)
        assert runtime.forgotten == []  # not while the abstracts are being made
        runtime.release.set()
        await asyncio.wait_for(forgetting, WAIT)
        assert runtime.forgotten == ["acme"]
    finally:
        runtime.release.set()
        await consolidation
        worker.shutdown()


def test_a_consolidation_is_published_before_the_stores_are_written() -> None:
    """A run cut short between the two is planned again; the other way round, the stores held
    memories that the units topic never heard of."""
    worker, runtime = blocked_worker()
    runtime.release.set()
    try:
        handled = asyncio.run(consolidate_step(worker, runtime).finish(["acme"]))
        assert runtime.events == ["plan acme", "deliver 1", "apply acme"] and handled.outputs == []
        runtime.events.clear()
        with pytest.raises(RuntimeError):
            asyncio.run(consolidate_step(worker, runtime, fail=True).finish(["acme"]))
        assert runtime.events == ["plan acme", "deliver 1"]  # not delivered: not applied
        assert not worker.consolidation_lock.locked()
    finally:
        worker.shutdown()
