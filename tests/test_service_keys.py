"""Tenant keys: stored hashed, checked by hash, revocable; the tenant comes from the key."""

from __future__ import annotations

from pathlib import Path

from simplemem.api.keys import SqliteKeyStore, authenticate, new_key, split_key


def test_a_key_authenticates_as_its_tenant_and_only_its_hash_is_stored(tmp_path: Path) -> None:
    store = SqliteKeyStore(tmp_path / "keys.sqlite")
    key, record = new_key("acme")
    store.add(record)
    found = authenticate(store, key)
    assert found is not None and found.tenant_id == "acme" and found.key_id == record.key_id
    secret = split_key(key)[1]  # type: ignore[index]
    store.close()
    assert secret.encode() not in (tmp_path / "keys.sqlite").read_bytes()
    assert secret not in record.model_dump_json()


def test_wrong_secret_malformed_and_unknown_keys_are_refused(tmp_path: Path) -> None:
    store = SqliteKeyStore(tmp_path / "keys.sqlite")
    key, record = new_key("acme")
    store.add(record)
    other, _ = new_key("acme")  # never added
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    assert authenticate(store, tampered) is None
    assert authenticate(store, other) is None
    assert authenticate(store, "not a key") is None
    assert authenticate(store, f"smk_{record.key_id}_") is None


def test_revoked_keys_are_refused_and_listed_as_revoked(tmp_path: Path) -> None:
    store = SqliteKeyStore(tmp_path / "keys.sqlite")
    key, record = new_key("acme")
    store.add(record)
    _, kept = new_key("beta")
    store.add(kept)
    assert store.revoke(record.key_id)
    assert authenticate(store, key) is None
    assert [r.revoked for r in store.list("acme")] == [True]
    assert [r.key_id for r in store.list("beta")] == [kept.key_id]
    assert not store.revoke("no-such-key")
