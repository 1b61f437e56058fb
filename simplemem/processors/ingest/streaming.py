"""What the stream does to turns, as plain classes over batches: no Kafka here, the Faust agents call them.

* :class:`TurnScrubber` (turns -> scrubbed): validate, PII-scrub, analyse with spaCy, embed with
  MiniLM and push to the recent-turn buffer: a turn is queryable as soon as it is done.
  Invalid input becomes a dead letter with its exact bytes; nothing after it sees the raw text.
* :class:`TurnMemorizer` (scrubbed -> stores): windows and entropy history kept per session in a
  :class:`SessionState` (a Faust table holds it), decomposition, indexing. Returns what to publish
  (units, outcomes, dead letters) and the sessions' next states.

Replays are harmless: a session remembers the position of the last turn it applied (sessions are
ordered on one partition) and skips anything at or before it, and memory ids are deterministic.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import BaseModel, Field

from simplemem.processors.ingest.admission import analysed_or_failed, split_forgotten
from simplemem.processors.ingest.analysis import NlpPreparer
from simplemem.processors.ingest.entropy import SessionHistory
from simplemem.processors.ingest.pipeline import Pipeline, WindowResult, buffered_turns
from simplemem.processors.ingest.windowing import SessionBuffer
from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.stores.tombstones import Tombstones
from simplemem.schemas.accounting import IngestReport, MessageOutcome, Outcome
from simplemem.schemas.events import ChatEvent, EventRejected, parse_event
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeadLetter, FailurePoint, ScrubbedRecord, SourceRef
from simplemem.schemas.window import AnalyzedMessage, Window

log = logging.getLogger(__name__)

Write = Callable[[Callable[[], None]], None]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class ScrubResult:
    records: list[ScrubbedRecord] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    failed: list[MessageOutcome] = field(default_factory=list)
    forgotten: int = 0  # turns dropped because they were forgotten (a replay of the turns topic)


class TurnScrubber:
    def __init__(
        self,
        settings: Settings,
        preparer: NlpPreparer,
        embed: Callable[[list[AnalyzedMessage]], list[AnalyzedMessage]],
        buffer: RecentTurnBuffer | None = None,
        tombstones: Tombstones | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.settings = settings
        self.preparer = preparer
        self.clock = clock
        self.embed = embed
        self.buffer = buffer
        self.tombstones = tombstones

    def run(
        self, batch: Sequence[tuple[SourceRef, bytes]], write: Write = lambda call: call()
    ) -> ScrubResult:
        """Validate, scrub, analyse and embed a batch; the buffer write goes through ``write``."""
        return self.finish(self.prepare(batch), write)

    def prepare(self, batch: Sequence[tuple[SourceRef, bytes]]) -> ScrubResult:
        """The spaCy half: validated, scrubbed and analysed records, without vectors yet. (The streams
        run it for one batch while :meth:`finish` embeds the one before, on another core.)"""
        out = ScrubResult()
        accepted: list[tuple[SourceRef, ChatEvent]] = []
        for source, raw in batch:
            try:
                event = parse_event(
                    raw, max_text_chars=self.settings.max_text_chars, max_id_chars=self.settings.max_id_chars
                )
            except EventRejected as exc:
                out.dead.append(
                    raw_dead_letter(FailurePoint.VALIDATE, exc.code, exc.reason, source, raw, self.settings)
                )
                continue
            accepted.append((source, event))
        accepted, gone = split_forgotten(
            self.tombstones, accepted, lambda pair: (pair[1].tenant_id, pair[1].message_id, pair[1].ts)
        )
        out.forgotten = len(gone)
        at = self.clock()
        for (source, _), message in zip(accepted, self._prepare(accepted, out), strict=True):
            if message is not None:
                out.records.append(ScrubbedRecord.turn(message, source, at))
        return out

    def finish(self, prepared: ScrubResult, write: Write = lambda call: call()) -> ScrubResult:
        """The MiniLM half: vectors in place, then the turns with one go to the recent-turn buffer."""
        messages = [r.message for r in prepared.records if r.message is not None]
        self.embed(messages)
        turns = buffered_turns(messages)
        buffer = self.buffer
        if turns and buffer is not None:
            write(lambda: buffer.push(turns))
        return prepared

    def _prepare(
        self, accepted: list[tuple[SourceRef, ChatEvent]], out: ScrubResult
    ) -> list[AnalyzedMessage | None]:
        events = [e for _, e in accepted]
        messages: list[AnalyzedMessage | None] = []
        results = analysed_or_failed(lambda: self.preparer.prepare(events), self.preparer.prepare, events)
        for (source, event), result in zip(accepted, results, strict=True):
            if isinstance(result, MessageOutcome):
                reason = result.reason or ""
                out.dead.append(_dead_turn(FailurePoint.ANALYZE, "analysis_error", reason, source, event))
                out.failed.append(result)
                messages.append(None)
            else:
                messages.append(result)
        return messages


class SessionState(BaseModel):
    """What a stream remembers about one session between batches (a Faust table value).

    Its lifetime: when a silent session's window is closed, its history is dropped and the state
    is marked ``closed_at``; it then holds only the last applied position (replays after a crash
    skip what was applied), and the worker removes it after ``session_state_grace_seconds``.
    A turn arriving in between reopens the session as a new one.
    """

    buffer: SessionBuffer | None = Field(None, description="the open window's messages")
    history: SessionHistory = Field(default_factory=SessionHistory, description="for the entropy filter")
    sources: dict[str, SourceRef] = Field(
        default_factory=dict, description="turn positions of the undecided messages (for dead letters)"
    )
    source_partition: int | None = None
    source_offset: int = Field(-1, description="position of the last turn applied; replays skip to it")
    closed_at: float | None = Field(None, description="wall-clock time its idle session was closed")

    def applied(self, source: SourceRef) -> bool:
        return source.partition == self.source_partition and source.offset <= self.source_offset


@dataclass
class MemoryResult:
    states: dict[SessionKey, SessionState]
    units: list[MemoryUnit] = field(default_factory=list)
    outcomes: list[MessageOutcome] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    report: IngestReport = field(default_factory=IngestReport)
    turns: int = 0
    duplicates: int = 0
    forgotten: int = 0
    forgotten_records: list[ScrubbedRecord] = field(default_factory=list)  # their history is erased too
    windows: list[WindowResult] = field(default_factory=list)


class TurnMemorizer:
    def __init__(self, pipeline: Pipeline, clock: Callable[[], float]) -> None:
        self.pipeline = pipeline
        self.windower = pipeline.windower
        self.idle_seconds = pipeline.settings.wall_clock_idle_seconds
        self.pause_seconds = pipeline.settings.pause_seconds
        self.clock = clock

    def run(
        self, records: Sequence[ScrubbedRecord], states: dict[SessionKey, SessionState], write: Write
    ) -> MemoryResult:
        """Apply a batch to the sessions' states; every store write goes through ``write``."""
        result = MemoryResult(states=dict(states))
        fresh = self._not_forgotten(self._fresh_turns(records, result), result)
        windows = self._window(records, {id(r) for r in fresh}, result)
        judged = []
        for window in windows:
            key = window.session_key
            state = result.states[key]
            decided, history = self.pipeline.judge(window, state.history)
            if state.buffer is None:  # the session went silent and is closed: nothing to remember
                history, closed_at = SessionHistory(), self.clock()
            else:
                closed_at = None
            result.states[key] = state.model_copy(update={"history": history, "closed_at": closed_at})
            judged.append(decided)
        result.windows = judged
        result.outcomes = self.pipeline.commit(judged, result.report, write)
        self._collect(judged, result)
        return result

    def _fresh_turns(self, records: Sequence[ScrubbedRecord], result: MemoryResult) -> list[ScrubbedRecord]:
        """The batch's turns not applied before (a restart or an upstream replay re-sends some)."""
        fresh: list[ScrubbedRecord] = []
        last: dict[SessionKey, SourceRef] = {}
        for record in records:
            if record.message is None or record.source is None:
                continue
            result.turns += 1
            src, state = record.source, result.states.get(record.session_key)
            prev = last.get(record.session_key)
            if (state is not None and state.applied(src)) or (
                prev is not None and prev.partition == src.partition and src.offset <= prev.offset
            ):
                result.duplicates += 1
                continue
            last[record.session_key] = src
            fresh.append(record)
        return fresh

    def _not_forgotten(self, fresh: list[ScrubbedRecord], result: MemoryResult) -> list[ScrubbedRecord]:
        """Turns forgotten after they were scrubbed (or replayed from the scrubbed topic) never
        reach a window."""
        kept, result.forgotten_records = split_forgotten(
            self.pipeline.tombstones,
            fresh,
            lambda r: None if r.message is None else (r.tenant_id, r.message.message_id, r.message.ts),
        )
        result.forgotten = len(result.forgotten_records)
        return kept

    def _window(
        self, records: Sequence[ScrubbedRecord], fresh: set[int], result: MemoryResult
    ) -> list[Window]:
        """Advance each session's open window; idle checks close the windows of silent sessions.
        Silences are measured between the records' own times (the clock only for records written
        without one), so a batch replayed after a crash cuts the windows the first run cut."""
        clock = self.clock()
        windows: list[Window] = []
        for record in records:
            now = clock if record.at is None else record.at
            state = result.states.get(record.session_key) or SessionState()
            if record.message is not None and record.source is not None:
                if id(record) not in fresh:
                    continue
                buf, closed = self.windower.step(state.buffer, record.message, now)
                src = record.source
                state = state.model_copy(
                    update={
                        "closed_at": None,
                        "buffer": buf,
                        "sources": {**state.sources, record.message.message_id: src},
                        "source_partition": src.partition,
                        "source_offset": src.offset,
                    }
                )
            elif state.buffer is not None:
                buf, closed = self.windower.on_silence(
                    state.buffer, now - state.buffer.last_seen, self.pause_seconds, self.idle_seconds
                )
                if buf is None and not closed:  # closed with nothing to decide: its state can go now
                    update: dict[str, object] = {
                        "buffer": None,
                        "history": SessionHistory(),
                        "closed_at": now,
                    }
                else:
                    update = {"buffer": buf}
                state = state.model_copy(update=update)
            else:
                continue
            windows.extend(closed)
            result.states[record.session_key] = state
        return windows

    def _collect(self, judged: list[WindowResult], result: MemoryResult) -> None:
        """Units to publish, dead letters for failed turns; decided turns leave ``sources``."""
        failed = {o.message_id: o for o in result.outcomes if o.outcome == Outcome.FAILED}
        for r in judged:
            key = r.window.session_key
            state = result.states[key]
            sources = dict(state.sources)
            if not any(m.message_id in failed for m in r.window.new_messages):
                result.units.extend(d.unit for d in r.drafts)
            for m in r.window.new_messages:
                source = sources.pop(m.message_id, None) or SourceRef(topic="", partition=-1, offset=-1)
                outcome = failed.get(m.message_id)
                if outcome is not None:
                    point = FailurePoint.DECOMPOSE if r.error else FailurePoint.INDEX
                    code = "decomposition_error" if r.error else "store_error"
                    result.dead.append(_dead_turn(point, code, outcome.reason or "", source, m))
            result.states[key] = state.model_copy(update={"sources": sources})


def _dead_turn(
    point: FailurePoint,
    code: str,
    reason: str,
    source: SourceRef,
    message: ChatEvent | AnalyzedMessage,
) -> DeadLetter:
    return DeadLetter(
        stage=point,
        code=code,
        reason=reason,
        source=source,
        tenant_id=message.tenant_id,
        session_id=message.session_id,
        message_id=message.message_id,
        failed_at=_now(),
    )


def raw_dead_letter(
    point: FailurePoint, code: str, reason: str, source: SourceRef, raw: bytes, settings: Settings
) -> DeadLetter:
    """A dead letter quoting raw input, at most ``dlq_original_bytes`` of it (so it always fits its
    topic; the whole record stays readable at ``source`` while the turns topic retains it)."""
    cap = settings.dlq_original_bytes
    return DeadLetter(
        stage=point,
        code=code,
        reason=reason[: settings.dlq_reason_chars],
        source=source,
        original=base64.b64encode(raw[:cap]).decode("ascii"),
        original_size=len(raw),
        truncated=len(raw) > cap,
        failed_at=_now(),
    )
