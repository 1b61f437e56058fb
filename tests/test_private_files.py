"""Store files are owner-only: the lexical store holds every tenant's text, the key store every key's
hash (other local users must not read them)."""

from __future__ import annotations

import stat
from pathlib import Path

from simplemem.api.keys import SqliteKeyStore
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_lexical_and_key_stores_are_created_owner_only(tmp_path: Path) -> None:
    store = tmp_path / "new-store"
    SqliteLexicalStore(store / "lexical.sqlite")
    SqliteKeyStore(store / "keys.sqlite")
    assert mode(store) == 0o700
    assert mode(store / "lexical.sqlite") == 0o600
    assert mode(store / "keys.sqlite") == 0o600


def test_a_folder_the_user_named_keeps_its_mode(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    SqliteLexicalStore(tmp_path / "lexical.sqlite")
    assert mode(tmp_path) == 0o755 and mode(tmp_path / "lexical.sqlite") == 0o600
