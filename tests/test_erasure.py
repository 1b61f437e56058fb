"""Where the erasure tombstones go: a turn and its tombstones must share key and partition, or Kafka's
compaction never brings them together and the forgotten turn stays in the kept history."""

from __future__ import annotations

from datetime import UTC, datetime

from aiokafka.partitioner import DefaultPartitioner

from simplemem.schemas.keys import SessionKey, turn_key
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import DeletionRequest, ScrubbedRecord
from simplemem.schemas.window import AnalyzedMessage
from simplemem.streams.erasure import request_tombstones, roll_markers, turn_output, turn_tombstones

SETTINGS = Settings(topic_partitions=8)


def turn(tenant: str, session: str, message: str) -> ScrubbedRecord:
    msg = AnalyzedMessage.model_validate(
        {
            "tenant_id": tenant,
            "session_id": session,
            "message_id": message,
            "speaker": "Ann",
            "role": "user",
            "text": "hi",
            "ts": "2026-03-01T10:00:00+00:00",
        }
    )
    return ScrubbedRecord(tenant_id=tenant, session_id=session, message=msg)


def test_a_turn_is_keyed_by_itself_and_stays_on_its_sessions_partition() -> None:
    """The sessions table (Faust's partitioner on the session key) and the memorize agent must
    read a session's turns from one partition, in order, whatever the turn's own key hashes to."""
    partitions = list(range(SETTINGS.topic_partitions))
    for i in range(50):
        record = turn("acme", f"s{i}", f"m{i}")
        topic, key, value, *where = turn_output(record, SETTINGS)
        assert (topic, key) == ("scrubbed", turn_key("acme", f"m{i}")) and value
        assert where == [DefaultPartitioner()(SessionKey("acme", f"s{i}").encode(), partitions, [])]


def test_a_turn_key_never_equals_a_session_key() -> None:
    """Idle checks are keyed by session on the same compacted topic: a session named like a message
    must not make compaction drop a turn."""
    assert turn_key("acme", "x") != SessionKey("acme", "x").encode()


def test_a_forgotten_message_is_tombstoned_where_its_turn_is() -> None:
    record = turn("acme", "s1", "m1")
    _, key, _, partition = turn_output(record, SETTINGS)  # type: ignore[misc]
    request = DeletionRequest(
        tenant_id="acme", message_ids=["m1"], requested_by="test", requested_at=datetime.now(UTC)
    )
    tombstones = request_tombstones(request, SETTINGS)  # the request does not name the session
    assert ("scrubbed", key, None, partition) in tombstones
    assert {t[3] for t in tombstones} == set(range(SETTINGS.topic_partitions))  # type: ignore[misc]
    assert turn_tombstones([record], SETTINGS) == [("scrubbed", key, None, partition)]


def test_roll_markers_reach_every_partition_of_every_compacted_topic() -> None:
    markers = roll_markers(SETTINGS)
    assert {(m[0], m[3]) for m in markers} == {  # type: ignore[misc]
        (t, p) for t in ("scrubbed", "units", "outcomes") for p in range(SETTINGS.topic_partitions)
    }
    assert all(m[2] is None for m in markers)
