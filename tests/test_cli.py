"""The ``simplemem`` CLI: malformed input is rejected with reasons and the rest is ingested; JSON contract."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from simplemem.cli.errors import ExitCode
from simplemem.cli.main import app

pytestmark = pytest.mark.slow
runner = CliRunner()


def event(i: int, text: str, **extra: object) -> bytes:
    base = {
        "tenant_id": "acme",
        "session_id": "s1",
        "message_id": f"m{i}",
        "speaker": "Dana",
        "role": "user",
        "text": text,
        "ts": f"2026-02-0{1 + i % 8}T10:00:00+00:00",
    }
    base.update(extra)
    return orjson.dumps({k: v for k, v in base.items() if v is not None})


def test_malformed_lines_are_rejected_and_the_rest_ingested(tmp_path: Path) -> None:
    lines = [
        event(1, "I work as a pilot for Skyline Air."),
        b"{this is not json",
        event(2, "hello", tenant_id=None),
        event(3, "I live in Oslo.", ts="2026-02-03T10:00:00"),
        event(4, "x " * 600_000),
        event(5, "My favourite food is ramen."),
    ]
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    store = tmp_path / "store"
    result = runner.invoke(app, ["ingest", str(events), "--store", str(store), "--json"])
    assert result.exit_code == ExitCode.INCOMPLETE, result.output
    report = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert report["read"] == 6 and report["accepted"] == 2
    reasons = {r["where"]: r["reason"] for r in report["rejected"]}
    assert "invalid JSON" in reasons["line 2"]
    assert "tenant_id: field required" in reasons["line 3"]
    assert reasons["line 4"].startswith("ts:")
    assert "text:" in reasons["line 5"] and "over the limit" in reasons["line 5"]
    assert sum(report["outcomes"].values()) == 2

    questions = tmp_path / "q.jsonl"
    questions.write_bytes(
        orjson.dumps({"id": "q1", "tenant_id": "acme", "query": "What is Dana's job?"})
        + b"\n"
        + b"not json\n"
        + orjson.dumps(
            {
                "id": "q2",
                "tenant_id": "acme",
                "query": "What food does Dana like?",
                "as_of": "2026-03-01T00:00:00+00:00",
            }
        )
        + b"\n"
    )
    result = runner.invoke(app, ["query", "--batch", str(questions), "--store", str(store), "--json"])
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.stdout.strip().splitlines()]
    assert [r["id"] for r in rows] == ["q1", None, "q2"]
    assert "error" in rows[1]
    first = rows[0]
    assert set(first) == {"id", "query", "complexity", "k", "memories", "context", "context_tokens"}
    assert set(first["memories"][0]) == {
        "id",
        "text",
        "kind",
        "event_time",
        "stated_at",
        "source_ids",
        "score",
    }
    assert "pilot" in first["context"]
    assert "ramen" in rows[2]["context"]
    assert first["memories"][0]["source_ids"] == ["m1"]


def test_lazy_migration_on_first_query_in_embedded_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from simplemem.schemas.settings import get_settings

    legacy = tmp_path / "legacy"
    legacy.mkdir()
    (legacy / "acme.jsonl").write_bytes(event(1, "I work as a pilot for Skyline Air.") + b"\n")
    monkeypatch.setenv("SIMPLEMEM_LEGACY_HISTORY_DIR", str(legacy))
    get_settings.cache_clear()
    try:
        store = str(tmp_path / "store")
        first = runner.invoke(
            app, ["query", "Where does Dana work?", "--tenant", "acme", "--store", store, "--json"]
        )
        assert first.exit_code == 0, first.output
        assert orjson.loads(first.stdout)["migration"] == "in_progress"
        second = runner.invoke(
            app, ["query", "Where does Dana work?", "--tenant", "acme", "--store", store, "--json"]
        )
        answer = orjson.loads(second.stdout)
        assert "migration" not in answer and "Skyline Air" in answer["context"]
        other = runner.invoke(
            app, ["query", "Where does Dana work?", "--tenant", "globex", "--store", store, "--json"]
        )
        assert "migration" not in orjson.loads(other.stdout)
    finally:
        get_settings.cache_clear()


def test_serve_refuses_several_processes_on_an_embedded_store(tmp_path: Path) -> None:
    result = runner.invoke(app, ["serve", "--workers", "2", "--store", str(tmp_path / "store")])
    assert result.exit_code != 0
    assert "needs SIMPLEMEM_MODE=services" in result.output
    assert not (tmp_path / "store").exists(), "refused before anything was opened"
