"""Pure pieces of the query service: mem0 filters and scopes, event payload shapes, golden matching."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi import HTTPException

from simplemem.api.app import _event_list
from simplemem.api.directory import Scope
from simplemem.api.mem0_scope import requested_scope
from simplemem.cli.golden import ended_sessions, found_in, percentile


def scope_of(filters: object) -> Scope:
    return requested_scope({"filters": filters})


def test_mem0_filters_become_a_scope() -> None:
    assert scope_of(None) == Scope()
    assert scope_of({"user_id": "alice"}) == Scope(user_id="alice")
    assert scope_of({"AND": [{"user_id": "a"}, {"run_id": "r"}]}) == Scope(user_id="a", run_id="r")
    assert scope_of({"AND": [], "user_id": "u2"}) == Scope(user_id="u2")  # the flat field is not dropped
    assert scope_of({"AND": [{"agent_id": "b"}], "user_id": "u"}) == Scope(user_id="u", agent_id="b")
    for bad in (
        {"AND": [{"user_id": "a"}], "user_id": "b"},
        {"OR": [{"user_id": "a"}]},
        {"user_id": {"in": ["a"]}},
        {"AND": ["x"]},
    ):
        with pytest.raises(HTTPException):
            scope_of(bad)


def test_a_scope_given_anywhere_narrows_the_request_and_two_values_are_refused() -> None:
    """mem0's older clients put the ids at the top level of the body or in the query string: each
    place narrows, and none is ignored (a request that said user_id must never see the tenant)."""
    assert requested_scope({"query": "q", "user_id": "sam"}) == Scope(user_id="sam")
    assert requested_scope({"agent_id": "a"}, {"run_id": "r"}) == Scope(agent_id="a", run_id="r")
    assert requested_scope({"app_id": "app"}) == Scope(app_id="app")
    assert requested_scope({"user_id": "sam", "filters": {"agent_id": "a"}}) == Scope(
        user_id="sam", agent_id="a"
    )
    assert requested_scope({"filters": '{"user_id": "sam"}'}) == Scope(user_id="sam")  # a query string's JSON
    assert requested_scope({"user_id": "sam"}, {"filters": {"user_id": "sam"}}) == Scope(user_id="sam")
    assert requested_scope({}, None, {"user_id": None}) == Scope()
    for bad in (
        ({"user_id": "sam", "filters": {"user_id": "kim"}},),
        ({"user_id": "sam"}, {"user_id": "kim"}),
        ({"user_id": 7},),
        ({"user_id": ""},),
        ({"agent_id": "x" * 257},),
        ({"run_id": "a\nb"},),
        ({"filters": "not json"},),
    ):
        with pytest.raises(HTTPException) as refused:
            requested_scope(*bad)
        assert refused.value.status_code in (409, 422)  # 409: the request contradicts itself


def test_scopes_are_sessions_that_never_collide_and_match_by_their_set_fields() -> None:
    a = Scope(user_id="a|b", agent_id="c")
    b = Scope(user_id="a", agent_id="b|c")
    assert a.session_id() != b.session_id()
    assert a.session_id() == Scope(user_id="a|b", agent_id="c").session_id()
    assert a.matches(Scope(user_id="a|b")) and a.matches(Scope())
    assert not a.matches(Scope(user_id="a|b", run_id="r"))
    assert not a.matches(Scope(app_id="app")) and Scope(app_id="app").session_id() != Scope().session_id()


def test_events_come_alone_in_a_list_or_under_events() -> None:
    one = {"message_id": "m", "text": "x"}
    assert _event_list(one) == [one]
    assert _event_list([one, one]) == [one, one]
    assert _event_list({"events": [one]}) == [one]
    with pytest.raises(HTTPException):
        _event_list("text")


def test_golden_matching_accepts_any_spelling_of_a_day() -> None:
    assert found_in("[2026-01-11]\nWent to Toronto", "toronto")
    assert found_in("on January 11th we met", "2026-01-11")
    assert not found_in("on January 12th we met", "2026-01-11")
    assert percentile([5.0, 1.0, 3.0], 50) == 3.0


def test_the_golden_check_ends_each_session_with_its_last_event() -> None:
    events = [
        {"session_id": "a", "message_id": "1"},
        {"session_id": "b", "message_id": "2"},
        {"session_id": "a", "message_id": "3"},
    ]
    marked = ended_sessions(events)
    assert [e.get("ends_session", False) for e in marked] == [False, True, True]
    assert [e["message_id"] for e in marked] == ["1", "2", "3"]


def test_a_batch_over_the_whole_quota_is_413_naming_the_quota_not_a_retry_for_ever() -> None:
    from simplemem.api.app import Service
    from simplemem.api.quotas import Quota, Quotas
    from simplemem.schemas.settings import Settings

    settings = Settings(api_ingest_rate="10/minute")
    service = Service(settings, None, None, Quotas(settings), None, None)  # type: ignore[arg-type]
    with pytest.raises(HTTPException) as refused:
        service.take(Quota.INGEST, "t", 11)
    assert refused.value.status_code == 413 and "SIMPLEMEM_API_INGEST_RATE" in str(refused.value.detail)
    service.take(Quota.INGEST, "t", 10)
    with pytest.raises(HTTPException) as later:
        service.take(Quota.INGEST, "t", 1)
    assert later.value.status_code == 429


def test_a_request_carrying_more_text_than_its_bound_is_413_naming_the_setting() -> None:
    import anyio

    from simplemem.api.app import Service
    from simplemem.api.auth import Caller
    from simplemem.api.quotas import Quotas
    from simplemem.schemas.settings import Settings

    settings = Settings(api_max_batch_chars=1000, api_ingest_text_rate="1500/minute")
    service = Service(settings, None, None, Quotas(settings), None, None)  # type: ignore[arg-type]
    event = {"session_id": "s", "speaker": "A", "role": "user", "ts": "2026-01-05T09:00:00Z"}
    batch = [{**event, "message_id": f"m{i}", "text": "x" * 400} for i in range(3)]
    with pytest.raises(HTTPException) as refused:
        anyio.run(service.accept_events, Caller("t", "k"), batch)
    assert refused.value.status_code == 413 and "SIMPLEMEM_API_MAX_BATCH_CHARS" in str(refused.value.detail)


def test_scopes_are_kept_hashed_and_scrubbed_matched_by_their_ids_and_forgotten(tmp_path: Path) -> None:
    """The directory is durable: end users' ids (e-mail addresses, names) are never in it as given."""
    import sqlite3

    from simplemem.api.directory import SqliteDirectory

    path = tmp_path / "api_keys.sqlite"
    directory = SqliteDirectory(path, lambda text: "<scrubbed>")
    frank = Scope(user_id="frank.user@example.com", agent_id="Dr Frank Nurse")
    sid = directory.record("t", frank)
    directory.record("t", Scope(user_id="kim.other@example.com"))
    with sqlite3.connect(path) as db:  # a scope written before scopes were hashed is rewritten on read
        db.execute(
            "INSERT INTO mem0_scopes VALUES ('t', 'legacy', ?)", ('{"user_id": "old.user@example.com"}',)
        )
    found = directory.sessions("t", Scope(user_id="frank.user@example.com"))
    assert list(found) == [sid] and found[sid].user_id == "<scrubbed>"
    assert list(directory.sessions("t", Scope(user_id="old.user@example.com"))) == ["legacy"]
    assert directory.sessions("t", Scope(agent_id="Dr Frank Nurse", user_id="kim.other@example.com")) == {}
    assert directory.forget("t", Scope(user_id="frank.user@example.com")) == 1
    assert len(directory.sessions("t", Scope())) == 2
    assert directory.forget("t", Scope()) == 2 and directory.sessions("t", Scope()) == {}
    on_disk = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    for raw in (b"frank.user", b"Frank Nurse", b"kim.other", b"old.user"):
        assert raw not in on_disk, raw


@pytest.mark.integration
def test_redis_scopes_are_kept_hashed_and_scrubbed_and_forgotten() -> None:
    import uuid

    import redis

    from simplemem.api.directory import RedisDirectory
    from simplemem.schemas.settings import Settings
    from tests.services import require

    settings = Settings(mode="services", redis_key_prefix=f"simplemem-scopes-{uuid.uuid4().hex[:8]}")
    require(settings)
    client = redis.Redis.from_url(settings.redis_endpoint)
    directory = RedisDirectory(client, settings.redis_key_prefix, lambda text: "<scrubbed>")
    try:
        directory.record("t", Scope(user_id="frank.user@example.com", agent_id="Dr Frank Nurse"))
        directory.record("t", Scope(user_id="kim.other@example.com"))
        stored = b"".join(
            v for k in client.scan_iter(f"{settings.redis_key_prefix}:*") for v in client.hvals(k)
        )
        assert b"frank.user" not in stored and b"Frank Nurse" not in stored and b"<scrubbed>" in stored
        assert len(directory.sessions("t", Scope(user_id="frank.user@example.com"))) == 1
        assert directory.forget("t", Scope(user_id="frank.user@example.com")) == 1
        assert directory.forget("t", Scope()) == 1 and directory.sessions("t", Scope()) == {}
    finally:
        for key in client.scan_iter(f"{settings.redis_key_prefix}:*"):
            client.delete(key)
