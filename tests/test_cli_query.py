"""``simplemem query`` on bad input: one error line (or an error line per bad batch line), nothing else lost."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from cli.errors import ExitCode
from cli.main import app
from tests.test_query_bounds import LONG_QUERY

pytestmark = pytest.mark.slow
runner = CliRunner()


def one_line(text: str) -> bool:
    return text.strip() != "" and "\n" not in text.strip()


def test_a_query_over_the_length_limit_is_one_line_and_opens_no_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    result = runner.invoke(app, ["query", LONG_QUERY, "--tenant", "acme", "--store", str(store)])
    assert result.exit_code == ExitCode.USAGE
    assert one_line(result.stderr) and "SIMPLEMEM_MAX_QUERY_CHARS" in result.stderr, result.stderr
    assert not store.exists()


def test_a_batch_answers_around_a_query_over_the_limit(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    lines = [
        {"id": "long", "tenant_id": "acme", "query": LONG_QUERY},
        {"id": "short", "tenant_id": "acme", "query": "Where does Dana work?"},
    ]
    questions.write_bytes(b"".join(orjson.dumps(q) + b"\n" for q in lines))
    result = runner.invoke(app, ["query", "--batch", str(questions), "--store", str(tmp_path / "s")])
    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert "over the limit" in rows[0]["error"] and one_line(rows[0]["error"])
    assert rows[1]["id"] == "short" and "context" in rows[1]
