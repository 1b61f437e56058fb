"""The LLM summariser for consolidation (``SIMPLEMEM_SUMMARISER=llm``): the model words an
abstract's statement; the offline summariser (simplemem.processors.lifecycle.consolidate.summarise) still makes the
abstract itself, so the tenant, the ``source_ids`` (the union of the members'), the time span, the
vector and the id (a hash of the sources and the offline text: re-running gives the same id,
whatever the model writes) do not depend on the model.

The model sees only what is stored: the members' text was PII-scrubbed before it was stored, so no
raw PII is sent. It gets the offline summary's counts and span and the most typical members
(``llm_summary_members``), with their dates.

"Never invents", the cheap check (:func:`invented`): every number in the summary (each run of
digits, so each part of a date) must appear in the members' text, their dates or the offline
summary (which holds the counts); every capitalised word (a name, a month) must be a word of the
members' text or fields or of the offline summary, or the name of a month the members span.
Its limits: numbers written as words are not checked; a date made of real parts in a new order
passes; a sentence opening with a word the members do not use counts as a name (and falls back).
A summary that is not the expected JSON, is empty or longer than ``llm_summary_max_chars``, or
fails the check is replaced by the offline summary for that cluster, and the fallback is counted
(``ConsolidationRun.summary_fallbacks``).
"""

from __future__ import annotations

import calendar
import logging
import re
from collections.abc import Iterator, Sequence
from datetime import date

import httpx
from pydantic import BaseModel, ConfigDict, Field

from simplemem.processors.lifecycle.consolidate import Abstract, Vector, summarise
from simplemem.processors.llm_client import LLM_FAILURES, JsonChat, MalformedOutput
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.settings import Settings

log = logging.getLogger(__name__)

PROMPT = """You merge similar memories of one person into one memory statement.
Rules: one or two sentences in the third person, starting with the person's name as the memories
write it; state the pattern, with the counts and the date span given under COUNTED; keep names,
counts and dates exactly as given; never add a name, number or date that is not in the input.
Answer with JSON only: {"summary": str}"""

NUMBER = re.compile(r"\d+")
CAPITALISED = re.compile(r"\b[A-Z][\w'’]*")  # "Jean-Luc", "Jan-Mar": each part on its own
WORD = re.compile(r"[\w'’]+")
POSSESSIVE = re.compile(r"['’]s$")


def _word(w: str) -> str:
    return POSSESSIVE.sub("", w.lower())  # "Jordan's" is a word of a memory that says "Jordan"


class SummaryOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1)


def _months(first: str, last: str) -> Iterator[str]:
    """The English names (full and short) of the months from ``first`` to ``last`` (ISO dates)."""
    day, end = date.fromisoformat(first).replace(day=1), date.fromisoformat(last)
    while day <= end:
        yield calendar.month_name[day.month].lower()
        yield calendar.month_abbr[day.month].lower()
        day = day.replace(year=day.year + day.month // 12, month=day.month % 12 + 1)


def invented(summary: str, originals: Sequence[MemoryUnit], offline: MemoryUnit) -> list[str]:
    """The numbers and capitalised words of ``summary`` found in neither the members nor the
    offline summary (empty: nothing invented, by this check)."""
    sources = [offline.text, offline.event_time or ""]
    for u in originals:
        sources += [u.text, u.stated_at[:10], u.event_time or "", u.speaker or "", u.topic or ""]
        sources += [u.location or "", *u.persons, *u.entities, *u.keywords]
    known_numbers = {int(n) for text in sources for n in NUMBER.findall(text)}
    known_words = {_word(w) for text in sources for w in WORD.findall(text)}
    first, last = (offline.event_time or "").partition("/")[::2]
    if first and last:
        known_words.update(_months(first, last))
    bad = [n for n in NUMBER.findall(summary) if int(n) not in known_numbers]
    return bad + [w for w in CAPITALISED.findall(summary) if _word(w) not in known_words]


class LlmSummariser:
    """A :data:`simplemem.processors.lifecycle.consolidate.Summariser` whose statement is the model's, when it passes."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        self.chat = JsonChat(settings, client)
        self.members = settings.llm_summary_members
        self.max_chars = settings.llm_summary_max_chars

    def __call__(self, tenant_id: str, originals: Sequence[MemoryUnit], vectors: Vector) -> Abstract:
        offline, mean = summarise(tenant_id, originals, vectors)
        try:
            text = self._summary(originals, vectors, offline)
        except LLM_FAILURES as exc:
            log.warning("llm summary fell back to offline for abstract %s: %s", offline.id, exc)
            return Abstract(offline, mean, fallback=True)
        return Abstract(offline.model_copy(update={"text": text}), mean)

    def _summary(self, originals: Sequence[MemoryUnit], vectors: Vector, offline: MemoryUnit) -> str:
        scores = vectors @ (vectors.sum(axis=0))
        typical = sorted(range(len(originals)), key=lambda i: (-float(scores[i]), originals[i].id))
        shown = sorted((originals[i] for i in typical[: self.members]), key=lambda u: (u.stated_at, u.id))
        lines = [f"COUNTED: {offline.text}", f"MEMORIES ({len(shown)} of {len(originals)}):"]
        lines += [f"- [{u.stated_at[:10]}] {u.text}" for u in shown]
        text = self.chat.ask(PROMPT, "\n".join(lines), SummaryOutput).summary.strip()
        if not text or len(text) > self.max_chars:
            raise MalformedOutput(f"a summary of {len(text)} characters (1 to {self.max_chars} expected)")
        bad = invented(text, originals, offline)
        if bad:
            raise MalformedOutput(f"states what no member does: {bad}")
        return text
