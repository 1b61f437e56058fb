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


def test_a_store_folder_made_by_a_command_is_owner_only_and_so_is_its_lock_whatever_the_umask(
    tmp_path: Path,
) -> None:
    import os

    from simplemem.cli.store import store_lock
    from simplemem.processors.stores.private import private_dir

    old = os.umask(0)
    try:
        store = private_dir(tmp_path / "made" / "store")
        with store_lock(store, "test"):
            pass
    finally:
        os.umask(old)
    assert mode(store) == 0o700 and mode(store / ".lock") == 0o600


def test_ingest_into_a_new_folder_makes_it_owner_only(tmp_path: Path) -> None:
    import os

    from typer.testing import CliRunner

    from simplemem.cli.main import app

    events = Path(__file__).resolve().parents[1] / "simplemem" / "cli" / "data" / "sample_conversation.jsonl"
    old = os.umask(0)
    try:
        done = CliRunner().invoke(app, ["ingest", str(events), "--store", str(tmp_path / "store")])
    finally:
        os.umask(old)
    assert done.exit_code == 0, done.output
    assert mode(tmp_path / "store") == 0o700 and mode(tmp_path / "store" / ".lock") == 0o600
