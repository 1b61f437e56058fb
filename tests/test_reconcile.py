"""`simplemem reconcile` on the embedded stores, run as a user runs it: drift made behind the
product's back (a vector lost, a vector without its unit) is reported, then repaired."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from simplemem.schemas.settings import REPO_ROOT
from tests.reconcile_checks import assert_repaired

pytestmark = pytest.mark.slow


MAKE_DRIFT = """
import sys, orjson
from simplemem.runtime import open_runtime
from simplemem.schemas.settings import Settings
from tests.reconcile_checks import make_drift
rt = open_runtime(Settings(), __import__("pathlib").Path(sys.argv[1]))
victim, ghost = make_drift(rt, sys.argv[2])
rt.close()
print(orjson.dumps([victim.model_dump(mode="json"), ghost.model_dump(mode="json")]).decode())
"""


def test_reconcile_reports_then_repairs_a_drift(tmp_path: Path, settings, golden) -> None:  # type: ignore[no-untyped-def]
    """Each step in its own process, as a user and an outside fault would run them (an embedded
    store serves one process at a time)."""
    from simplemem.runtime import open_runtime
    from simplemem.schemas.memory import MemoryUnit

    store, events = tmp_path / "store", tmp_path / "events.jsonl"
    events.write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in golden["events"]))
    tenant = golden["events"][0]["tenant_id"]
    cli = str(REPO_ROOT / "bin" / "simplemem")
    ingest = subprocess.run(
        [cli, "ingest", str(events), "--store", str(store)], capture_output=True, text=True
    )
    assert ingest.returncode == 0, ingest.stderr
    env = {**__import__("os").environ, "PYTHONPATH": str(REPO_ROOT)}
    made = subprocess.run(
        [sys.executable, "-c", MAKE_DRIFT, str(store), tenant],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    victim, ghost = (MemoryUnit.model_validate(u) for u in orjson.loads(made.stdout.splitlines()[-1]))

    def run(*args: str) -> list[dict[str, object]]:
        cmd = [cli, "reconcile", "--store", str(store), "--tenant", tenant, "--json", *args]
        done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return [orjson.loads(line) for line in done.stdout.splitlines()]

    [seen] = run("--dry-run")
    assert seen["missing_vectors"] == [victim.id] and seen["orphan_vectors"] == [ghost.id]
    assert seen["repaired"] is False
    [fixed] = run()
    assert fixed["repaired"] is True and fixed["missing_vectors"] == [victim.id]
    [clean] = run("--dry-run")
    assert clean["missing_vectors"] == [] and clean["orphan_vectors"] == []
    rt = open_runtime(settings, store)
    try:
        assert_repaired(rt, tenant, victim, ghost)
    finally:
        rt.close()
