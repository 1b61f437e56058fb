"""Chat event validation: every rejection names the field and the problem."""

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from simplemem.schemas.events import EventRejected, parse_event
from simplemem.schemas.keys import SessionKey

GOOD = {
    "tenant_id": "t1",
    "session_id": "s1",
    "message_id": "m1",
    "speaker": "Jordan",
    "role": "user",
    "text": "My favorite color is blue.",
    "ts": "2026-01-05T09:02:00Z",
}


def nested_lists(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def parse(raw: object) -> object:
    return parse_event(
        raw if isinstance(raw, bytes | str) else orjson.dumps(raw), max_text_chars=1000, max_id_chars=64
    )


def test_valid_event() -> None:
    assert parse({**GOOD, "metadata": {"a": nested_lists(31)}})  # 32 levels with the metadata object
    event = parse(GOOD)
    assert event.session_key == SessionKey("t1", "s1")  # type: ignore[attr-defined]
    assert event.ts.utcoffset() is not None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        (b"{not json", "invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        ({k: v for k, v in GOOD.items() if k != "tenant_id"}, "tenant_id: field required"),
        ({**GOOD, "ts": "2026-01-05T09:02:00"}, "ts:"),
        ({**GOOD, "ts": "yesterday"}, "ts:"),
        ({**GOOD, "role": "robot"}, "role:"),
        ({**GOOD, "speaker": "   "}, "speaker:"),
        ({**GOOD, "text": "x" * 1001}, "text: 1001 characters"),
        ({**GOOD, "message_id": "m" * 65}, "message_id: over 64"),
        ({**GOOD, "surprise": 1}, "surprise:"),
        ({**GOOD, "text": 42}, "text:"),
        (orjson.dumps({**GOOD, "text": "CAFE"}).replace(b"CAFE", b"caf\xe9"), "not UTF-8 (byte 0xe9"),
        ({**GOOD, "ts": "0001-01-01T00:00:00+00:00", "text": "Last week I moved."}, "ts: Value error, 0001"),
        ({**GOOD, "ts": "1899-12-31T23:59:59+00:00"}, "SIMPLEMEM_EARLIEST_YEAR"),
        ({**GOOD, "ts": "9999-12-31T23:59:59-12:00"}, "ts: Value error, 9999"),
        ({**GOOD, "ts": (datetime.now(UTC) + timedelta(days=2)).isoformat()}, "SIMPLEMEM_MAX_FUTURE_DAYS"),
        ({**GOOD, "speaker": "J" * 201}, "speaker: String should have at most 200"),
        ({**GOOD, "metadata": {"blob": "x" * 20_000}}, "metadata: Value error, over 16384 bytes"),
        ({**GOOD, "tenant_id": "a b"}, "tenant_id: Value error, must contain"),
        # 300 levels: past what the JSON encoder takes (it raised, and the whole batch was lost)
        (
            orjson.dumps(GOOD)[:-1] + b', "metadata": ' + b'{"a":' * 299 + b"{}" + b"}" * 300,
            "metadata: Value error, nested over 32",
        ),
        ({**GOOD, "metadata": {"a": nested_lists(32)}}, "metadata: Value error, nested over 32"),
        ({**GOOD, "session_id": "s\n1"}, "session_id: Value error, must contain"),
    ],
)
def test_rejections_name_the_field(raw: object, fragment: str) -> None:
    with pytest.raises(EventRejected) as info:
        parse(raw)
    assert fragment in info.value.reason


def test_a_byte_order_mark_is_not_part_of_the_event() -> None:
    assert parse(b"\xef\xbb\xbf" + orjson.dumps(GOOD)) == parse(GOOD)
    assert parse("\ufeff" + orjson.dumps(GOOD).decode()) == parse(GOOD)


def test_times_within_the_bounds_are_accepted() -> None:
    for ts in ("1900-01-01T00:00:00+00:00", datetime.now(UTC).isoformat()):
        assert parse({**GOOD, "ts": ts}).ts == datetime.fromisoformat(ts)  # type: ignore[attr-defined]


def test_a_long_answer_of_an_assistant_is_accepted_and_a_truly_oversized_one_refused() -> None:
    from simplemem.schemas.settings import Settings

    limit = Settings().max_text_chars
    answer = "Here is a detailed plan:\n" + "\n".join(f"{i}. Step {i} of the plan." for i in range(1, 2500))
    assert 20_000 < len(answer) <= limit
    assert (
        parse_event(orjson.dumps({**GOOD, "text": answer}), max_text_chars=limit, max_id_chars=256).text
        == answer
    )
    with pytest.raises(EventRejected, match="text"):
        parse_event(orjson.dumps({**GOOD, "text": "x" * (limit + 1)}), max_text_chars=limit, max_id_chars=256)
