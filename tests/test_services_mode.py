"""Services mode against the real OpenSearch, Milvus server and Redis started by simplemem/infra/.

Skipped when the services are not reachable, unless SIMPLEMEM_INTEGRATION=1 (as in CI), where an
unreachable service fails the run.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings
from tests.conftest import outside_data
from tests.services import store_settings
from tests.test_streams import wait_for
from tests.test_tenant_keys import COLLIDING, assert_tenants_apart, buffered_turn

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def services_settings() -> Iterator[Settings]:
    with store_settings("test", milvus_index_type="HNSW") as settings:
        yield settings


@pytest.fixture(scope="module")
def services_runtime(services_settings, tmp_path_factory, golden) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(services_settings, tmp_path_factory.mktemp("services"))
    rt.report = rt.pipeline.ingest([(str(i), orjson.dumps(e)) for i, e in enumerate(golden["events"])])
    yield rt
    rt.close()


def _ask(rt, q):  # type: ignore[no-untyped-def]
    return rt.retriever.query(
        QueryRequest(id=q["id"], tenant_id=q["tenant_id"], query=q["query"], as_of=q["as_of"])
    )


def _all_ids(rt, tenant: str) -> set[str]:  # type: ignore[no-untyped-def]
    units = rt.lexical.units_from_sources(tenant, [f"golden:m{i}" for i in range(1, 200)])
    return {u.id for u in units}


def test_same_memory_as_embedded(services_runtime, golden_runtime) -> None:  # type: ignore[no-untyped-def]
    assert services_runtime.report.units == golden_runtime.report.units
    assert _all_ids(services_runtime, "golden") == _all_ids(golden_runtime, "golden")
    assert services_runtime.vectors.count("golden") == golden_runtime.vectors.count("golden")


def test_same_retrieval_as_embedded(services_runtime, golden_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    from tests.test_golden import contains

    overlaps = []
    for q in golden["queries"]:
        a, b = _ask(services_runtime, q), _ask(golden_runtime, q)
        assert a.k == b.k and a.complexity == b.complexity
        ids_a, ids_b = {m.id for m in a.memories}, {m.id for m in b.memories}
        overlaps.append(len(ids_a & ids_b) / max(len(ids_a | ids_b), 1))
        for expected in q.get("expected", []):
            assert contains(a.context, expected), (q["query"], expected)
        # The best memory of one is among the first three of the other, whichever BM25 implementation
        # ranks them (OpenSearch's and FTS5's scores differ on near-ties, such as an old and a new city).
        assert a.memories[0].id in [m.id for m in b.memories[:3]], q["query"]
        assert b.memories[0].id in [m.id for m in a.memories[:3]], q["query"]
    assert sum(overlaps) / len(overlaps) >= 0.8


def test_a_later_session_reads_the_tenants_names_from_opensearch(services_runtime) -> None:  # type: ignore[no-untyped-def]
    from tests.test_known_names import assert_a_later_session_knows_kenji

    assert_a_later_session_knows_kenji(services_runtime, "names-services")


def test_tenant_isolation_in_both_stores(services_runtime) -> None:  # type: ignore[no-untyped-def]
    rt = services_runtime
    event = {
        "tenant_id": "intruder",
        "session_id": "x",
        "message_id": "x1",
        "speaker": "Eve",
        "role": "user",
        "text": "My favorite color is blue and I have a dog named Max.",
        "ts": "2026-03-01T10:00:00Z",
    }
    rt.pipeline.ingest([("x", orjson.dumps(event))])
    request = QueryRequest(tenant_id="intruder", query="What is my favorite color?")
    result = rt.retriever.query(request)
    assert result.memories and all(m.source_ids == ["x1"] for m in result.memories)
    qvec = rt.embedder.encode(["favorite color blue"])[0]
    from simplemem.processors.stores.protocols import SymbolicFilter

    golden_ids = _all_ids(rt, "golden")
    assert not {h.id for h in rt.vectors.search("intruder", qvec, 100, SymbolicFilter())} & golden_ids
    assert (
        not {h.id for h in rt.lexical.search("intruder", "favorite color blue dog", 100, SymbolicFilter())}
        & golden_ids
    )
    assert rt.lexical.get("intruder", sorted(golden_ids)) == []
    golden_sources = [f"golden:m{i}" for i in range(1, 200)]
    assert rt.lexical.sources_with_units("golden", golden_sources)  # the golden tenant has them
    assert rt.lexical.sources_with_units("intruder", golden_sources) == set()
    assert rt.lexical.sources_with_units("intruder", ["x1", "x2"]) == {"x1"}


def test_pii_is_absent_from_the_stores(services_runtime, golden) -> None:  # type: ignore[no-untyped-def]
    """Every stored document of the indexes (all of ``_source``) and every Redis key and value under
    the prefix, read whole: none holds a string the golden set says must be absent. (The Milvus
    collection holds no text: ids, tenant, status, days and vectors.)"""
    from opensearchpy.helpers import scan

    rt = services_runtime
    absent = [a for q in golden["queries"] for a in q.get("absent", [])]
    indexes = f"{rt.lexical.index},{rt.lexical.contexts}"  # the units and the contexts they share
    docs = [h["_source"] for h in scan(rt.lexical.client, index=indexes, query={"query": {"match_all": {}}})]
    assert len(docs) >= rt.lexical.count("golden") > 0, "every golden memory was read"
    assert any("hash" in d for d in docs), "the contexts were read too"
    stored = orjson.dumps(docs)
    redis = rt.buffer.r
    readers = {
        b"hash": lambda k: list(redis.hgetall(k).items()),  # field and value pairs (bytes keys)
        b"zset": lambda k: redis.zrange(k, 0, -1),
        b"string": redis.get,
    }
    for key in redis.scan_iter(match=f"{rt.settings.redis_key_prefix}*"):
        value = readers[redis.type(key)](key)
        stored += key + orjson.dumps(value, default=lambda b: b.decode("utf-8", "replace"))
    for secret in absent:
        assert secret.encode() not in stored, secret


def test_redis_buffer_trims_discards_and_scopes_by_tenant(services_settings) -> None:  # type: ignore[no-untyped-def]
    from datetime import UTC, datetime

    from simplemem.processors.retrieval.buffer import RedisBuffer
    from simplemem.schemas.window import BufferedTurn

    buf = RedisBuffer(
        services_settings.redis_endpoint, turns=2, ttl_seconds=60, prefix=services_settings.redis_key_prefix
    )

    def turn(i: int, tenant: str = "t") -> BufferedTurn:
        return BufferedTurn(
            tenant_id=tenant,
            session_id="s",
            message_id=f"m{i}",
            speaker="Ana",
            text=f"fact {i}",
            ts=datetime(2026, 1, 1, 0, i, tzinfo=UTC),
            vector=[1.0],
        )

    buf.push([turn(1), turn(2), turn(3), turn(4, tenant="t2")])
    assert sorted(t.message_id for t in buf.recent("t")) == ["m2", "m3"]
    buf.discard("t", "s", ["m2"])
    assert [t.message_id for t in buf.recent("t")] == ["m3"]
    assert [t.message_id for t in buf.recent("t2")] == ["m4"]
    assert 0 < buf.r.ttl(buf._keys("t", "s")[0]) <= 60
    buf.close()


@pytest.mark.parametrize(("one", "other"), COLLIDING)
def test_redis_buffer_keeps_colliding_sessions_apart(services_settings, one, other) -> None:  # type: ignore[no-untyped-def]
    from simplemem.processors.retrieval.buffer import RedisBuffer

    prefix = f"{services_settings.redis_key_prefix}-{uuid.uuid4().hex[:6]}"
    buf = RedisBuffer(services_settings.redis_endpoint, turns=5, ttl_seconds=60, prefix=prefix)
    try:
        buf.push([buffered_turn(*one, "first"), buffered_turn(*other, "second")])
        assert [t.message_id for t in buf.recent(one[0])] == ["first"]
        assert [t.message_id for t in buf.recent(other[0])] == ["second"]
        buf.discard(*one, ["first"])
        assert [t.message_id for t in buf.recent(other[0])] == ["second"]
    finally:
        buf.close()


def test_services_pipeline_keeps_colliding_tenants_apart(services_settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    rt = open_runtime(services_settings, tmp_path)
    try:
        assert_tenants_apart(rt, ("a", "b|c"), ("a|b", "c"))
    finally:
        rt.close()


def test_locomo_conversation_same_in_both_modes(services_settings, tmp_path_factory, settings) -> None:  # type: ignore[no-untyped-def]
    """A whole LoCoMo conversation: the same memory, and the same best memory for each question."""
    from bench.common import event_lines
    from bench.locomo_data import DEFAULT_DIR, load_conversation
    from simplemem.runtime import open_runtime

    conv = load_conversation(outside_data(DEFAULT_DIR / "30.json"))
    lines = event_lines([conv])
    runtimes = [
        open_runtime(s, tmp_path_factory.mktemp(f"locomo-{s.mode}")) for s in (settings, services_settings)
    ]
    try:
        reports = [rt.pipeline.ingest(lines) for rt in runtimes]
        assert reports[0].units == reports[1].units > 0
        sources = [t.dia_id for t in conv.turns]
        ids = [{u.id for u in rt.lexical.units_from_sources(conv.tenant_id, sources)} for rt in runtimes]
        assert ids[0] == ids[1]
        from bench.metrics import evidence_recall

        same_top, overlaps, recall = 0, [], ([], [])
        for q in conv.questions:
            request = QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of)
            a, b = (rt.retriever.query(request) for rt in runtimes)
            assert a.k == b.k
            got_a, got_b = {m.id for m in a.memories}, {m.id for m in b.memories}
            overlaps.append(len(got_a & got_b) / max(len(got_a | got_b), 1))
            same_top += bool(a.memories and b.memories and a.memories[0].id == b.memories[0].id)
            for side, result in enumerate((a, b)):
                cited = {s for m in result.memories for s in m.source_ids}
                recall[side].append(evidence_recall(q.evidence, cited))
        n = len(conv.questions)
        mean_a, mean_b = sum(recall[0]) / n, sum(recall[1]) / n
        print(
            f"same best memory {same_top / n:.2f}, id overlap {sum(overlaps) / n:.2f}, "
            f"evidence recall embedded {mean_a:.3f} services {mean_b:.3f}"
        )
        # BM25 differs in detail between SQLite FTS5 (Porter) and OpenSearch (english analyzer), so
        # ranks below the top differ a little; what the answers need must not.
        assert abs(mean_a - mean_b) <= 0.05
        assert same_top / n >= 0.7
        assert sum(overlaps) / n >= 0.6
    finally:
        for rt in runtimes:
            rt.close()


def test_every_unit_of_a_message_comes_back_however_many_it_has(services_runtime) -> None:  # type: ignore[no-untyped-def]
    """A lookup by message asks OpenSearch for a few units per message first, and for all of them
    when there are more."""
    from simplemem.processors.stores.opensearch_lexical import UNITS_PER_MESSAGE_GUESS
    from simplemem.schemas.memory import MemoryKind, MemoryUnit

    many = UNITS_PER_MESSAGE_GUESS * 3
    units = [
        MemoryUnit.build(
            tenant_id="chatty",
            text=f"Statement {i} of one long message.",
            kind=MemoryKind.FACT,
            source_ids=["long"],
            context_ids=["before"],
            stated_at="2026-01-05T10:00:00+00:00",
        )
        for i in range(many)
    ]
    lexical = services_runtime.lexical
    lexical.upsert(units)
    ids = {u.id for u in units}
    assert {u.id for u in lexical.units_from_sources("chatty", ["long"])} == ids
    assert {u.id for u in lexical.units_from_sources("chatty", ["long", "other"])} == ids
    assert {u.id for u in lexical.units_quoting("chatty", ["before"])} == ids


def test_opensearch_lists_a_tenants_names_up_to_a_limit(services_runtime) -> None:  # type: ignore[no-untyped-def]
    from tests.test_stores import unit

    lexical = services_runtime.lexical
    lexical.upsert([unit("named", "Jordan plays tennis with Marco", persons=["Jordan", "Marco"])])
    lexical.upsert([unit("named-other", "Priya lives in Toronto", persons=["Priya"])])
    assert lexical.all_names("named", 10) == ["jordan", "marco"]
    assert lexical.all_names("named", 1) is None, "more names than the limit"
    assert lexical.all_names("nobody", 10) == []


def test_an_edit_replaces_the_old_version_in_opensearch_and_milvus(services_settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime
    from tests.test_edits import EDITED, FILLER, ORIGINAL, assert_only_the_edit_is_remembered, event, lines

    first = [event(0, "Hello!"), event(1, ORIGINAL), *[event(i + 2, t) for i, t in enumerate(FILLER)]]
    rt = open_runtime(services_settings, tmp_path)
    try:
        rt.pipeline.ingest(lines(first))
        rt.pipeline.ingest(lines([event(len(first) + 5, EDITED, message_id="m1")]))
        assert_only_the_edit_is_remembered(rt)
    finally:
        rt.close()


def test_a_store_that_refuses_a_write_dead_letters_the_turns_after_the_retries(
    services_settings, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    """OpenSearch answers but refuses (a write-blocked index): not an outage, so the real retry
    wrapper gives up after its attempts and the turns become dead letters with the reason."""
    import time

    from simplemem.processors.ingest.streaming import TurnMemorizer
    from simplemem.processors.stores.retry import StoreRetry
    from simplemem.runtime import open_runtime
    from simplemem.schemas.accounting import Outcome
    from simplemem.schemas.events import ChatEvent
    from simplemem.schemas.stream import FailurePoint, ScrubbedRecord, SourceRef
    from tests.test_edits import FILLER, event

    rt = open_runtime(services_settings, tmp_path)
    client, index = rt.lexical.client, rt.lexical.index
    try:
        events = [
            ChatEvent.model_validate(event(i, text) | {"tenant_id": "refused"})
            for i, text in enumerate(FILLER)
        ]
        messages = rt.pipeline.analyzer.analyze(events)
        records = [
            ScrubbedRecord.turn(m, SourceRef(topic="turns", partition=0, offset=i))
            for i, m in enumerate(messages)
        ]
        client.indices.put_settings(index=index, body={"index.blocks.write": True})
        retry = StoreRetry(attempts=2, max_wait_seconds=0.1)
        started = time.monotonic()
        result = TurnMemorizer(rt.pipeline, time.time).run(records, {}, retry)
        assert time.monotonic() - started < 60, "a refusal is not waited out like an outage"
        failed = [o for o in result.outcomes if o.outcome == Outcome.FAILED]
        assert failed and all("index" in (o.reason or "") for o in failed)
        assert {d.message_id for d in result.dead} == {o.message_id for o in failed}
        assert {(d.stage, d.code) for d in result.dead} == {(FailurePoint.INDEX, "store_error")}
        assert rt.lexical.count("refused") == 0
    finally:
        client.indices.put_settings(index=index, body={"index.blocks.write": None})
        rt.close()


def test_the_milvus_store_waits_for_the_index_of_a_collection_another_process_is_making(
    services_settings,
) -> None:  # type: ignore[no-untyped-def]
    """A worker and two query replicas started together on an empty Milvus: one makes the collection,
    another finds it before its index exists and could not load it ("index not found"): the worker
    exited at its first start."""
    import threading

    from pymilvus import DataType, MilvusClient

    from simplemem.processors.stores.milvus_vectors import MilvusVectorStore

    name = f"{services_settings.milvus_collection}_ix"
    other = MilvusClient(services_settings.milvus_server_uri)
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=32)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=4)
    other.create_collection(name, schema=schema)  # the other process's first step: no index yet
    params = other.prepare_index_params()
    params.add_index("vector", metric_type="COSINE", index_type="FLAT")
    timer = threading.Timer(2.0, lambda: other.create_index(name, params))  # its second step
    timer.start()
    try:
        store = MilvusVectorStore(services_settings.milvus_server_uri, name, 4)
        assert str(other.get_load_state(name)["state"]) == "Loaded"
        store.close()
    finally:
        timer.join()
        other.drop_collection(name)
        other.close()


def test_the_milvus_store_loads_a_collection_the_server_no_longer_has_loaded(services_settings) -> None:  # type: ignore[no-untyped-def]
    """A restarted Milvus server may come back with the collection released: every write then failed
    with "collection not loaded" and the workers retried forever (bench.faults stalled). The store
    loads it and goes on."""
    import numpy as np

    from simplemem.processors.stores.milvus_vectors import MilvusVectorStore
    from simplemem.processors.stores.protocols import SymbolicFilter
    from simplemem.schemas.memory import MemoryKind, MemoryUnit

    store = MilvusVectorStore(
        services_settings.milvus_server_uri, f"{services_settings.milvus_collection}_rl", 4
    )
    try:
        first = MemoryUnit.build(
            tenant_id="t",
            kind=MemoryKind.FACT,
            text="alpha",
            source_ids=["m1"],
            stated_at="2026-03-01T10:00:00+00:00",
        )
        second = MemoryUnit.build(
            tenant_id="t",
            kind=MemoryKind.FACT,
            text="beta",
            source_ids=["m2"],
            stated_at="2026-03-01T10:01:00+00:00",
        )
        vectors = np.eye(4, dtype=np.float32)
        store.upsert([first], vectors[:1])
        store.client.release_collection(store.collection)
        store.upsert([second], vectors[1:2])
        store.client.release_collection(store.collection)
        hits = store.search("t", vectors[1], 10, SymbolicFilter())
        assert {h.id for h in hits} == {first.id, second.id}
        store.client.release_collection(store.collection)
        store.delete("t", [first.id])  # the forget path
        found = lambda: {h.id for h in store.search("t", vectors[1], 10, SymbolicFilter())}  # noqa: E731
        wait_for(lambda: found() == {second.id}, 15, "the deletion to be visible")  # bounded consistency
        store.client.release_collection(store.collection)
        store.delete_tenant("t")
        wait_for(lambda: found() == set(), 15, "the tenant's deletion to be visible")
    finally:
        store.client.drop_collection(store.collection)
        store.client.close()


def test_a_new_collection_gets_the_configured_number_of_tenant_partitions(services_settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.runtime import open_runtime

    settings = services_settings.model_copy(
        update={"milvus_partitions": 8, "milvus_collection": f"{services_settings.milvus_collection}_p8"}
    )
    rt = open_runtime(settings)
    try:
        assert len(rt.vectors.client.list_partitions(settings.milvus_collection)) == 8
    finally:
        rt.vectors.client.drop_collection(settings.milvus_collection)
        rt.close()


def test_opensearch_stores_a_shared_context_once_and_drops_it_with_its_last_unit(services_runtime) -> None:  # type: ignore[no-untyped-def]
    from simplemem.processors.stores.protocols import SymbolicFilter
    from tests.helpers import ANSWER, answer_units

    rt = services_runtime
    message = ANSWER
    units = answer_units("ctx-tenant", 3)
    rt.lexical.upsert(units)
    rt.lexical.upsert(units)  # a replay

    def contexts() -> int:
        rt.lexical.client.indices.refresh(index=rt.lexical.contexts)
        body = {"query": {"term": {"tenant_id": "ctx-tenant"}}}
        return int(rt.lexical.client.count(index=rt.lexical.contexts, body=body)["count"])

    assert contexts() == 1
    found = rt.lexical.search("ctx-tenant", "crampons", 10, SymbolicFilter())
    assert {h.id for h in found} == {u.id for u in units}  # a word of the context only
    assert rt.lexical.search("other-tenant", "crampons", 10, SymbolicFilter()) == []
    assert [u.context for u in rt.lexical.get("ctx-tenant", [units[0].id])] == [message]
    assert [u.context for u in rt.lexical.get("ctx-tenant", [units[0].id], with_context=False)] == [None]
    assert {
        u.context
        for u in rt.lexical.units_from_sources("ctx-tenant", units[0].source_ids, with_context=False)
    } == {None}
    rt.lexical.delete("ctx-tenant", [units[0].id, units[1].id])
    assert contexts() == 1
    rt.lexical.delete("ctx-tenant", [units[2].id])
    assert contexts() == 0


def test_opensearch_ranks_a_unit_on_its_own_words_and_its_contexts_together(services_runtime) -> None:  # type: ignore[no-untyped-def]
    """A statement whose own words and whose message both match ranks first; one matching by its
    message only, or by its own words only, still comes back; no more than the limit."""
    from simplemem.processors.stores.protocols import SymbolicFilter
    from tests.helpers import answer_units

    rt = services_runtime
    answer = answer_units("rank-tenant", 3)
    both = answer[0].model_copy(update={"id": "rank-both", "text": "assistant said crampons help on ice"})
    alone = answer_units("rank-tenant", 1, message="")[0].model_copy(
        update={"id": "rank-alone", "text": "crampons are on sale this week", "source_ids": ["rank:other"]}
    )
    rt.lexical.upsert([both, *answer[1:], alone])
    found = rt.lexical.search("rank-tenant", "crampons", 10, SymbolicFilter())
    assert found[0].id == "rank-both"
    assert {h.id for h in found} == {"rank-both", alone.id, *(u.id for u in answer[1:])}
    assert len(rt.lexical.search("rank-tenant", "crampons", 2, SymbolicFilter())) == 2


def test_a_search_that_reads_returns_its_hits_units_in_the_same_request(services_runtime) -> None:  # type: ignore[no-untyped-def]
    """``read=True``: each hit carries its unit as a read without context gives it; the stored
    document leaves out what the index holds beside it (id, tenant, message); no hit, no error."""
    from simplemem.processors.stores.protocols import SymbolicFilter
    from tests.helpers import answer_units

    rt = services_runtime
    units = answer_units("read-tenant", 3)
    rt.lexical.upsert(units)
    found = rt.lexical.search("read-tenant", "crampons", 10, SymbolicFilter(), read=True)
    assert {h.id for h in found} == {u.id for u in units}
    for hit in found:
        assert hit.unit == rt.lexical.get("read-tenant", [hit.id], with_context=False)[0]
        assert hit.unit is not None and hit.unit.tenant_id == "read-tenant" and hit.unit.context is None
    assert {h.unit for h in rt.lexical.search("read-tenant", "crampons", 10, SymbolicFilter())} == {None}
    stored = rt.lexical.client.get(index=rt.lexical.index, id=units[0].id, routing="read-tenant")
    assert not {"id", "tenant_id", "context"} & stored["_source"]["doc"].keys()
    assert rt.lexical.search("read-tenant", "zeppelin", 10, SymbolicFilter(), read=True) == []


def test_a_range_also_admits_what_was_said_within_it(services_runtime) -> None:  # type: ignore[no-untyped-def]
    """OpenSearch and Milvus read ``or_stated`` as the embedded stores do (tests/test_stores.py)."""
    import numpy as np

    from tests.test_stores import said_within, unit

    rt = services_runtime
    undated, dated = (
        unit("said-tenant", "Jordan played tennis"),
        unit("said-tenant", "Jordan skied", "2026-02-15"),
    )
    vectors = np.eye(rt.embedder.dim, dtype=np.float32)[:2]
    rt.lexical.upsert([undated, dated])
    rt.vectors.upsert([undated, dated], vectors)
    rt.vectors.flush()
    rt.lexical.client.indices.refresh(index=rt.lexical.index)
    said_within(
        lambda f: {h.id for h in rt.lexical.search("said-tenant", "Jordan", 10, f)}, undated.id, dated.id
    )
    said_within(
        lambda f: {h.id for h in rt.vectors.search("said-tenant", vectors[0], 10, f)}, undated.id, dated.id
    )


def test_reconciliation_repairs_milvus_drifting_from_opensearch(services_runtime) -> None:  # type: ignore[no-untyped-def]
    """A vector deleted and an orphan added in the real Milvus, behind the product's back."""
    from tests.reconcile_checks import reconcile_in_process

    reconcile_in_process(services_runtime, "golden")


def test_a_worker_reports_units_missing_from_milvus(services_settings, services_runtime) -> None:  # type: ignore[no-untyped-def]
    """Other tests of the module write to one store alone: their tenants' drift is theirs, so the
    check is on what deleting one of the golden tenant's vectors adds."""
    from simplemem.processors.lifecycle.reconcile import find_drift, repair
    from simplemem.streams.worker import Worker

    rt = services_runtime
    assert not find_drift("golden", rt.lexical, rt.vectors, 100).drifted
    worker = Worker(services_settings)
    units, tenants = worker.store_drift()
    [unit, *_] = [u for page in rt.lexical.iter_units("golden", 100) for u in page]
    rt.vectors.delete("golden", [unit.id])
    rt.vectors.flush()
    try:
        assert worker.store_drift() == (units + 1, tenants + 1)
    finally:
        repair(
            find_drift("golden", rt.lexical, rt.vectors, 100),
            rt.lexical,
            rt.vectors,
            lambda: rt.embedder,
            100,
        )
    assert worker.store_drift() == (units, tenants)
    worker.runtime.close()
