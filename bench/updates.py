"""Knowledge updates: how often the current value ranks above the old one, before and after the
offline supersession rule (simplemem/processors/lifecycle/updates.py).

    python -m bench.updates [--data bench/data/knowledge_updates.jsonl]

Each case is a fact stated in January and changed in March, as people write it (its own tenant, each
statement in its own session between a friend's lines). Asked in April, a case counts as *current
first* when a memory from the March message ranks above every memory from the January one (or the
January one is not returned), and as *marked* when the context calls the January memory outdated.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

DATA = Path(__file__).resolve().parent / "data" / "knowledge_updates.jsonl"
OLD_AT, NEW_AT, ASKED_AT = "2026-01-10T10:00:00+00:00", "2026-03-15T10:00:00+00:00", "2026-04-01T00:00:00Z"
FRIEND = "Casey"


def load(path: Path = DATA) -> list[dict[str, str]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def tenant_of(case: dict[str, str]) -> str:
    return f"ku-{case['id']}"


def events(case: dict[str, str]) -> list[dict[str, Any]]:
    """The old statement and the new one, each in a short session of its own."""
    out = []
    for session, text, at in (("old", case["old"], OLD_AT), ("new", case["new"], NEW_AT)):
        lines = [(FRIEND, f"Hey {case['speaker']}, long time! How are things?"), (case["speaker"], text)]
        lines.append((FRIEND, "Thanks for the update, talk soon."))
        for i, (speaker, said) in enumerate(lines):
            out.append(
                {
                    "tenant_id": tenant_of(case),
                    "session_id": session,
                    "message_id": f"{session}:m{i}",
                    "speaker": speaker,
                    "role": "user",
                    "text": said,
                    "ts": at.replace("10:00:00", f"10:0{i}:00"),
                }
            )
    return out


STATEMENT_IDS = ("old:m1", "new:m1")


@dataclass
class Judged:
    current_first: bool
    marked: bool


def judge(rt: Any, case: dict[str, str]) -> Judged:
    from simplemem.schemas.query import QueryRequest

    result = rt.retriever.query(
        QueryRequest(tenant_id=tenant_of(case), query=case["question"], as_of=ASKED_AT)
    )
    ranks = {sid: i for i, m in reversed(list(enumerate(result.memories))) for sid in m.source_ids}
    old, new = (ranks.get(sid) for sid in STATEMENT_IDS)
    first = new is not None and (old is None or new < old)
    return Judged(first, "(outdated" in result.context)


def run(rt: Any, cases: list[dict[str, str]]) -> tuple[dict[str, Judged], dict[str, Judged], int]:
    """Judge every case before and after the rule; returns both and the memories it rewrote."""
    from simplemem.processors.lifecycle.updates import update_tenant

    rt.pipeline.ingest([(e["message_id"], orjson.dumps(e)) for c in cases for e in events(c)])
    before = {c["id"]: judge(rt, c) for c in cases}
    rewritten = sum(len(update_tenant(tenant_of(c), rt.lexical, 500, rt.update_judge).changed) for c in cases)
    after = {c["id"]: judge(rt, c) for c in cases}
    return before, after, rewritten


def report(cases: list[dict[str, str]], before: dict[str, Judged], after: dict[str, Judged]) -> list[str]:
    kinds = Counter(c["kind"] for c in cases)
    rows = [f"{'kind':12s} {'cases':>5s} {'current first before':>21s} {'after':>6s} {'marked after':>13s}"]
    for kind in [*sorted(kinds), "all"]:
        ids = [c["id"] for c in cases if kind in ("all", c["kind"])]
        b = sum(before[i].current_first for i in ids)
        a = sum(after[i].current_first for i in ids)
        m = sum(after[i].marked for i in ids)
        rows.append(f"{kind:12s} {len(ids):5d} {b / len(ids):21.2f} {a / len(ids):6.2f} {m / len(ids):13.2f}")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from simplemem.cli.console import quiet_libraries
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    quiet_libraries()
    cases = load(args.data)
    with tempfile.TemporaryDirectory() as tmp:
        rt = open_runtime(Settings(), Path(tmp))
        try:
            before, after, rewritten = run(rt, cases)
        finally:
            rt.close()
    print(f"{len(cases)} changed facts; the rule rewrote {rewritten} memories")
    print("\n".join(report(cases, before, after)))
    missed = [c["id"] for c in cases if not after[c["id"]].current_first]
    print(f"not current first after: {', '.join(missed) or 'none'}")


if __name__ == "__main__":
    main()
