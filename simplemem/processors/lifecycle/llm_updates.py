"""The LLM knowledge-update judge (``SIMPLEMEM_UPDATE_JUDGE=llm``): for each candidate pair of the
offline rule (consecutive claims on one subject and attribute, simplemem.processors.lifecycle.updates), the model says
whether the newer memory makes the older one out of date. It sees the two stored (PII-scrubbed)
statements and their dates, nothing else.

Bounded: at most ``update_judge_max_pairs`` pairs per tenant run, the newest first; the others keep
the offline value comparison. A pair with no valid verdict (not the expected JSON, the endpoint
failing after its retries) is decided by the value comparison too, and counted as a fallback; once
the endpoint has failed, the run asks no more (each pair left is a fallback), so a model that is down
does not hold a consolidation run for every pair's retries. Verdicts are kept in the process
(``update_judge_cache_pairs``, least recently used out; memory ids are hashes of their tenant and
content, so a pair's verdict does not go stale nor apply to another tenant): a run every few minutes does not ask about the same pairs again.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from datetime import datetime

import httpx
from pydantic import BaseModel, ConfigDict, StrictBool

from simplemem.processors.lifecycle.updates import Judged, Pair
from simplemem.processors.llm_client import LLM_FAILURES, JsonChat
from simplemem.processors.stores.protocols import LexicalStore
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.settings import Settings

log = logging.getLogger(__name__)

PROMPT = """You are given two memories about the same attribute of the same person, the older first,
each with the date it was stated. Does the newer one make the older one out of date (the value
changed: a move, a new job, a new phone number, a new partner or a break-up, a changed preference)?
A restatement, the same value written differently, or a second value held at the same time
("also works as") does not. Answer with JSON only: {"supersedes": true|false}"""


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    supersedes: StrictBool


class LlmUpdateJudge:
    """A :class:`simplemem.processors.lifecycle.updates.UpdateJudge` that asks the model, one pair at a time."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.chat = JsonChat(settings, client)
        self.max_pairs = settings.update_judge_max_pairs
        self.cache_size = settings.update_judge_cache_pairs
        self.known: OrderedDict[tuple[str, str], bool] = OrderedDict()  # (older id, newer id) -> verdict

    def judge(self, tenant_id: str, pairs: Sequence[Pair], lexical: LexicalStore, batch: int) -> Judged:
        newest = sorted(
            pairs, key=lambda p: (datetime.fromisoformat(p[1].stated_at), p[1].unit_id), reverse=True
        )[: self.max_pairs]
        out = Judged()
        for older, newer in newest:
            key = (older.unit_id, newer.unit_id)
            if key in self.known:
                self.known.move_to_end(key)
                out.verdicts[key] = self.known[key]
        newest = [(o, n) for o, n in newest if (o.unit_id, n.unit_id) not in out.verdicts]
        ids = sorted({s.unit_id for pair in newest for s in pair})
        units: dict[str, MemoryUnit] = {}
        for start in range(0, len(ids), batch):
            units.update((u.id, u) for u in lexical.get(tenant_id, ids[start : start + batch]))
        down = False
        for older, newer in newest:
            if down:
                out.fallbacks += 1
                continue
            if older.unit_id not in units or newer.unit_id not in units:
                continue  # gone since it was read: nothing to ask about
            question = "\n".join(
                f"{label} ({u.stated_at[:10]}): {u.text}"
                for label, u in (("OLDER", units[older.unit_id]), ("NEWER", units[newer.unit_id]))
            )
            try:
                verdict = self.chat.ask(PROMPT, question, Verdict)
            except LLM_FAILURES as exc:
                log.warning("llm update verdict fell back to the offline rule for %s: %s", newer.unit_id, exc)
                out.fallbacks += 1
                down = isinstance(exc, httpx.HTTPError)
                continue
            out.verdicts[(older.unit_id, newer.unit_id)] = verdict.supersedes
            self._remember((older.unit_id, newer.unit_id), verdict.supersedes)
        return out

    def _remember(self, key: tuple[str, str], verdict: bool) -> None:
        self.known[key] = verdict
        while len(self.known) > self.cache_size:
            self.known.popitem(last=False)
