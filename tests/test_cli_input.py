"""``simplemem ingest`` input: pipes and standard input read once; the exit code says what was stored."""

from __future__ import annotations

import codecs
import os
import threading
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from simplemem.cli.errors import ExitCode
from simplemem.cli.main import app
from tests.test_cli import event

pytestmark = pytest.mark.slow
runner = CliRunner()

EVENTS = [
    event(1, "I work as a pilot for Skyline Air."),
    event(2, "My favourite food is ramen."),
    event(3, "I live in Oslo with my two cats."),
]


def report_of(stdout: str) -> dict[str, object]:
    report: dict[str, object] = orjson.loads(stdout.strip().splitlines()[-1])
    return report


def test_a_pipe_is_read_once(tmp_path: Path) -> None:
    """``<(cat events.jsonl)`` and ``/dev/stdin`` are pipes: a first pass counting lines left none."""
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as fh:
            fh.write(b"\n".join(EVENTS) + b"\n")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        result = runner.invoke(
            app, ["ingest", f"/dev/fd/{read_end}", "--store", str(tmp_path / "store"), "--json"]
        )
    finally:
        writer.join(5)
        os.close(read_end)
    assert result.exit_code == 0, result.output
    report = report_of(result.stdout)
    assert report["read"] == len(EVENTS) and report["accepted"] == len(EVENTS)


def test_dash_reads_standard_input(tmp_path: Path) -> None:
    result = runner.invoke(
        app,
        ["ingest", "-", "--store", str(tmp_path / "store"), "--json"],
        input=b"\n".join(EVENTS) + b"\n",
    )
    assert result.exit_code == 0, result.output
    assert report_of(result.stdout)["accepted"] == len(EVENTS)


def test_a_clean_ingest_writes_nothing_on_stderr(tmp_path: Path) -> None:
    """Redirected stderr (a log, a pipe) gets no progress bar residue: only problems go there."""
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(EVENTS) + b"\n")
    result = runner.invoke(app, ["ingest", str(events), "--store", str(tmp_path / "store")])
    assert result.exit_code == 0, result.output
    assert result.stderr == "" and "accepted" in result.stdout


def test_a_missing_input_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "nope.jsonl" in result.stderr
    assert not (tmp_path / "s").exists(), "nothing is created for an input that cannot be read"


def ingest_file(tmp_path: Path, lines: list[bytes]) -> tuple[int, dict[str, object]]:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"\n".join(lines) + b"\n")
    result = runner.invoke(app, ["ingest", str(events), "--store", str(tmp_path / "store"), "--json"])
    return result.exit_code, report_of(result.stdout)


def test_a_bom_keeps_the_first_line_and_bad_bytes_are_named(tmp_path: Path) -> None:
    latin1 = orjson.loads(EVENTS[1]) | {"message_id": "m9", "text": "CAFE"}
    code, report = ingest_file(
        tmp_path, [codecs.BOM_UTF8 + EVENTS[0], orjson.dumps(latin1).replace(b"CAFE", b"caf\xe9"), EVENTS[2]]
    )
    assert code == ExitCode.INCOMPLETE
    assert report["accepted"] == 2
    (rejected,) = report["rejected"]  # type: ignore[misc]
    assert rejected["where"] == "line 2"
    assert "UTF-8" in rejected["reason"] and "0xe9" in rejected["reason"], rejected
    assert "surrogates" not in rejected["reason"]


def test_a_line_with_metadata_nested_too_deep_is_rejected_alone(tmp_path: Path) -> None:
    deep = orjson.dumps(orjson.loads(EVENTS[1]) | {"message_id": "deep"})[:-1]
    deep += b', "metadata": ' + b'{"a":' * 299 + b"{}" + b"}" * 300
    code, report = ingest_file(tmp_path, [EVENTS[0], deep, EVENTS[2]])
    assert code == ExitCode.INCOMPLETE and report["accepted"] == 2
    (rejected,) = report["rejected"]  # type: ignore[misc]
    assert rejected["where"] == "line 2" and "metadata" in rejected["reason"], rejected


def test_nothing_ingested_is_an_exit_code_of_its_own(tmp_path: Path) -> None:
    code, report = ingest_file(tmp_path, [b"{not json", b"[1, 2]"])
    assert code == ExitCode.NOTHING_INGESTED and report["accepted"] == 0


def test_failed_messages_are_not_success(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from simplemem.processors.ingest.decompose import OfflineDecomposer

    def broken(self: object, window: object) -> None:
        raise RuntimeError("decomposer down")

    monkeypatch.setattr(OfflineDecomposer, "decompose", broken)
    code, report = ingest_file(tmp_path, EVENTS)
    assert report["outcomes"] == {"failed": len(EVENTS)}
    assert code == ExitCode.NOTHING_INGESTED
