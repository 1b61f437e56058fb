"""The memory pipeline, stage by stage, independent of how events arrive (file, in-process, Kafka).

validate -> scrub + analyse (one spaCy and one MiniLM pass per message) -> window -> entropy filter ->
decompose (code bypass) -> index (vector + lexical stores). Every accepted message ends as indexed,
filtered (with its window's score) or failed (with a reason); :class:`IngestReport` adds them up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import partial
from itertools import chain
from typing import Protocol, TypeVar

from simplemem.processors.ingest.admission import FORGOTTEN_REASON, analysed_or_failed, split_forgotten
from simplemem.processors.ingest.analysis import MessageAnalyzer
from simplemem.processors.ingest.decompose import Decomposition, DraftUnit
from simplemem.processors.ingest.entropy import EntropyFilter, SessionHistory
from simplemem.processors.ingest.indexing import Guard, Indexer, Write, call_now, guarded
from simplemem.processors.ingest.sessions import LocalSessions
from simplemem.processors.ingest.windowing import Windower
from simplemem.processors.language.coref import name_words
from simplemem.processors.lifecycle.derived import derive_window
from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.stores import batched
from simplemem.processors.stores.activity import ActivityLedger, Arrival
from simplemem.processors.stores.tombstones import Tombstones, forgotten_among
from simplemem.schemas.accounting import IngestReport, MessageOutcome, Outcome, Rejection
from simplemem.schemas.events import ChatEvent, EventRejected, parse_event
from simplemem.schemas.memory import DERIVED_KINDS, MemoryKind
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import AnalyzedMessage, BufferedTurn, Window

log = logging.getLogger(__name__)


def validate_line(settings: Settings, raw: bytes | str, where: str, report: IngestReport) -> ChatEvent | None:
    """The event on a raw line, counted as read and accepted, or None with its rejection recorded."""
    report.read += 1
    try:
        event = parse_event(raw, max_text_chars=settings.max_text_chars, max_id_chars=settings.max_id_chars)
    except EventRejected as exc:
        report.rejected.append(Rejection(where=where, reason=exc.reason))
        return None
    report.accepted += 1
    return event


M = TypeVar("M", ChatEvent, AnalyzedMessage)


class Decomposer(Protocol):
    def decompose(self, window: Window) -> Decomposition: ...


@dataclass
class WindowResult:
    window: Window
    kept: bool
    score: float
    drafts: list[DraftUnit] = field(default_factory=list)
    units_per_message: dict[str, int] = field(default_factory=dict)
    fallbacks: int = 0
    error: str | None = None


class Pipeline:
    def __init__(
        self,
        settings: Settings,
        analyzer: MessageAnalyzer,
        decomposer: Decomposer,
        indexer: Indexer,
        clock: Callable[[], float] = time.time,
        buffer: RecentTurnBuffer | None = None,
        tombstones: Tombstones | None = None,
        activity: ActivityLedger | None = None,
    ) -> None:
        self.settings = settings
        self.analyzer = analyzer
        self.decomposer = decomposer
        self.indexer = indexer
        self.windower = Windower(settings.window_size, settings.window_stride, settings.session_idle_seconds)
        self.entropy = EntropyFilter(
            settings.entropy_threshold,
            settings.entropy_alpha,
            settings.entropy_history_messages,
            judged_messages=settings.window_stride,
        )
        self.sessions = LocalSessions(self.windower)  # embedded mode's session state (streams: a table)
        self.clock = clock
        self.buffer = buffer
        self.tombstones = tombstones
        self.activity = activity  # per-tenant accounting: turns taken in here, outcomes at commit

    def warm_up(self) -> None:
        """Load the models before the first batch arrives (so timings and first latencies are warm)."""
        self.analyzer.preparer.submit([]).result()

    # --- stages --------------------------------------------------------------------------------
    def validate(self, raw: bytes | str, where: str, report: IngestReport) -> ChatEvent | None:
        return validate_line(self.settings, raw, where, report)

    def process_window(self, window: Window, guard: Guard = nullcontext) -> WindowResult:
        """Judge and decompose a window against this process's history for its session."""
        key = window.session_key
        result, self.sessions.histories[key] = self.judge(window, self.sessions.history(key), guard)
        return result

    def judge(
        self, window: Window, history: SessionHistory, guard: Guard = nullcontext
    ) -> tuple[WindowResult, SessionHistory]:
        """Entropy decision, then decomposition if kept; returns the session's next history. The one
        read: the tenant's names among the window's words (:meth:`with_known_names`, under ``guard``)."""
        decision = self.entropy.score(window, history)
        history = self.entropy.remember(history, window.new_messages)
        if not decision.kept:  # its statements add nothing new; the moments it records still happened
            return WindowResult(window, False, decision.score, derive_window(window)), history
        try:
            with guard():
                named = self.with_known_names(window)
            result = self.decomposer.decompose(named)
        except Exception as exc:  # one bad window must not stop the stream
            log.exception("decomposition failed for %s", window.window_id)
            error = f"decomposition failed: {exc}"
            return WindowResult(window, kept=True, score=decision.score, error=error), history
        drafts = [*result.units, *derive_window(window)]  # the window's derived lines go with its units
        return WindowResult(
            window, True, decision.score, drafts, result.units_per_message, result.fallbacks
        ), history

    def with_known_names(self, window: Window) -> Window:
        """``window`` with the persons' names that the tenant's memory holds among its lower-case words:
        "my friend Kenji" said in April makes the "he" of "we should take kenji out for dinner, he
        earned it", said a week later, resolvable. One store read per window decomposed, not the
        query service's names cache: what a window's units say must not
        depend on when it was decomposed, so both modes write the same units. A store that cannot
        answer leaves the window as it is (its units keep more pronouns; a replay rewrites them)."""
        words = sorted(name_words(m.sentences for m in window.messages))
        if not words:
            return window
        try:
            known = batched.known_names(
                self.indexer.lexical, window.tenant_id, words, self.settings.store_expression_terms
            )
        except Exception:  # names only improve pronouns: the window must not fail or wait on them
            log.warning("known names unavailable for %s", window.window_id, exc_info=True)
            return window
        return window.model_copy(update={"known_names": known}) if known else window

    def account(
        self, results: Sequence[WindowResult], report: IngestReport, index_error: str | None = None
    ) -> list[MessageOutcome]:
        """Count the windows and decide each new message's outcome (returned, for the outcomes topic)."""
        outcomes: list[MessageOutcome] = []
        for r in results:
            report.windows += 1
            report.llm_fallbacks += r.fallbacks
            if not r.kept:
                report.windows_filtered += 1
            error = r.error or index_error
            for m in r.window.new_messages:
                outcome = MessageOutcome(
                    tenant_id=m.tenant_id,
                    session_id=m.session_id,
                    message_id=m.message_id,
                    outcome=Outcome.INDEXED,
                    score=r.score,
                )
                if not r.kept:
                    outcome.outcome = Outcome.FILTERED
                    report.filtered_scores.append(r.score)
                elif error:
                    outcome.outcome, outcome.reason = Outcome.FAILED, error
                else:
                    outcome.units = r.units_per_message.get(m.message_id, 0)
                report.record(outcome)
                outcomes.append(outcome)
            if not error:
                derived = sum(1 for d in r.drafts if d.unit.kind in DERIVED_KINDS)
                report.units += len(r.drafts) - derived
                report.derived += derived
                report.code_blocks += sum(1 for d in r.drafts if d.unit.kind == MemoryKind.CODE)
        return outcomes

    def run_windows(
        self, windows: Sequence[Window], report: IngestReport, guard: Guard = nullcontext
    ) -> list[MessageOutcome]:
        """Decide the windows, then index what they made. ``guard`` is entered around every store
        access (the query service's store lock): decomposition, most of the work, runs outside it."""
        results = [self.process_window(w, guard) for w in windows]
        return self.commit(results, report, guarded(guard) if guard is not nullcontext else None, guard)

    def commit(
        self,
        results: Sequence[WindowResult],
        report: IngestReport,
        write: Write | None = None,
        guard: Guard = nullcontext,
    ) -> list[MessageOutcome]:
        """Index the windows' units (a filtered window's: its derived lines), account for every message,
        clear the decided turns from the buffer. ``write`` wraps each store call (the streams retry it
        through a store outage), ``guard`` the tombstone read."""
        write = write or call_now
        with guard():
            results = self._without_forgotten(_latest_versions(results))
        drafts = [d for r in results if not r.error for d in r.drafts]
        decided = [
            (r.window.tenant_id, m.message_id) for r in results if not r.error for m in r.window.new_messages
        ]
        index_error = None
        try:
            report.replaced.extend(self.indexer.index(drafts, decided, write))
        except Exception as exc:
            log.exception("indexing failed")
            index_error = f"indexing failed: {exc}"
        outcomes = self.account(results, report, index_error)
        if self.activity is not None:
            write(partial(self.activity.decided, outcomes, self.clock()))
        buffer = self.buffer
        if buffer is not None:
            for r in results:
                if not (r.error or index_error):  # decided: the stores now answer for these turns
                    w = r.window
                    write(
                        partial(
                            buffer.discard, w.tenant_id, w.session_id, [m.message_id for m in w.new_messages]
                        )
                    )
        return outcomes

    def drop_forgotten(self, messages: Sequence[M], report: IngestReport) -> list[M]:
        """The messages not forgotten (the tombstone set); each forgotten one is counted as rejected,
        so replaying a history or re-ingesting a file cannot bring it back."""
        kept, gone = split_forgotten(self.tombstones, messages, lambda m: (m.tenant_id, m.message_id, m.ts))
        for m in gone:
            report.accepted -= 1
            report.rejected.append(Rejection(where=m.message_id, reason=FORGOTTEN_REASON))
        return kept

    def _without_forgotten(self, results: list[WindowResult]) -> list[WindowResult]:
        """Drafts of a message forgotten while its window was open are dropped; a draft quoting one
        loses the quote (the windows' state may hold turns from before the deletion)."""
        drafts = [d for r in results for d in r.drafts]
        if self.tombstones is None or not drafts:
            return results
        sources = {
            (d.unit.tenant_id, sid, datetime.fromisoformat(d.unit.stated_at))
            for d in drafts
            for sid in [*d.unit.source_ids, *d.unit.context_ids]
        }
        gone = forgotten_among(self.tombstones, sources)
        if not gone:
            return results
        out = []
        for r in results:
            kept = []
            for d in r.drafts:
                tenant = d.unit.tenant_id
                if any((tenant, sid) in gone for sid in d.unit.source_ids):
                    continue
                if any((tenant, sid) in gone for sid in d.unit.context_ids):
                    d = replace(d, unit=d.unit.model_copy(update={"context": None, "context_ids": []}))
                kept.append(d)
            out.append(replace(r, drafts=kept))
        return out

    # --- batch driver (embedded mode and replay) ----------------------------------------------
    def ingest(
        self,
        lines: Iterable[tuple[str, bytes | str]],
        report: IngestReport | None = None,
        progress: Callable[[int], None] | None = None,
        *,
        close_sessions: bool = True,
    ) -> IngestReport:
        """Run ``(where, raw)`` lines through every stage; flush all sessions at the end (unless
        ``close_sessions`` is false: more of the same conversations is coming, and their open
        windows wait for it, their turns queryable from the recent-turn buffer meanwhile).

        Three batches are in flight: spaCy prepares batch N+2 (on the preparer's thread, or in its
        process for ``simplemem ingest``), MiniLM embeds batch N+1 from this thread, and a writer
        thread windows, decomposes and indexes batch N, in order (a batch is written only once the
        one before it is).
        The writer counts in a report of its own, added to ``report`` when it is done.
        """
        report = report or IngestReport()
        written = IngestReport()
        pending: Future[list[AnalyzedMessage]] | None = None
        pending_batch: list[ChatEvent] = []
        writing: Future[None] | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="write") as writer:
            for batch in self._batches(lines, report):
                submitted = self.analyzer.preparer.submit(batch)
                if pending is not None:
                    writing = self._embed_then_write(
                        writer, writing, pending_batch, pending, written, progress
                    )
                pending, pending_batch = submitted, batch
            if pending is not None:
                writing = self._embed_then_write(writer, writing, pending_batch, pending, written, progress)
            if writing is not None:
                writing.result()
        report.merge(written)
        if close_sessions:
            self.flush(report)
        return report

    def analyse_events(self, events: list[ChatEvent]) -> list[AnalyzedMessage | MessageOutcome]:
        """The half of ingestion that reads no store (scrub, analyse, embed; a message that fails
        alone is its outcome): the query service runs it outside the store's lock, so queries are
        not held behind a long text's analysis. :meth:`write_analysed` is the other half."""
        return analysed_or_failed(lambda: self.analyzer.analyze(events), self.analyzer.analyze, events)

    def write_analysed(
        self,
        events: list[ChatEvent],
        results: list[AnalyzedMessage | MessageOutcome],
        report: IngestReport,
        guard: Guard = nullcontext,
    ) -> None:
        """Window, decide and index what :meth:`analyse_events` made, entering ``guard`` around each
        store access (the query service's store lock)."""
        self._write_analysed(events, results, report, None, guard)

    def ingest_analyzed(
        self,
        messages: Iterable[AnalyzedMessage],
        report: IngestReport | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> IngestReport:
        """Re-derive memory from messages scrubbed and analysed before (the durable history: the
        scrubbed topic): embed, window, judge, decompose and index; flush all sessions at the end.
        No raw text is involved, and spaCy does not run again."""
        report = report or IngestReport()
        batch: list[AnalyzedMessage] = []
        for message in chain(messages, [None]):  # None: the end, flush the last batch
            if message is not None:
                batch.append(message)
            if batch and (message is None or len(batch) >= self.settings.ingest_batch_messages):
                report.read += len(batch)
                report.accepted += len(batch)
                self._window_and_index(self.analyzer.embed(batch), report)
                if progress:
                    progress(len(batch))
                batch = []
        self.flush(report)
        return report

    def flush(self, report: IngestReport) -> None:
        """Close every open window (end of input, shutdown) and seal the vector store."""
        self.run_windows(self.sessions.close_all(), report)
        self.sessions.forget_closed()
        self.indexer.vectors.flush()

    def close_silent(self, now: float, guard: Guard = nullcontext) -> int:
        """Serve's timer: decide or close the windows of sessions gone silent by ``now`` (wall clock,
        the stream's rule and settings); returns how many windows that decided."""
        s = self.settings
        windows = self.sessions.close_silent(now, s.pause_seconds, s.wall_clock_idle_seconds)
        for window in windows:  # one at a time: a query waits for one window's writes at most
            self.run_windows([window], IngestReport(), guard)
        if windows:
            with guard():
                self.indexer.vectors.flush()
        self.sessions.forget_closed()
        return len(windows)

    def _batches(
        self, lines: Iterable[tuple[str, bytes | str]], report: IngestReport
    ) -> Iterator[list[ChatEvent]]:
        """Valid events not forgotten, in batches (a forgotten one is never scrubbed or analysed)."""
        batch: list[ChatEvent] = []
        for where, raw in lines:
            event = self.validate(raw, where, report)
            if event is not None:
                batch.append(event)
            if len(batch) >= self.settings.ingest_batch_messages:
                yield self.drop_forgotten(batch, report)
                batch = []
        if batch:
            yield self.drop_forgotten(batch, report)

    def _embed_then_write(
        self,
        writer: ThreadPoolExecutor,
        writing: Future[None] | None,
        events: list[ChatEvent],
        prepared: Future[list[AnalyzedMessage]],
        report: IngestReport,
        progress: Callable[[int], None] | None,
    ) -> Future[None]:
        """Embed a prepared batch here, then hand it to the writer once the batch before it is
        written (its error, if any, surfaces now)."""
        results = analysed_or_failed(
            lambda: self.analyzer.embed(prepared.result()), self.analyzer.analyze, events
        )
        if writing is not None:
            writing.result()
        return writer.submit(self._write_analysed, events, results, report, progress)

    def _write_analysed(
        self,
        events: list[ChatEvent],
        results: list[AnalyzedMessage | MessageOutcome],
        report: IngestReport,
        progress: Callable[[int], None] | None,
        guard: Guard = nullcontext,
    ) -> None:
        messages: list[AnalyzedMessage] = []
        failed: list[MessageOutcome] = []
        for result in results:
            if isinstance(result, MessageOutcome):
                report.record(result)
                failed.append(result)
            else:
                messages.append(result)
        if self.activity is not None and failed:  # accepted, and failed in their analysis
            self.activity.took([Arrival(o.tenant_id, o.message_id, False, self.clock()) for o in failed])
            self.activity.decided(failed, self.clock())
        self._window_and_index(messages, report, guard)
        if progress:
            progress(len(events))

    def _window_and_index(
        self, messages: list[AnalyzedMessage], report: IngestReport, guard: Guard = nullcontext
    ) -> None:
        with guard():
            messages = self.drop_forgotten(messages, report)
            report.pii_scrubbed += sum(1 for m in messages if m.pii_types)
            if self.activity is not None:
                self.activity.took(arrivals(messages, self.clock()))
            report.repetition_dropped_chars += sum(m.repetition_dropped for m in messages)
            if self.buffer is not None:
                self.buffer.push(buffered_turns(messages))
        windows: list[Window] = []
        now = self.clock()
        for message in messages:
            windows.extend(self.sessions.add(message, now))
        self.run_windows(windows, report, guard)
        # A session that ended in this batch has had its last windows judged: its history goes now,
        # not at the end of the input (a long ingest would keep every session's vectors until then).
        self.sessions.forget_closed()


def _latest_versions(results: Sequence[WindowResult]) -> list[WindowResult]:
    """When a message was edited (sent again) within one batch, its units come from its last
    window only: drafts an earlier window made from an older version are dropped."""
    last: dict[tuple[str, str], int] = {}
    for i, r in enumerate(results):
        for m in r.window.new_messages:
            last[(r.window.tenant_id, m.message_id)] = i
    out = []
    for i, r in enumerate(results):
        stale = {sid for (t, sid), j in last.items() if j > i and t == r.window.tenant_id}
        if stale and any(set(d.unit.source_ids) & stale for d in r.drafts):
            r = replace(r, drafts=[d for d in r.drafts if not set(d.unit.source_ids) & stale])
        out.append(r)
    return out


def arrivals(messages: Sequence[AnalyzedMessage], at: float) -> list[Arrival]:
    """The accounting's record of turns taken in at ``at``."""
    return [Arrival(m.tenant_id, m.message_id, bool(m.pii_types), at) for m in messages]


def buffered_turns(messages: Sequence[AnalyzedMessage]) -> list[BufferedTurn]:
    """The lookaside copies of analysed turns (the ones with a vector: something to find), with
    their code blocks: a script pasted a moment ago is answerable before its window is decided."""
    return [
        BufferedTurn(
            tenant_id=m.tenant_id,
            session_id=m.session_id,
            message_id=m.message_id,
            speaker=m.speaker,
            role=m.role,
            text=m.text,
            ts=m.ts,
            vector=m.embedding,
        )
        for m in messages
        if m.embedding
    ]
