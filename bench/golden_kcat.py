"""The golden set published with kcat as frontends publish (no end-of-session or end-of-exchange
marker), one worker running, then asked through the API: are the turns decided and answerable after a
short wait? (``simplemem golden`` marks each session's last event; this does not.)

    python -m bench.golden_kcat [--wait 30] [--file simplemem/cli/data/golden.json]

Needs the local services (`simplemem infra up`); runs in a namespace of its own and drops it.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from bench.deployment import local_deployment
from simplemem.cli.golden import DEFAULT_FILE, found_in
from simplemem.client import Client
from tests.helpers.kcat import kcat_publish

TENANT = "golden-kcat"


def unmarked(events: list[dict[str, Any]]) -> list[bytes]:
    drop = {"ends_session", "ends_exchange"}
    return [
        orjson.dumps({k: v for k, v in e.items() if k not in drop} | {"tenant_id": TENANT}) for e in events
    ]


def ask(memory: Client, queries: list[dict[str, Any]]) -> tuple[int, int, list[str]]:
    """Expected strings found, expected in all, and the misses."""
    found, expected, misses = 0, 0, []
    for q in queries:
        as_of = datetime.fromisoformat(q["as_of"]) if q.get("as_of") else None
        context = memory.query(q["query"], as_of=as_of).context
        for want in q.get("expected", []):
            expected += 1
            if found_in(context, want):
                found += 1
            else:
                misses.append(f"{q['id']}: {want}")
    return found, expected, misses


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--wait", type=float, default=30.0, help="seconds between the last publish and the questions"
    )
    ap.add_argument("--file", type=Path, default=DEFAULT_FILE)
    args = ap.parse_args()
    golden = orjson.loads(args.file.read_bytes())
    admin = f"admin-{uuid.uuid4().hex}"
    with (
        tempfile.TemporaryDirectory() as tmp,
        local_deployment("goldenkcat", Path(tmp), admin) as (settings, url),
    ):
        kcat_publish(settings, unmarked(golden["events"]))
        time.sleep(args.wait)
        with Client(url, admin) as operator:
            key = operator.create_key(TENANT).key
        with Client(url, key, timeout=120) as memory:
            found, expected, misses = ask(memory, golden["queries"])
    print(f"kcat, no markers, asked {args.wait:.0f} s after publishing: {found}/{expected} expected strings")
    for miss in misses:
        print(f"  missed {miss}")


if __name__ == "__main__":
    main()
