"""What the fault benchmark checks once the stream is drained: every turn's fate, the dead letters,
duplicate memories in the stores, and latency outside the fault windows.

A memory's content is (tenant, kind, text, source message ids): ids are a hash of it
(simplemem.schemas.memory.memory_id), so one content stored under two ids, or one id stored twice, is a
duplicate. The units topic lists every unit the workers indexed; each store is compared with it.
"""

from __future__ import annotations

import base64
import hashlib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson

from bench.fault_load import MALFORMED_KINDS, Record
from simplemem.schemas.memory import MemoryUnit
from simplemem.schemas.settings import Settings

Turn = tuple[str, str]  # (tenant, message id)
Content = tuple[str, str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Letter:
    """A dead letter, without its (possibly huge) original bytes: their digest and length instead."""

    stage: str
    code: str
    topic: str
    position: tuple[int, int]
    turn: Turn | None
    original_sha: str | None
    original_len: int

    @classmethod
    def parse(cls, value: bytes) -> Letter:
        d = orjson.loads(value)
        src = d.get("source") or {}
        original = base64.b64decode(d["original"]) if d.get("original") else None
        turn = (d["tenant_id"], d["message_id"]) if d.get("tenant_id") and d.get("message_id") else None
        return cls(
            stage=str(d.get("stage")),
            code=str(d.get("code")),
            topic=str(src.get("topic", "")),
            position=(int(src.get("partition", -1)), int(src.get("offset", -1))),
            turn=turn,
            original_sha=None if original is None else hashlib.sha1(original).hexdigest(),
            original_len=0 if original is None else len(original),
        )


def _sha(raw: bytes) -> str:
    return hashlib.sha1(raw).hexdigest()


@dataclass
class Fates:
    """Every acknowledged record's fate: outcomes of valid turns, dead letters of everything."""

    published: int = 0
    valid: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    valid_dead: Counter[str] = field(default_factory=Counter)  # valid turns dead-lettered, by code
    letters_by_code: Counter[str] = field(default_factory=Counter)  # distinct dead letters, stage/code
    lost: list[Turn] = field(default_factory=list)
    malformed: dict[str, list[int]] = field(default_factory=dict)  # kind -> [published, in DLQ]
    malformed_missing: list[str] = field(default_factory=list)
    malformed_codes: Counter[str] = field(default_factory=Counter)  # kind -> code found
    unmatched_letters: int = 0
    duplicate_letters: int = 0
    unacknowledged: int = 0
    republished: int = 0

    @property
    def malformed_found(self) -> tuple[int, int]:
        return sum(v[1] for v in self.malformed.values()), sum(v[0] for v in self.malformed.values())


def fates(records: list[Record], outcomes: dict[Turn, str], letters: list[Letter], turns_topic: str) -> Fates:
    """Match what was published with outcomes (by tenant and message id) and dead letters (by the
    record's position on the turns topic, else by its exact bytes, else by tenant and message id)."""
    f = Fates(malformed={k: [0, 0] for k in MALFORMED_KINDS})
    unique = list({(lt.topic, lt.position, lt.code): lt for lt in letters}.values())
    f.duplicate_letters = len(letters) - len(unique)  # one record dead-lettered again (a replay)
    by_position = {lt.position: lt for lt in unique if lt.topic == turns_topic}
    by_sha = {lt.original_sha: lt for lt in unique if lt.original_sha}
    by_turn = {lt.turn: lt for lt in unique if lt.turn}
    matched: set[int] = set()
    for lt in unique:
        f.letters_by_code[f"{lt.stage}/{lt.code}"] += 1
    for r in records:
        if r.position is None:
            f.unacknowledged += 1
            continue
        f.published += 1
        f.republished += r.sends > 1
        letter = by_position.get(r.position) or by_sha.get(_sha(r.raw)) or (r.turn and by_turn.get(r.turn))
        if letter is not None:
            matched.add(id(letter))
        if r.kind is not None:
            f.malformed[r.kind][0] += 1
            if letter is not None:
                f.malformed[r.kind][1] += 1
                f.malformed_codes[f"{r.kind}->{letter.code}"] += 1
            else:
                f.malformed_missing.append(f"{r.kind} at {r.position}")
            continue
        f.valid += 1
        assert r.turn is not None
        outcome = outcomes.get(r.turn)
        if outcome is not None:
            f.outcomes[outcome] += 1
        if letter is not None:
            f.valid_dead[letter.code] += 1
        if outcome is None and letter is None:
            f.lost.append(r.turn)
    f.unmatched_letters = sum(id(lt) not in matched for lt in unique)
    return f


def _content(tenant: str, kind: str, text: str, sources: Iterable[str]) -> Content:
    return (tenant, kind, text, tuple(sorted(sources)))


@dataclass
class StoreRows:
    """One store's memories against the units topic."""

    rows: int
    distinct_ids: int
    distinct_contents: int
    missing: int  # on the units topic, not in the store
    unlisted: int  # in the store, not on the units topic

    @property
    def duplicates(self) -> int:
        return self.rows - self.distinct_contents


def units_on_topic(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, tuple[str, Content]]:
    """Unit id -> (tenant, content): the latest record of each id (key) on the compacted units topic;
    a tombstone (an abstract absorbed by a larger one, a forgotten memory) removes its id."""
    units: dict[str, tuple[str, Content]] = {}
    for key, value in records:
        if value:
            u = orjson.loads(value)
            units[u["id"]] = (u["tenant_id"], _content(u["tenant_id"], u["kind"], u["text"], u["source_ids"]))
        elif key is not None:
            units.pop(key.decode(), None)
    return units


def topic_duplicates(units: dict[str, tuple[str, Content]]) -> StoreRows:
    """Units with the same content under different ids (ids should be a function of the content)."""
    return StoreRows(len(units), len(units), len({c for _, c in units.values()}), 0, 0)


def opensearch_rows(settings: Settings, units: dict[str, tuple[str, Content]]) -> StoreRows:
    """Every document of the run's index (scanned after a refresh), by id and by content."""
    from opensearchpy import OpenSearch, helpers

    client = OpenSearch(hosts=[settings.opensearch_endpoint], timeout=60)
    client.indices.refresh(index=settings.opensearch_index)
    docs: list[tuple[str, Content]] = []
    for hit in helpers.scan(
        client,
        index=settings.opensearch_index,
        query={"query": {"match_all": {}}, "_source": ["doc"]},
    ):
        u = MemoryUnit.model_validate(
            {**hit["_source"]["doc"], "id": hit["_id"], "tenant_id": hit["_routing"]}
        )
        docs.append((hit["_id"], _content(u.tenant_id, u.kind.value, u.text, u.source_ids)))
    ids = {i for i, _ in docs}
    return StoreRows(
        len(docs), len(ids), len({c for _, c in docs}), len(units.keys() - ids), len(ids - units.keys())
    )


def milvus_rows(settings: Settings, units: dict[str, tuple[str, Content]], tenants: set[str]) -> StoreRows:
    """Rows per tenant (count(*), which counts a primary key stored twice) and their ids; Milvus keeps
    no text, so contents come from the units topic (an id not on it counts as its own content)."""
    from pymilvus import MilvusClient

    client = MilvusClient(settings.milvus_server_uri)
    coll = settings.milvus_collection
    rows = 0
    ids: set[str] = set()
    for tenant in sorted(tenants):
        flt = f"tenant_id == {orjson.dumps(tenant).decode()}"
        counted = client.query(coll, filter=flt, output_fields=["count(*)"], consistency_level="Strong")
        rows += int(counted[0]["count(*)"]) if counted else 0
        it = client.query_iterator(coll, batch_size=1000, filter=flt, output_fields=["id"])
        while batch := it.next():
            ids.update(str(r["id"]) for r in batch)
        it.close()
    client.close()
    contents = {units[i][1] if i in units else ("?", "?", i, ()) for i in ids}
    return StoreRows(rows, len(ids), len(contents), len(units.keys() - ids), len(ids - units.keys()))


def in_window(t: float, windows: list[tuple[float, float]]) -> bool:
    return any(a <= t <= b for a, b in windows)


def latency(
    records: list[Record], seen: dict[Turn, float], windows: list[tuple[float, float]]
) -> dict[str, Any]:
    """Publish-to-queryable seconds of the fact-bearing turns sent outside every fault window."""
    lat, missing, excluded = [], 0, 0
    for r in records:
        if r.turn is None or not r.fact or r.sent_at is None or r.position is None:
            continue
        if in_window(r.sent_at, windows):
            excluded += 1
            continue
        t = seen.get(r.turn)
        if t is None:
            missing += 1
        else:
            lat.append(t - r.sent_at)
    out: dict[str, Any] = {"measured": len(lat), "never_queryable": missing, "in_fault_windows": excluded}
    if lat:
        out.update(p50=float(np.percentile(lat, 50)), p99=float(np.percentile(lat, 99)), max=float(max(lat)))
    return out
