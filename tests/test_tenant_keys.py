"""Tenants never share a key: ids that a delimiter would make collide stay apart everywhere.

Tenant ``a|b`` session ``c`` and tenant ``a`` session ``b|c`` (or ``a:b``/``a`` with ``:``) would be
one session if ids were joined with a delimiter. Each layer that keys by session is checked here:
the key type itself, validation at the edge, the embedded pipeline's windows and the buffer; the
Redis buffer, Kafka and replay are checked in the integration modules.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest

from simplemem.processors.retrieval.buffer import InMemoryBuffer
from simplemem.schemas.events import EventRejected, parse_event
from simplemem.schemas.keys import SessionKey, message_key
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.window import BufferedTurn

# pairs of (tenant, session) that a "|" or ":" join would merge
COLLIDING = [(("a|b", "c"), ("a", "b|c")), (("a:b", "x"), ("a", "b:x")), (("acme", "x"), ("acme|x", "x"))]

EVENT = {
    "tenant_id": "t",
    "session_id": "s",
    "message_id": "m",
    "speaker": "Ana",
    "role": "user",
    "text": "hi",
    "ts": "2026-03-01T10:00:00Z",
}


def _parse(**fields: str) -> object:
    return parse_event(orjson.dumps(EVENT | fields), max_text_chars=1000, max_id_chars=64)


@pytest.mark.parametrize(("one", "other"), COLLIDING)
def test_session_keys_of_colliding_ids_differ_and_round_trip(
    one: tuple[str, str], other: tuple[str, str]
) -> None:
    k1, k2 = SessionKey(*one), SessionKey(*other)
    assert k1.encode() != k2.encode()
    assert SessionKey.decode(k1.encode()) == k1 and SessionKey.decode(k2.encode()) == k2
    assert message_key(one[0], one[1]) != message_key(other[0], other[1])


def test_delimiters_are_valid_in_ids() -> None:
    event = _parse(tenant_id="a|b", session_id="b:c/2026-01-05", message_id="golden:m1")
    assert event.session_key == SessionKey("a|b", "b:c/2026-01-05")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("tenant_id", "acme\n"),
        ("tenant_id", "ac\rme"),
        ("tenant_id", "/etc/passwd"),
        ("tenant_id", "../other"),
        ("tenant_id", ".."),
        ("tenant_id", "-rf"),
        ("tenant_id", 'a"b'),
        ("session_id", "s 1"),
        ("session_id", "s\x00"),
        ("message_id", "m\\1"),
        ("speaker", "Ana\nBob"),
    ],
)
def test_ids_with_forbidden_characters_are_rejected_naming_the_field(field: str, value: str) -> None:
    with pytest.raises(EventRejected) as err:
        _parse(**{field: value})
    assert err.value.reason.startswith(field)


def test_a_query_for_a_malformed_tenant_is_rejected() -> None:
    with pytest.raises(ValueError, match="tenant_id"):
        QueryRequest(tenant_id="acme\n", query="hello")
    with pytest.raises(ValueError, match="tenant_id"):
        QueryRequest(tenant_id="/abs/path", query="hello")


def buffered_turn(tenant: str, session: str, mid: str) -> BufferedTurn:
    return BufferedTurn(
        tenant_id=tenant,
        session_id=session,
        message_id=mid,
        speaker="Ana",
        text=mid,
        ts=datetime(2026, 1, 1, tzinfo=UTC),
        vector=[1.0],
    )


@pytest.mark.parametrize(("one", "other"), COLLIDING)
def test_in_memory_buffer_keeps_colliding_sessions_apart(
    one: tuple[str, str], other: tuple[str, str]
) -> None:
    buf = InMemoryBuffer(turns=5, ttl_seconds=60, max_sessions=10)
    buf.push([buffered_turn(*one, "first"), buffered_turn(*other, "second")])
    assert [t.message_id for t in buf.recent(one[0])] == ["first"]
    assert [t.message_id for t in buf.recent(other[0])] == ["second"]


MALLORY = [
    "What is the code of your locker?",
    "I keep my climbing gear in locker 41 at the Northside gym.",
    "Did you lock it after training on Tuesday?",
    "I always lock it, the padlock came from my brother Viktor.",
]
TRENT = [
    "You will find the spare key under the blue flowerpot by the garage.",
    "The garage door opener is in the kitchen drawer next to the stove.",
    "Please water the tomato plants on the balcony every evening.",
    "Our neighbour Greta has a copy of the house key as well.",
]


def colliding_events(one: tuple[str, str], other: tuple[str, str]) -> list[dict[str, str]]:
    """Two tenants' sessions, interleaved: Mallory's in ``one``, Trent's in ``other``."""
    t0 = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    events = []
    for i, (m, t) in enumerate(zip(MALLORY, TRENT, strict=True)):
        for (tenant, session), speaker, text, prefix in ((one, "Mallory", m, "m"), (other, "Trent", t, "n")):
            ts = (t0 + timedelta(minutes=2 * i + (prefix == "n"))).isoformat()
            events.append(
                EVENT
                | {"tenant_id": tenant, "session_id": session, "message_id": f"{prefix}{i}"}
                | {"speaker": speaker, "text": text, "ts": ts}
            )
    return events


@pytest.mark.slow
def test_embedded_pipeline_keeps_colliding_tenants_apart(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        assert_tenants_apart(rt, ("a", "b|c"), ("a|b", "c"))
    finally:
        rt.close()


def assert_tenants_apart(rt, one: tuple[str, str], other: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Ingest the interleaved sessions through ``rt``: each tenant's memory holds only its own turns."""
    events = colliding_events(one, other)
    report = rt.pipeline.ingest([(str(i), orjson.dumps(e)) for i, e in enumerate(events)])
    assert report.accepted == len(events)
    assert_units_apart(rt.lexical.units_from_sources, one, other)


def assert_units_apart(units_from_sources, one: tuple[str, str], other: tuple[str, str]) -> None:  # type: ignore[no-untyped-def]
    every_id = [f"{p}{i}" for p in "mn" for i in range(len(MALLORY))]
    for tenant, mine, theirs in ((one[0], "m", "Trent"), (other[0], "n", "Mallory")):
        units = units_from_sources(tenant, every_id)
        assert units, f"tenant {tenant!r} has memories"
        for unit in units:
            assert unit.tenant_id == tenant
            assert all(s.startswith(mine) for s in unit.source_ids), unit
            assert theirs not in unit.text, unit.text


@pytest.mark.slow
def test_two_tenants_with_the_same_history_each_keep_all_of_it(tmp_path, settings) -> None:  # type: ignore[no-untyped-def]
    """Two frontends replaying the same conversation (same session and message ids, same words) under
    two tenants: each tenant keeps its own full memory in both stores, and neither write replaces the
    other's (a memory's id depends on its tenant; stores write by id)."""
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings, tmp_path)
    try:
        for tenant in ("acme", "globex"):
            events = colliding_events((tenant, "s"), (tenant, "t"))
            report = rt.pipeline.ingest([(str(i), orjson.dumps(e)) for i, e in enumerate(events)])
            assert report.accepted == len(events)
        every_id = [f"{p}{i}" for p in "mn" for i in range(len(MALLORY))]
        acme = rt.lexical.units_from_sources("acme", every_id)
        globex = rt.lexical.units_from_sources("globex", every_id)
        assert acme and sorted(u.text for u in acme) == sorted(u.text for u in globex)
        assert not {u.id for u in acme} & {u.id for u in globex}
        assert rt.lexical.count("acme") == rt.lexical.count("globex") == len(acme)
        assert rt.vectors.count("acme") == rt.vectors.count("globex") == len(acme)
    finally:
        rt.close()
