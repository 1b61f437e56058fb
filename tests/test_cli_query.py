"""``simplemem query`` on bad input: one error line (or an error line per bad batch line), nothing else lost."""

from __future__ import annotations

import codecs
import io
from pathlib import Path

import orjson
import pytest
from rich.console import Console
from typer.testing import CliRunner

from simplemem.cli.errors import ExitCode
from simplemem.cli.main import app
from simplemem.schemas.query import QueryResult
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


def test_a_batch_error_line_keeps_the_callers_id_and_a_bom_loses_no_line(tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_bytes(
        codecs.BOM_UTF8
        + orjson.dumps(question("first", "Where does Dana work?"))
        + b"\n"
        + orjson.dumps({"id": "bad-tenant", "tenant_id": "../etc", "query": "Where?"})
        + b"\n"
    )
    store = empty_store(tmp_path / "store")
    result = runner.invoke(app, ["query", "--batch", str(questions), "--store", str(store)])
    assert result.exit_code == 0, result.output
    first, bad = (orjson.loads(line) for line in result.stdout.splitlines())
    assert first["id"] == "first" and "context" in first, first
    assert bad["id"] == "bad-tenant" and "tenant_id" in bad["error"], bad


def test_control_characters_of_memories_are_escaped_on_a_terminal() -> None:
    from simplemem.cli.report import print_answer

    hostile = "Dana's title is \x1b]0;pwned\x07 and \x1b[2J\x9b31m done.\nNext line\tkept."
    result = QueryResult(
        id=None, query="q", complexity=0.1, k=3, memories=[], context=hostile, context_tokens=9
    )
    terminal = Console(file=io.StringIO(), force_terminal=True, width=200)
    print_answer(result, terminal)
    shown = terminal.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b]0;" not in shown and "\x1b[2J" not in shown and "\x9b" not in shown
    assert "\\x1b]0;pwned\\x07" in shown and "\\x9b31m" in shown
    assert "\nNext line" in shown, "newlines are kept"
    piped = Console(file=io.StringIO(), force_terminal=False, width=200)
    print_answer(result, piped)
    kept = piped.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b[2J" in kept and "\\x1b" not in kept, "a file or pipe gets the text unescaped"


@pytest.mark.parametrize("thresholds", ["nan", "0.3,inf", "abc", "1.5", "-0.1", ","])
def test_tune_threshold_takes_thresholds_in_0_1_only(
    thresholds: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import simplemem.runtime

    def no_models(*args: object, **kwargs: object) -> None:
        raise AssertionError("models loaded for invalid thresholds")

    monkeypatch.setattr(simplemem.runtime, "open_runtime", no_models)
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"{}\n")
    result = runner.invoke(app, ["tune-threshold", "--thresholds", thresholds, str(events)])
    assert result.exit_code == ExitCode.USAGE, result.output
    assert one_line(result.stderr) and "--thresholds" in result.stderr, result.stderr
