"""``simplemem query`` on bad input: one error line (or an error line per bad batch line), nothing else lost."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from cli.errors import ExitCode
from cli.main import app
from tests.test_cli_store import empty_store
from tests.test_query_bounds import LONG_QUERY

pytestmark = pytest.mark.slow
runner = CliRunner()


def question(qid: str, text: str, **extra: str) -> dict[str, str]:
    return {"id": qid, "tenant_id": "acme", "query": text, **extra}


def one_line(text: str) -> bool:
    return text.strip() != "" and "\n" not in text.strip()


def test_a_query_over_the_length_limit_is_one_line_and_opens_no_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = runner.invoke(app, ["query", LONG_QUERY, "--tenant", "acme", "--store", str(store)])
    assert result.exit_code == ExitCode.USAGE
    assert one_line(result.stderr) and "SIMPLEMEM_MAX_QUERY_CHARS" in result.stderr, result.stderr
    assert not store.exists()


def test_a_batch_answers_around_lines_out_of_bounds(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    lines = [
        question("long", LONG_QUERY),
        question("past", "What happened last week?", as_of="0001-01-01T00:00:00Z"),
        question("future", "What is happening next week?", as_of="9999-12-31T00:00:00Z"),
        question("short", "Where does Dana work?"),
    ]
    questions.write_bytes(b"".join(orjson.dumps(q) + b"\n" for q in lines))
    store = empty_store(tmp_path / "store")
    result = runner.invoke(app, ["query", "--batch", str(questions), "--store", str(store)])
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert "over the limit" in rows[0]["error"] and one_line(rows[0]["error"])
    for row in rows[1:3]:
        assert "as_of" in row["error"] and one_line(row["error"])
    assert rows[3]["id"] == "short" and "context" in rows[3]
