"""Batch ingestion on several cores: spaCy and Presidio in a child process, the same memory as one
process makes, and a child that dies replaced."""

from __future__ import annotations

import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import orjson
import psutil
import pytest
from typer.testing import CliRunner

from simplemem.cli.main import app
from simplemem.processors.ingest.nlp_process import ProcessPreparer
from simplemem.runtime import Runtime, build_nlp_preparer, open_runtime
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.settings import Settings, get_settings

runner = CliRunner()


@pytest.mark.parametrize(
    ("bulk", "enabled", "cores", "parallel"),
    [(True, True, 2, True), (True, True, 1, False), (True, False, 2, False), (False, True, 2, False)],
)
def test_only_a_batch_run_on_several_cores_goes_parallel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, bulk: bool, enabled: bool, cores: int, parallel: bool
) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    rt = Runtime(Settings(ingest_parallel=enabled), tmp_path, bulk)
    assert rt.parallel is parallel


def _events() -> list[ChatEvent]:
    texts = [
        ("user", "I moved to Lisbon in March and my phone is 415-555-0132."),
        ("assistant", "Congratulations on the move! Lisbon has great tram lines."),
        ("user", "My sister Ana Costa visits every Tuesday; she works as a nurse."),
        ("assistant", "That sounds lovely. Tuesdays are quieter in the old town."),
    ]
    return [
        ChatEvent.model_validate(
            {
                "tenant_id": "t1",
                "session_id": "s1",
                "message_id": f"m{i}",
                "speaker": "Ana" if role == "user" else "Assistant",
                "role": role,
                "text": text,
                "ts": f"2026-03-0{i + 1}T10:00:00+00:00",
            }
        )
        for i, (role, text) in enumerate(texts)
    ]


@pytest.mark.slow
def test_a_child_that_dies_is_replaced_and_prepares_the_same() -> None:
    preparer = ProcessPreparer(partial(build_nlp_preparer, Settings()))
    try:
        first = preparer.submit(_events()).result(timeout=120)
        assert "415-555-0132" not in orjson.dumps([m.model_dump(mode="json") for m in first]).decode()
        for child in psutil.Process().children():
            try:
                if "spawn_main" not in " ".join(child.cmdline()):
                    continue  # multiprocessing's resource tracker, not the pool's worker
            except psutil.Error:
                continue  # a child of an earlier test, gone
            child.kill()
            child.wait(10)
        again = None
        for _ in range(3):  # a submission racing the pool's notice of the death fails; the next restarts
            try:
                again = preparer.submit(_events()).result(timeout=120)
                break
            except Exception:  # BrokenProcessPool, or the death seen as an error
                continue
        assert again is not None
        assert [m.model_dump() for m in again] == [m.model_dump() for m in first]
    finally:
        preparer.close()


def _units(store: Path) -> list[tuple[str, str, list[str]]]:
    rt = open_runtime(Settings(), store)
    try:
        return sorted(
            (u.id, u.text, u.source_ids) for batch in rt.lexical.iter_units("t1", 100) for u in batch
        )
    finally:
        rt.close()


@pytest.mark.slow
def test_the_ingest_command_makes_the_same_memory_in_parallel_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events = tmp_path / "events.jsonl"
    events.write_bytes(b"".join(orjson.dumps(e.model_dump(mode="json")) + b"\n" for e in _events()))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    in_child: list[int] = []
    submit = ProcessPreparer.submit
    monkeypatch.setattr(
        ProcessPreparer, "submit", lambda self, ev: in_child.append(len(ev)) or submit(self, ev)
    )
    reports = {}
    for parallel in ("true", "false"):
        monkeypatch.setenv("SIMPLEMEM_INGEST_PARALLEL", parallel)
        in_child.clear()
        get_settings.cache_clear()
        store = tmp_path / parallel
        result = runner.invoke(app, ["ingest", str(events), "--store", str(store), "--json"])
        assert result.exit_code == 0, result.output
        reports[parallel] = orjson.loads(result.stdout.strip().splitlines()[-1])
        assert (sum(in_child) == 4) is (parallel == "true")  # the messages went through the child once
    get_settings.cache_clear()
    assert reports["true"] == reports["false"]
    assert reports["true"]["accepted"] == 4
    units = _units(tmp_path / "true")
    assert units and units == _units(tmp_path / "false")
    assert not any("415-555-0132" in text for _, text, _ in units)


_KILLED_PARENT = """
import os, signal
from functools import partial
import psutil
from simplemem.processors.ingest.nlp_process import ProcessPreparer
from simplemem.runtime import build_nlp_preparer
from simplemem.schemas.settings import Settings

if __name__ == "__main__":
    preparer = ProcessPreparer(partial(build_nlp_preparer, Settings()))
    preparer.submit([]).result(timeout=120)
    for child in psutil.Process().children():
        if "spawn_main" in " ".join(child.cmdline()):
            print(child.pid, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.slow
def test_the_child_leaves_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(_KILLED_PARENT)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child = psutil.Process(int(parent.stdout.readline()))  # the child shares the pipe: no EOF to wait for
    parent.wait(timeout=60)
    try:
        child.wait(timeout=20)
    except psutil.TimeoutExpired:
        child.kill()
        pytest.fail("the NLP child outlived its killed parent")
