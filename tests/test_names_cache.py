"""A query process keeps each tenant's person names for a few seconds (services mode): what it
recognises, for how long, per tenant, and the fallback for a tenant with too many names."""

from __future__ import annotations

from pathlib import Path

import pytest

from simplemem.processors.retrieval.names import TenantNames
from simplemem.processors.stores.protocols import names_matching
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.schemas.settings import Settings
from tests.test_stores import unit

pytestmark = pytest.mark.slow


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_names_matching_takes_whole_names_and_abbreviations() -> None:
    names = ["melanie", "mel", "marco", "tom"]
    assert names_matching(names, ["Mel", "Nobody"]) == ["mel", "melanie"]
    assert names_matching(names, ["Ma"]) == [], "two letters abbreviate nothing"
    assert names_matching(names, ["tom", "Marc"]) == ["marco", "tom"]


def test_names_are_kept_for_the_ttl_per_tenant(tmp_path: Path) -> None:
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    store.upsert([unit("t1", "Jordan plays tennis with Marco", persons=["Jordan", "Marco"])])
    store.upsert([unit("t2", "Priya lives in Toronto", persons=["Priya"])])
    clock = Clock()
    names = TenantNames(store, Settings(names_cache_seconds=30), clock)
    assert names.known("t1", ["Marco", "Priya"]) == ["marco"], "another tenant's names are not this one's"
    assert names.known("t2", ["Marco", "Priya"]) == ["priya"]
    store.upsert([unit("t1", "Ines brought a bowl", persons=["Ines"])])
    clock.now += 29
    assert names.known("t1", ["Ines"]) == [], "kept: the store is not asked again within the TTL"
    clock.now += 2
    assert names.known("t1", ["Ines", "Jord"]) == ["ines", "jordan"]
    store.close()


def test_a_tenant_with_too_many_names_is_asked_per_query(tmp_path: Path) -> None:
    store = SqliteLexicalStore(tmp_path / "lex.sqlite")
    store.upsert([unit("t1", f"Person {i} came", persons=[f"Person{i}"]) for i in range(4)])
    names = TenantNames(store, Settings(names_cache_seconds=30, names_cache_max_names=3), Clock())
    assert names.known("t1", ["Person1"]) == ["person1"]
    store.upsert([unit("t1", "Ines brought a bowl", persons=["Ines"])])
    assert names.known("t1", ["Ines"]) == ["ines"], "not kept: asked again"
    assert store.all_names("t1", 3) is None and store.all_names("t1", 10) == sorted(
        ["ines", *(f"person{i}" for i in range(4))]
    )
    store.close()
