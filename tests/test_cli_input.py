"""``simplemem ingest`` input: pipes and standard input read once; the exit code says what was stored."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from cli.main import app
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


def test_a_missing_input_is_one_line(tmp_path: Path) -> None:
    result = runner.invoke(app, ["ingest", str(tmp_path / "nope.jsonl"), "--store", str(tmp_path / "s")])
    assert result.exit_code == 1
    assert result.stderr.strip().count("\n") == 0 and "nope.jsonl" in result.stderr
    assert not (tmp_path / "s").exists(), "nothing is created for an input that cannot be read"
