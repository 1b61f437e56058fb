"""The forget and consolidate steps of a worker (deletions and consolidation requests -> stores), as
the agent runner drives them; the worker's components and its other steps are in
:mod:`simplemem.streams.worker`."""

from __future__ import annotations

import asyncio
from functools import partial

from simplemem.processors.ingest.streaming import raw_dead_letter
from simplemem.processors.lifecycle.consolidate import ConsolidationRun
from simplemem.processors.lifecycle.forget import ForgetResult
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import message_key, tenant_key
from simplemem.schemas.stream import ConsolidationRequest, DeletionRequest, FailurePoint
from simplemem.streams import metrics
from simplemem.streams.erasure import request_tombstones
from simplemem.streams.gaps import Item
from simplemem.streams.runner import Deliver, Handled, Output
from simplemem.streams.worker import Worker, dead_letter_outputs


class ForgetStep:
    """deletions -> stores: each request carried out on every store (:mod:`simplemem.processors.lifecycle.forget`), on
    the memorize thread (so this worker never indexes and forgets at once); then the units topic
    gets a tombstone per deleted memory and the rewritten ones, the outcomes and scrubbed topics a
    tombstone per forgotten message (:mod:`simplemem.streams.erasure`). The request itself stays on its topic:
    the durable record (ids only)."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    async def prepare(self, items: list[Item]) -> list[DeletionRequest]:
        metrics.STAGE_RECORDS.labels("forget").inc(len(items))
        return [DeletionRequest.model_validate_json(i.value) for i in items]  # a bad one: one by one

    async def finish(self, requests: list[DeletionRequest]) -> Handled:
        results = await self.worker.in_thread(self.worker.memory_pool, self._forget, requests)
        out: list[Output] = []
        for request, result in zip(requests, results, strict=True):
            out += [("units", uid.encode(), None) for uid in result.deleted]
            out += [("units", u.id.encode(), dumps(u)) for u in result.written]
            out += [("outcomes", message_key(request.tenant_id, m), None) for m in request.message_ids]
            out += await asyncio.to_thread(request_tombstones, request, self.worker.settings)
            out += [("consolidation", tenant_key(request.tenant_id), dumps(d)) for d in result.decisions]
            metrics.FORGET_SECONDS.observe(result.record.seconds)
        return Handled(out)

    def _forget(self, requests: list[DeletionRequest]) -> list[ForgetResult]:
        with self.worker.consolidation_lock:
            return [self._forget_one(r) for r in requests]

    def _forget_one(self, request: DeletionRequest) -> ForgetResult:
        """Retried through a store outage like any write (forgetting twice changes nothing more)."""
        done: list[ForgetResult] = []
        self.worker.write(lambda: done.append(self.worker.runtime.forget(request)))
        return done[-1]

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        reason = f"{type(error).__name__}: {error}"
        letter = raw_dead_letter(
            FailurePoint.FORGET, "invalid_request", reason, item.source, item.value, self.worker.settings
        )
        return dead_letter_outputs([letter], [])


class ConsolidateStep:
    """consolidate -> stores: stage 2 for each requested tenant (once per batch), on a thread of its
    own (forgetting waits for it, indexing does not).

    Plan, publish, apply: the run is planned without writing, its decisions, abstracts, archived
    originals and supersession pointers are delivered to the consolidation and units topics
    (absorbed abstracts as tombstones), and only then written to the stores. Applied first, a run
    cut short (a worker killed, a store outage mid-run) left memories in the stores that the units
    topic never heard of: a second run finds the originals archived and makes nothing to publish.
    Planned first, a second run plans the same again (or, with new memories, a larger abstract that
    absorbs the first one at the next run)."""

    def __init__(self, worker: Worker, deliver: Deliver) -> None:
        self.worker = worker
        self.deliver = deliver

    async def prepare(self, items: list[Item]) -> list[str]:
        metrics.STAGE_RECORDS.labels("consolidate").inc(len(items))
        requests = [ConsolidationRequest.model_validate_json(i.value) for i in items]
        return list(dict.fromkeys(r.tenant_id for r in requests))

    async def finish(self, tenants: list[str]) -> Handled:
        worker = self.worker
        await worker.in_thread(worker.consolidate_pool, worker.consolidation_lock.acquire)
        try:
            runs = await worker.in_thread(worker.consolidate_pool, self._plan, tenants)
            await self.deliver(self._outputs(tenants, runs))
            await worker.in_thread(worker.consolidate_pool, self._apply, tenants, runs)
        finally:
            worker.consolidation_lock.release()
        for run in runs:
            metrics.ABSTRACTS.inc(len(run.decisions))
            metrics.LLM_FALLBACKS.labels("summary").inc(run.summary_fallbacks)
            metrics.LLM_FALLBACKS.labels("update_judge").inc(run.update_fallbacks)
        return Handled([])  # delivered above, before the stores were written

    @staticmethod
    def _outputs(tenants: list[str], runs: list[ConsolidationRun]) -> list[Output]:
        out: list[Output] = []
        for tenant, run in zip(tenants, runs, strict=True):
            out += [("consolidation", tenant_key(tenant), dumps(d)) for d in run.decisions]
            out += [("units", u.id.encode(), dumps(u)) for u in [*run.written, *run.updated]]
            out += [("units", uid.encode(), None) for uid in run.deleted]
        return out

    def _plan(self, tenants: list[str]) -> list[ConsolidationRun]:
        """Retried through a store outage like any write (planning writes nothing)."""
        runs: list[ConsolidationRun] = []
        for tenant in tenants:
            self.worker.write(partial(self._plan_one, tenant, runs))
        return runs

    def _plan_one(self, tenant: str, runs: list[ConsolidationRun]) -> None:
        runs.append(self.worker.runtime.consolidate(tenant, apply=False))

    def _apply(self, tenants: list[str], runs: list[ConsolidationRun]) -> None:
        """Retried through a store outage (applying twice changes nothing more)."""
        for tenant, run in zip(tenants, runs, strict=True):
            self.worker.write(partial(self.worker.runtime.apply_consolidation, tenant, run))

    def poison(self, item: Item, error: BaseException) -> list[Output]:
        reason = f"{type(error).__name__}: {error}"
        letter = raw_dead_letter(
            FailurePoint.CONSOLIDATE,
            "consolidation_error",
            reason,
            item.source,
            item.value,
            self.worker.settings,
        )
        return dead_letter_outputs([letter], [])
