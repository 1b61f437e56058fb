"""LLM decomposition through any OpenAI-compatible chat endpoint (simplemem.processors.llm_client: JSON
output, retries).

Selected with ``SIMPLEMEM_DECOMPOSER=llm`` and ``SIMPLEMEM_LLM_BASE_URL``. Output that is not the
expected JSON (or cites messages outside the window) falls back to the offline decomposer for that
window, and the fallback is counted: nothing is silently dropped.
"""

from __future__ import annotations

import logging

import httpx
from pydantic import BaseModel

from simplemem.processors.ingest.decompose import Decomposition, DraftUnit, OfflineDecomposer, code_draft
from simplemem.processors.llm_client import LLM_FAILURES, JsonChat, MalformedOutput
from simplemem.schemas.memory import MemoryKind, MemoryUnit, UnitContent
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import Window

log = logging.getLogger(__name__)

PROMPT = """You turn a window of chat messages into atomic, self-contained memory statements.
Rules: one statement per fact; replace pronouns with names (the speaker of "I" is given per message);
convert relative dates to absolute ISO-8601 dates using each message's time; skip small talk.
Only decompose the messages marked NEW; the others are context. Cite the message ids each statement
comes from. Answer with JSON only: {"units": [{"text": str, "event_time": str|null, "persons": [str],
"entities": [str], "keywords": [str], "topic": str|null, "location": str|null, "source_ids": [str]}]}"""


class LlmOutput(BaseModel):
    units: list[UnitContent]


class LlmDecomposer:
    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.chat = JsonChat(settings, client)
        self.offline = OfflineDecomposer()

    def decompose(self, window: Window) -> Decomposition:
        lines = []
        for i, m in enumerate(window.messages):
            tag = "NEW" if i >= window.new_from else "CONTEXT"
            lines.append(f"[{tag}] id={m.message_id} time={m.ts.isoformat()} {m.speaker}: {m.prose}")
        try:
            parsed = self._checked(self.chat.ask(PROMPT, "\n".join(lines), LlmOutput), window)
        except LLM_FAILURES as exc:
            log.warning("llm decomposition fell back to offline for %s: %s", window.window_id, exc)
            result = self.offline.decompose(window)
            result.fallbacks += 1
            return result
        result = Decomposition()
        new = {m.message_id: m for m in window.new_messages}
        for m in window.new_messages:
            result.units_per_message[m.message_id] = 0
            for code in m.code_blocks:  # code bypasses the LLM entirely
                result.units.append(code_draft(self.offline._code_unit(m, code), m))
                result.units_per_message[m.message_id] += 1
        for item in parsed.units:
            first = new[item.source_ids[0]]
            unit = MemoryUnit.build(
                tenant_id=window.tenant_id,
                text=item.text,
                kind=MemoryKind.FACT,
                source_ids=sorted(item.source_ids),
                event_time=item.event_time,
                stated_at=first.ts.isoformat(),
                speaker=first.speaker,
                role=first.role,
                persons=item.persons,
                entities=item.entities,
                keywords=item.keywords,
                topic=item.topic,
                location=item.location,
                session_id=window.session_id,
            )
            result.units.append(DraftUnit(unit))
            for sid in item.source_ids:
                result.units_per_message[sid] += 1
        return result

    @staticmethod
    def _checked(output: LlmOutput, window: Window) -> LlmOutput:
        allowed = {m.message_id for m in window.new_messages}
        for item in output.units:
            if not set(item.source_ids) <= allowed:
                raise MalformedOutput(f"cites messages outside the window: {item.source_ids}")
        return output
