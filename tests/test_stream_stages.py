"""The stream stages without Kafka: replays are skipped, windows and idle checks, failures dead-letter."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson
import pytest

from simplemem.processors.ingest.admission import FORGOTTEN_REASON
from simplemem.processors.ingest.analysis import MessageAnalyzer, ThreadPreparer
from simplemem.processors.ingest.decompose import OfflineDecomposer
from simplemem.processors.ingest.pipeline import Pipeline
from simplemem.processors.ingest.streaming import SessionState, TurnMemorizer, TurnScrubber
from simplemem.processors.stores.tombstones import SqliteTombstones
from simplemem.schemas.accounting import Outcome
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest, FailurePoint, ScrubbedRecord, SourceRef
from simplemem.schemas.window import AnalyzedMessage
from tests.helpers import message
from tests.test_accounting import RecordingIndexer

S1 = SessionKey("t1", "s1")


class NoVectors:
    """The MiniLM half is not under test here: messages keep the vectors they were built with."""

    def embed(self, messages: Sequence[AnalyzedMessage]) -> list[AnalyzedMessage]:
        return list(messages)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def stage(indexer: RecordingIndexer | None = None, clock: Callable[[], float] | None = None) -> TurnMemorizer:
    settings = Settings(session_idle_seconds=60, pause_seconds=20)
    pipeline = Pipeline(settings, NoVectors(), OfflineDecomposer(), indexer or RecordingIndexer())  # type: ignore[arg-type]
    return TurnMemorizer(pipeline, clock or Clock())


def turn(i: int, session: str = "s1", partition: int = 0) -> ScrubbedRecord:
    m = message(i, session=session, entities=[f"thing{i}"], embedding=[1.0, float(i)])
    return ScrubbedRecord(
        tenant_id=m.tenant_id,
        session_id=m.session_id,
        message=m,
        source=SourceRef(topic="turns", partition=partition, offset=i),
    )


def direct(call: Callable[[], None]) -> None:
    call()


def test_a_replayed_turn_is_skipped_by_its_position() -> None:
    memory = stage()
    first = memory.run([turn(0), turn(1), turn(2)], {}, direct)
    state = first.states[S1]
    assert state.buffer is not None and len(state.buffer.messages) == 3
    # after a restart the uncommitted tail comes again, followed by new turns
    again = memory.run([turn(1), turn(2), turn(3)], first.states, direct)
    assert again.duplicates == 2 and again.turns == 3
    state = again.states[S1]
    assert state.buffer is not None
    assert [m.message_id for m in state.buffer.messages] == ["s1:m0", "s1:m1", "s1:m2", "s1:m3"]


def test_duplicates_inside_one_batch_are_skipped_too() -> None:
    result = stage().run([turn(0), turn(1), turn(0)], {}, direct)
    assert result.duplicates == 1
    assert len(result.states[S1].buffer.messages) == 2  # type: ignore[union-attr]


def test_windows_close_across_batches_and_every_new_turn_gets_an_outcome() -> None:
    memory = stage()
    r1 = memory.run([turn(i) for i in range(6)], {}, direct)
    assert r1.outcomes == []
    r2 = memory.run([turn(i) for i in range(6, 12)], r1.states, direct)
    assert len(r2.windows) == 1
    assert sorted(o.message_id for o in r2.outcomes) == sorted(f"s1:m{i}" for i in range(10))
    state = r2.states[S1]
    assert state.buffer is not None and state.buffer.context == 5 and state.buffer.pending == 2
    assert set(state.sources) == {"s1:m10", "s1:m11"}, "decided turns leave the source map"
    assert len(state.history.vectors) == 10


def test_an_idle_check_closes_a_silent_session_only() -> None:
    clock = Clock()
    memory = stage(clock=clock)
    r1 = memory.run([turn(0), turn(1), turn(0, session="s2")], {}, direct)

    def check(after: float) -> ScrubbedRecord:
        return ScrubbedRecord.idle_check(S1, 1000.0 + after)

    early = memory.run([check(10)], r1.states, direct)
    assert early.windows == [] and early.states[S1].buffer is not None
    paused = memory.run([check(25)], r1.states, direct)  # past the pause: decided, the session stays open
    assert [o.message_id for o in paused.outcomes] == ["s1:m0", "s1:m1"]
    assert paused.states[S1].buffer is not None and paused.states[S1].buffer.pending == 0
    assert paused.states[S1].closed_at is None
    late = memory.run([check(65)], paused.states, direct)  # past the idle time: closed, nothing to decide
    assert late.outcomes == [] and late.states[S1].buffer is None and late.states[S1].closed_at == 1065.0
    assert late.states[SessionKey("t1", "s2")].buffer is not None, "another session is untouched"
    again = memory.run([check(65)], r1.states, direct)  # straight from open to idle: closed with its tail
    assert [o.message_id for o in again.outcomes] == ["s1:m0", "s1:m1"] and again.states[S1].buffer is None


def test_silences_are_read_from_the_records_so_a_replay_cuts_the_same_windows() -> None:
    """After a crash the batch comes again later and faster: the pause the first run saw between a
    turn and its idle check is the one between their stamps, whatever the clock says now."""
    records = [stamped(turn(0), 100.0), stamped(turn(1), 101.0), ScrubbedRecord.idle_check(S1, 130.0)]
    first = stage(clock=lambda: 130.0).run(records, {}, direct)
    replayed = stage(clock=lambda: 5000.0).run(records, {}, direct)
    decided = [o.message_id for o in first.outcomes]
    assert decided == ["s1:m0", "s1:m1"] == [o.message_id for o in replayed.outcomes]
    too_soon = [stamped(turn(0), 100.0), stamped(turn(1), 125.0), ScrubbedRecord.idle_check(S1, 130.0)]
    assert stage(clock=lambda: 5000.0).run(too_soon, {}, direct).outcomes == [], "5 s of silence is no pause"


def stamped(record: ScrubbedRecord, at: float) -> ScrubbedRecord:
    return record.model_copy(update={"scrubbed_at": at})


def test_a_closed_session_keeps_only_its_position_until_a_turn_reopens_it() -> None:
    clock = Clock()
    memory = stage(clock=clock)
    r1 = memory.run([turn(0), turn(1)], {}, direct)
    assert r1.states[S1].closed_at is None
    clock.now += 61
    closed = memory.run([ScrubbedRecord.idle_check(S1, clock.now)], r1.states, direct).states[S1]
    assert closed.closed_at == clock.now and closed.history.vectors == [] and closed.history.entities == []
    assert closed.source_offset == 1, "a replay of the applied turns is still skipped"
    replayed = memory.run([turn(1)], {S1: closed}, direct)
    assert replayed.duplicates == 1
    reopened = memory.run([turn(2)], {S1: closed}, direct).states[S1]
    assert reopened.closed_at is None and reopened.buffer is not None


def test_a_turn_that_ends_its_session_is_decided_at_once_and_closes_the_session() -> None:
    clock = Clock()
    memory = stage(clock=clock)
    last = turn(2)
    last.message = last.message.model_copy(update={"ends_session": True})  # type: ignore[union-attr]
    result = memory.run([turn(0), turn(1), last, turn(0, session="s2")], {}, direct)
    assert sorted(o.message_id for o in result.outcomes) == ["s1:m0", "s1:m1", "s1:m2"]
    closed = result.states[S1]
    assert closed.buffer is None and closed.closed_at == clock.now and closed.history.vectors == []
    assert result.states[SessionKey("t1", "s2")].buffer is not None, "another session is untouched"


def test_a_dead_letter_quotes_at_most_its_share_of_a_huge_record() -> None:
    from simplemem.processors.ingest.streaming import raw_dead_letter
    from simplemem.schemas.codec import dumps
    from simplemem.streams.topics import DLQ_RECORD_BYTES

    settings = Settings()
    huge = b"{" + b"x" * 900_000
    source = SourceRef(topic="turns", partition=0, offset=7)
    letter = raw_dead_letter(FailurePoint.VALIDATE, "invalid_json", "e" * 10**6, source, huge, settings)
    assert letter.truncated and letter.original_size == len(huge)
    assert base64.b64decode(letter.original or "") == huge[: settings.dlq_original_bytes]
    assert len(dumps(letter)) < DLQ_RECORD_BYTES


def test_an_index_failure_dead_letters_each_turn_with_its_position() -> None:
    memory = stage(indexer=RecordingIndexer(fail=True))
    result = memory.run([turn(i) for i in range(10)], {}, direct)
    assert {o.outcome for o in result.outcomes} == {Outcome.FAILED}
    assert len(result.dead) == 10 and result.units == []
    dead = {d.message_id: d for d in result.dead}
    assert dead["s1:m7"].stage == FailurePoint.INDEX and dead["s1:m7"].code == "store_error"
    assert dead["s1:m7"].source == SourceRef(topic="turns", partition=0, offset=7)
    assert "store down" in dead["s1:m7"].reason


def test_state_round_trips_through_its_table_encoding() -> None:
    result = stage().run([turn(0), turn(1)], {}, direct)
    state = result.states[S1]
    raw = orjson.dumps(state.model_dump(mode="json"))
    assert SessionState.model_validate_json(raw) == state


@pytest.fixture(scope="module")
def scrub(nlp, scrubber) -> TurnScrubber:  # type: ignore[no-untyped-def]
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.retrieval.buffer import InMemoryBuffer

    def embed(messages: list[AnalyzedMessage]) -> list[AnalyzedMessage]:
        for m in messages:
            m.embedding = [1.0, 0.0]
        return messages

    return TurnScrubber(Settings(), NlpPreparer(nlp, scrubber), embed, InMemoryBuffer(20, 3600, 100))


def test_scrub_dead_letters_bad_input_with_its_bytes_and_passes_the_rest(scrub: TurnScrubber) -> None:
    good = orjson.dumps(
        {
            "tenant_id": "t1",
            "session_id": "s1",
            "message_id": "m1",
            "speaker": "Dana",
            "role": "user",
            "text": "Call me at 212-555-0199, I moved to Denver last week.",
            "ts": "2026-03-02T10:00:00Z",
        }
    )
    bad = b'{"tenant_id": "t1", "text": '
    naive = good.replace(b"10:00:00Z", b"10:00:00")
    deep = good.replace(b'"m1"', b'"m2"')[:-1] + b', "metadata": ' + b'{"a":' * 299 + b"{}" + b"}" * 300
    src = [SourceRef(topic="turns", partition=3, offset=i) for i in range(4)]
    result = scrub.run([(src[0], bad), (src[1], good), (src[2], naive), (src[3], deep)])
    assert [d.code for d in result.dead] == ["invalid_json", "schema", "schema"]
    assert base64.b64decode(result.dead[0].original or "") == bad
    assert result.dead[1].source.offset == 2 and "ts" in result.dead[1].reason
    assert result.dead[2].source.offset == 3 and "metadata" in result.dead[2].reason
    [record] = result.records
    assert record.session_key == SessionKey("t1", "s1") and record.source == src[1]
    assert record.message is not None and "555-0199" not in record.message.model_dump_json()
    assert "Denver" in record.message.text
    assert record.message.embedding, "vectors are computed here, once"
    [buffered] = scrub.buffer.recent("t1")  # type: ignore[union-attr]
    assert buffered.message_id == "m1" and "555-0199" not in buffered.text, "queryable at once, scrubbed"


EVENT = {
    "tenant_id": "t1",
    "session_id": "s1",
    "speaker": "Ana",
    "role": "user",
    "ts": "2026-03-01T10:00:00Z",
}


class PickyPreparer:
    """Analyses any batch without the word "boom"; a batch with it fails as a whole."""

    def prepare(self, events: Sequence[ChatEvent]) -> list[AnalyzedMessage]:
        if any("boom" in e.text for e in events):
            raise ValueError("cannot analyse this")
        return [
            AnalyzedMessage(
                tenant_id=e.tenant_id,
                session_id=e.session_id,
                message_id=e.message_id,
                speaker=e.speaker,
                role=e.role,
                ts=e.ts,
                text=e.text,
                prose=e.text,
            )
            for e in events
        ]


def test_a_message_that_breaks_the_analysis_costs_only_itself() -> None:
    scrub = TurnScrubber(Settings(), PickyPreparer(), lambda messages: list(messages))  # type: ignore[arg-type]
    raw = [
        orjson.dumps({**EVENT, "message_id": f"m{i}", "text": text})
        for i, text in enumerate(["fine", "boom", "also fine"])
    ]
    result = scrub.run([(SourceRef(topic="turns", partition=0, offset=i), r) for i, r in enumerate(raw)])
    assert [r.message.message_id for r in result.records if r.message] == ["m0", "m2"]
    assert [(d.stage, d.message_id, d.source.offset) for d in result.dead] == [
        (FailurePoint.ANALYZE, "m1", 1)
    ]
    assert [(o.message_id, o.outcome) for o in result.failed] == [("m1", Outcome.FAILED)]


class NoSentences:
    """An embedder for messages without sentences: the batch it gets is empty."""

    dim = 2

    def encode(self, texts: list[str]) -> np.ndarray:
        return np.zeros((len(texts), self.dim), dtype=np.float32)


def test_both_drivers_drop_forgotten_turns_and_fail_a_broken_one_alone(tmp_path: Path) -> None:
    """One rule (processors/ingest/admission.py): the same batch loses the same turns either way."""
    stones = SqliteTombstones(tmp_path / "forgotten.sqlite")
    stones.add(DeletionRequest(tenant_id="t1", message_ids=["m2"], requested_at=datetime.now(UTC)))
    texts = ["fine", "boom", "forgotten", "also fine"]
    raw = [orjson.dumps({**EVENT, "message_id": f"m{i}", "text": text}) for i, text in enumerate(texts)]
    scrub = TurnScrubber(Settings(), PickyPreparer(), lambda m: list(m), tombstones=stones)  # type: ignore[arg-type]
    streamed = scrub.run([(SourceRef(topic="turns", partition=0, offset=i), r) for i, r in enumerate(raw)])
    analyzer = MessageAnalyzer(ThreadPreparer(PickyPreparer()), NoSentences())  # type: ignore[arg-type]
    pipeline = Pipeline(Settings(), analyzer, OfflineDecomposer(), RecordingIndexer(), tombstones=stones)  # type: ignore[arg-type]
    report = pipeline.ingest([(f"line {i}", r) for i, r in enumerate(raw)], close_sessions=False)
    assert streamed.forgotten == 1 and [r.where for r in report.rejected] == ["m2"]
    assert report.rejected[0].reason == FORGOTTEN_REASON
    assert [r.message.message_id for r in streamed.records if r.message] == ["m0", "m3"]
    assert streamed.failed == report.failures
    assert [(o.message_id, o.reason) for o in report.failures] == [
        ("m1", "analysis failed: cannot analyse this")
    ]
