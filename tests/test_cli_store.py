"""The embedded store from the CLI: one process at a time, said at once; a query never creates one."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from simplemem.cli.errors import ExitCode
from simplemem.cli.main import app
from simplemem.cli.store import store_lock
from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore
from simplemem.runtime import LEXICAL_FILE
from tests.test_cli import event

pytestmark = pytest.mark.slow
runner = CliRunner()


def one_line(text: str) -> bool:
    return text.strip() != "" and "\n" not in text.strip()


def empty_store(folder: Path) -> Path:
    """A store as a first ingestion leaves it (its lexical file), without loading a model."""
    SqliteLexicalStore(folder / LEXICAL_FILE).close()
    return folder


def test_a_busy_store_is_said_in_one_line_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simplemem.runtime

    def no_models(*args: object, **kwargs: object) -> None:
        raise AssertionError("the runtime was opened on a busy store")

    monkeypatch.setattr(simplemem.runtime, "open_runtime", no_models)
    store = empty_store(tmp_path / "store")
    new = tmp_path / "new"  # being created by an ingest: only its lock so far
    new.mkdir()
    events = tmp_path / "events.jsonl"
    events.write_bytes(event(1, "I work as a pilot.") + b"\n")
    with store_lock(store, "simplemem ingest (a test)"), store_lock(new, "simplemem ingest (a test)"):
        for args in (
            ["ingest", str(events), "--store", str(store)],
            ["query", "Where does Dana work?", "--tenant", "acme", "--store", str(store)],
            ["query", "Where does Dana work?", "--tenant", "acme", "--store", str(new)],
        ):
            result = runner.invoke(app, args)
            assert result.exit_code == ExitCode.STORE_BUSY, result.output
            assert one_line(result.stderr) and "in use by pid" in result.stderr, result.stderr
            assert "(a test)" in result.stderr


def test_a_query_never_creates_a_store(tmp_path: Path) -> None:
    typo = tmp_path / "TYPO"
    result = runner.invoke(app, ["query", "Where does Dana work?", "--tenant", "acme", "--store", str(typo)])
    assert result.exit_code == ExitCode.ERROR
    assert one_line(result.stderr) and "no store at" in result.stderr, result.stderr
    assert not typo.exists()


def test_tune_threshold_writes_no_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simplemem.schemas.settings import get_settings

    events = tmp_path / "events.jsonl"
    events.write_bytes(b"".join(event(i, f"I moved to city number {i}.") + b"\n" for i in range(3)))
    monkeypatch.chdir(tmp_path)
    get_settings.cache_clear()
    try:
        result = runner.invoke(app, ["tune-threshold", "--thresholds", "0.3", str(events)])
    finally:
        get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    assert "discard rate" in result.stdout
    assert list(tmp_path.iterdir()) == [events], "the default store was created"


def test_a_store_in_another_file_format_is_refused_with_its_own_exit_code_before_any_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older lexical file, or the Milvus Lite vector file of the stores before ``vectors.sqlite``:
    every command on the store stops in one line that says how to rebuild it, exit code 6."""
    import sqlite3

    import simplemem.runtime

    def no_models(*args: object, **kwargs: object) -> None:
        raise AssertionError("the runtime was opened on a store in another format")

    monkeypatch.setattr(simplemem.runtime, "open_runtime", no_models)
    older = empty_store(tmp_path / "older")
    db = sqlite3.connect(older / LEXICAL_FILE)
    db.execute("PRAGMA user_version=15")
    db.commit()
    db.close()
    milvus = empty_store(tmp_path / "milvus")
    (milvus / "vectors.db").mkdir()
    events = tmp_path / "events.jsonl"
    events.write_bytes(event(1, "I work as a pilot.") + b"\n")
    for store in (older, milvus):
        for args in (
            ["ingest", str(events), "--store", str(store)],
            ["query", "Where does Dana work?", "--tenant", "acme", "--store", str(store)],
        ):
            result = runner.invoke(app, args)
            assert result.exit_code == ExitCode.STORE_FORMAT, result.output
            assert one_line(result.stderr), result.stderr
            assert "simplemem ingest" in result.stderr and "simplemem replay" in result.stderr
