"""Every accepted message ends as indexed, filtered (with score) or failed (with reason)."""

from __future__ import annotations

from types import SimpleNamespace

from simplemem.processors.ingest.decompose import Decomposition, OfflineDecomposer
from simplemem.processors.ingest.pipeline import Pipeline
from simplemem.schemas.accounting import IngestReport, MessageOutcome, Outcome, Rejection
from simplemem.schemas.events import Role
from simplemem.schemas.memory import DERIVED_KINDS, MemoryKind
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import AnalyzedMessage, Sentence, Window
from tests.helpers import message


class RecordingIndexer:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.indexed: list = []

    def index(self, drafts: list, decided: list | None = None, write=None) -> list:  # type: ignore[no-untyped-def]
        def store() -> None:
            if self.fail:
                raise ConnectionError("store down")
            self.indexed.extend(drafts)

        (write or (lambda call: call()))(store)  # each store call goes through the caller's wrapper
        return []


class ExplodingDecomposer:
    def decompose(self, window: Window) -> Decomposition:
        raise RuntimeError("boom")


def pipeline(decomposer, indexer) -> Pipeline:  # type: ignore[no-untyped-def]
    return Pipeline(Settings(), analyzer=None, decomposer=decomposer, indexer=indexer)  # type: ignore[arg-type]


def windows() -> list[Window]:
    first = Window(
        tenant_id="t1", session_id="s1", messages=[message(0, entities=["bob"], embedding=[1.0, 0.0])]
    )
    repeat = Window(
        tenant_id="t1", session_id="s1", messages=[message(1, entities=["bob"], embedding=[1.0, 0.0])]
    )
    return [first, repeat]


def test_kept_and_filtered_are_counted_with_scores() -> None:
    report = IngestReport()
    p = pipeline(OfflineDecomposer(), RecordingIndexer())
    p.run_windows(windows(), report)
    assert report.outcomes[Outcome.INDEXED] == 1
    assert report.outcomes[Outcome.FILTERED] == 1
    assert report.filtered_scores == [0.0]
    assert report.windows == 2 and report.windows_filtered == 1
    assert report.discard_rate == 0.5


def test_decomposition_failure_is_a_failed_outcome_with_reason() -> None:
    report = IngestReport()
    pipeline(ExplodingDecomposer(), RecordingIndexer()).run_windows(windows()[:1], report)
    assert report.outcomes[Outcome.FAILED] == 1
    assert "decomposition failed: boom" in (report.failures[0].reason or "")


def test_store_failure_fails_the_batch_and_nothing_is_lost_silently() -> None:
    report = IngestReport()
    pipeline(OfflineDecomposer(), RecordingIndexer(fail=True)).run_windows(windows()[:1], report)
    assert report.outcomes[Outcome.FAILED] == 1
    assert "indexing failed: store down" in (report.failures[0].reason or "")


class SealingIndexer(RecordingIndexer):
    """Records like its parent; sealing its vector store at the end of the input does nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.vectors = SimpleNamespace(flush=lambda: None)


class PassThroughAnalyzer:
    """The messages come analysed already: embedding them is the identity."""

    def embed(self, batch: list) -> list:
        return batch


def test_a_session_that_ended_leaves_no_state_behind_before_the_input_ends() -> None:
    """The entropy history of a session is kept while the session is open, and dropped once its last
    windows are judged: one ingest of many ended sessions stays as small as its open ones."""
    settings = Settings(ingest_batch_messages=2)
    analyzer, indexer = PassThroughAnalyzer(), SealingIndexer()
    p = Pipeline(settings, analyzer=analyzer, decomposer=OfflineDecomposer(), indexer=indexer)  # type: ignore[arg-type]
    sessions = [f"s{n}" for n in range(5)]
    messages = []
    for s in sessions:
        first = message(0, session=s, embedding=[1.0, 0.0])
        last = message(1, session=s, embedding=[0.0, 1.0]).model_copy(update={"ends_session": True})
        messages += [first, last]
    held: list[int] = []
    p.ingest_analyzed(
        iter(messages), IngestReport(), progress=lambda _: held.append(len(p.sessions.histories))
    )
    assert held == [0] * len(sessions)
    assert not p.sessions.buffers


def test_a_report_counted_on_another_thread_adds_up() -> None:
    """The writer thread of an ingest counts in its own report; merged, no count or item is lost."""
    main = IngestReport(read=5, accepted=5)
    main.rejected.append(Rejection(where="line 2", reason="text: empty"))
    written = IngestReport(accepted=-1, windows=3, windows_filtered=1, units=7, pii_scrubbed=2)
    written.rejected.append(Rejection(where="m4", reason="forgotten"))
    written.record(MessageOutcome(tenant_id="t", message_id="m1", outcome=Outcome.INDEXED, units=7))
    written.record(MessageOutcome(tenant_id="t", message_id="m2", outcome=Outcome.FAILED, reason="x"))
    written.filtered_scores.append(0.1)
    main.merge(written)
    assert (main.read, main.accepted, main.windows, main.windows_filtered, main.units) == (5, 4, 3, 1, 7)
    assert main.pii_scrubbed == 2 and main.filtered_scores == [0.1]
    assert [r.where for r in main.rejected] == ["line 2", "m4"]
    assert main.outcomes[Outcome.INDEXED] == 1 and [f.message_id for f in main.failures] == ["m2"]


def test_a_filtered_window_still_records_its_moments() -> None:
    """The filter drops a window whose statements add nothing new; the exchange it holds still happened,
    so its timeline line is indexed, and its messages are counted as filtered."""

    def said(i: int, role: Role, text: str) -> AnalyzedMessage:
        return message(i, entities=["bob"], embedding=[1.0, 0.0]).model_copy(
            update={"role": role, "text": text, "prose": text, "sentences": [Sentence(text=text, tokens=[])]}
        )

    first = Window(
        tenant_id="t1", session_id="s1", messages=[said(0, Role.USER, "Can you plan my week with Bob?")]
    )
    repeat = Window(
        tenant_id="t1",
        session_id="s1",
        messages=[
            said(1, Role.USER, "Can you plan my week with Bob again?"),
            said(2, Role.ASSISTANT, "Sure."),
        ],
    )
    report, indexer = IngestReport(), RecordingIndexer()
    pipeline(OfflineDecomposer(), indexer).run_windows([first, repeat], report)
    assert report.windows_filtered == 1 and report.outcomes[Outcome.FILTERED] == 2
    lines = [d.unit for d in indexer.indexed if d.unit.kind == MemoryKind.TIMELINE]
    assert any("s1:m1" in u.source_ids for u in lines)
    assert report.derived == len([d for d in indexer.indexed if d.unit.kind in DERIVED_KINDS])
