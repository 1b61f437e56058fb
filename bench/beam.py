"""BEAM: long project conversations, measured the way a user runs the product.

    python -m bench.beam [--data chats/100K] [--limit N] [--concat] [--store DIR [--reuse]] [--out FILE]

Each conversation is one tenant (layout: ``bench/beam_data.py``). The events go through the README's
command as a subprocess (``simplemem ingest FILE --store DIR --json``: wall time from start to exit,
the peak RSS of the process), the questions through ``simplemem query --batch FILE --json``. Per
category and overall: evidence-message recall (share of the gold messages cited in the memories'
``source_ids``), any-hit (at least one cited), answer words in the context (where the question has an
``answer``), context tokens (cl100k mean, p95, max); the same for BM25 over the raw messages filling
each question's same tokens. Then the warm query p95 in-process on the filled store. ``--concat``: the
conversations as one tenant, one after the other (``--limit 10`` makes a tenant of about 1M tokens).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.beam_data import DEFAULT_DIR, BeamConversation, BeamQuestion, concatenated, load_tier
from bench.common import scratch_store
from bench.metrics import answer_recall, evidence_recall

REPO = Path(__file__).resolve().parents[1]
CLI = REPO / "bin" / "simplemem"


@dataclass
class Score:
    category: str
    evidence: float
    any_hit: float
    answer: float | None
    tokens: int


def score(q: BeamQuestion, context: str, cited: set[str], tokens: int) -> Score:
    return Score(
        q.category,
        evidence_recall(q.evidence, cited),
        float(any(g in cited for g in q.evidence)),
        answer_recall(q.answer, context) if q.answer else None,
        tokens,
    )


def write_inputs(convs: list[BeamConversation], folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    events, questions = folder / "events.jsonl", folder / "questions.jsonl"
    with events.open("wb") as out:
        for c in convs:
            for e in c.events():
                out.write(orjson.dumps(e) + b"\n")
    with questions.open("wb") as out:
        for c in convs:
            for q in c.questions:
                out.write(
                    orjson.dumps(
                        {
                            "id": q.qid,
                            "tenant_id": q.tenant_id,
                            "query": q.question,
                            "as_of": q.as_of.isoformat(),
                        }
                    )
                    + b"\n"
                )
    return events, questions


def run_ingest(events: Path, store: Path) -> dict[str, Any]:
    """The README's ingest command; its accounting, wall seconds and the peak RSS of the process."""
    start = time.perf_counter()
    proc = subprocess.run(
        [str(CLI), "ingest", str(events), "--store", str(store), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        raise SystemExit(f"ingest failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    report = orjson.loads(proc.stdout.strip().splitlines()[-1])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return {"seconds": seconds, "peak_rss_mb": peak, "report": report}


def run_queries(questions: Path, store: Path) -> dict[str, dict[str, Any]]:
    proc = subprocess.run(
        [str(CLI), "query", "--batch", str(questions), "--json", "--store", str(store)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"query failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    out = {}
    for line in proc.stdout.splitlines():
        row = orjson.loads(line)
        out[row["id"]] = row
    return out


class RawMessages:
    """One conversation's messages as they are, ranked by BM25: the baseline."""

    def __init__(self, conv: BeamConversation, encoding: str) -> None:
        import bm25s
        import tiktoken

        from simplemem.processors.language.tokens import count_tokens

        self.ids = [m.message_id for m in conv.messages]
        self.lines = [f"[{m.ts.date().isoformat()}] {m.role}: {m.text}" for m in conv.messages]
        self.tokens = [count_tokens(line, encoding) for line in self.lines]
        self.encoding = tiktoken.get_encoding(encoding)
        self.bm25 = bm25s.BM25()
        corpus = [f"{m.role}: {m.text}" for m in conv.messages]
        self.bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    def fill(self, query: str, budget: int) -> tuple[str, set[str], int]:
        """The best-ranked messages that fit ``budget`` tokens together (at least the first)."""
        import bm25s

        docs, _ = self.bm25.retrieve(
            bm25s.tokenize([query], stopwords="en", show_progress=False), k=len(self.ids), show_progress=False
        )
        chosen: list[int] = []
        used = 0
        order = [int(x) for x in docs[0]]
        for i in order:
            cost = self.tokens[i] + (1 if chosen else 0)
            if used + cost > budget:
                continue
            chosen.append(i)
            used += cost
        if not chosen:  # even the best message is over the budget: its first tokens, as a cut memory is
            first = order[0]
            text = self.encoding.decode(self.encoding.encode(self.lines[first])[:budget])
            return text, {self.ids[first]}, budget
        chosen.sort()
        return "\n".join(self.lines[i] for i in chosen), {self.ids[i] for i in chosen}, used


def summarise(scores: list[Score]) -> dict[str, dict[str, float | None]]:
    by: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        by[s.category].append(s)
    by["all"] = scores
    table = {}
    for cat, items in sorted(by.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        answers = [s.answer for s in items if s.answer is not None]
        tokens = np.array([s.tokens for s in items], dtype=float)
        table[cat] = {
            "n": float(len(items)),
            "evidence": float(np.mean([s.evidence for s in items])),
            "any_hit": float(np.mean([s.any_hit for s in items])),
            "answer": float(np.mean(answers)) if answers else None,
            "tokens": float(tokens.mean()),
            "tokens_p95": float(np.percentile(tokens, 95)),
            "tokens_max": float(tokens.max()),
        }
    return table


def print_table(name: str, table: dict[str, dict[str, float | None]]) -> None:
    print(f"\n{name}")
    print(
        f"{'category':<26}{'n':>5}{'evidence':>10}{'any-hit':>9}{'answer':>8}{'tok':>6}{'p95':>6}{'max':>6}"
    )
    for cat, row in table.items():
        ans = "-" if row["answer"] is None else f"{row['answer']:.3f}"
        print(
            f"{cat:<26}{row['n']:>5.0f}{row['evidence']:>10.3f}{row['any_hit']:>9.3f}{ans:>8}"
            f"{row['tokens']:>6.0f}{row['tokens_p95']:>6.0f}{row['tokens_max']:>6.0f}"
        )


def warm_p95_ms(store: Path, convs: list[BeamConversation]) -> tuple[float, float, str]:
    """Every question asked twice in-process, the heap frozen between (as a query process does once
    warm); the second pass timed. The largest tenant's p95 too."""
    from simplemem.runtime import freeze_heap, open_runtime
    from simplemem.schemas.query import QueryRequest
    from simplemem.schemas.settings import Settings

    rt = open_runtime(Settings(), store)
    reqs = [
        (q.tenant_id, QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of))
        for c in convs
        for q in c.questions
    ]
    for _, r in reqs:
        rt.retriever.query(r)
    freeze_heap()  # as the query service and `simplemem query --batch` do once loaded
    times: dict[str, list[float]] = defaultdict(list)
    for tenant, r in reqs:
        start = time.perf_counter()
        rt.retriever.query(r)
        times[tenant].append((time.perf_counter() - start) * 1000)
    rt.close()
    largest = max(convs, key=lambda c: sum(len(m.text) for m in c.messages)).tenant_id
    every = [t for ts in times.values() for t in ts]
    return float(np.percentile(every, 95)), float(np.percentile(times[largest], 95)), largest


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR, help="a BEAM tier folder (chats/100K)")
    ap.add_argument("--limit", type=int, default=None, help="first N conversations only")
    ap.add_argument(
        "--concat",
        action="store_true",
        help="the conversations as one tenant, one after the other (a long-lived tenant)",
    )
    ap.add_argument("--store", type=Path, default=None, help="store folder (default: a temporary one)")
    ap.add_argument("--reuse", action="store_true", help="with --store: answer from the store a run filled")
    ap.add_argument("--no-baseline", action="store_true", help="skip BM25 over raw messages")
    ap.add_argument("--no-latency", action="store_true", help="skip the in-process warm latency pass")
    ap.add_argument("--out", type=Path, default=Path("bench/results/beam.json"))
    args = ap.parse_args()
    if args.reuse and args.store is None:
        ap.error("--reuse needs --store DIR")
    return args


def main() -> None:
    args = arguments()
    convs = load_tier(args.data, args.limit)
    if args.concat and convs:
        convs = [concatenated(convs, f"beam{args.data.name}-x{len(convs)}")]
    if not convs:
        print(
            f"bench.beam skipped: no BEAM conversations in {args.data} (pass --data chats/100K)",
            file=sys.stderr,
        )
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from simplemem.schemas.settings import Settings

    store = args.store or scratch_store("simplemem-beam-")
    inputs = store.parent / f"{store.name}-inputs"
    events, questions = write_inputs(convs, inputs)
    n_msgs = sum(len(c.messages) for c in convs)
    n_q = sum(len(c.questions) for c in convs)
    print(f"{len(convs)} conversations, {n_msgs} messages, {n_q} questions; store {store}")
    doc: dict[str, Any] = {}
    if not (args.reuse and (store / "lexical.sqlite").exists()):
        ing = run_ingest(events, store)
        rep = ing["report"]
        print(
            f"ingest (subprocess): {ing['seconds']:.0f} s wall, {n_msgs / ing['seconds']:.1f} turns/s, "
            f"peak RSS {ing['peak_rss_mb']:.0f} MB; accounting {orjson.dumps(rep).decode()[:400]}"
        )
        doc["ingest"] = ing
    results = run_queries(questions, store)
    encoding = Settings().tokenizer_encoding
    ours, base = [], []
    rows: list[dict[str, Any]] = []
    for c in convs:
        raw = None if args.no_baseline else RawMessages(c, encoding)
        for q in c.questions:
            r = results[q.qid]
            cited = {s for m in r.get("memories", []) for s in m["source_ids"]}
            ours.append(score(q, r.get("context", ""), cited, int(r.get("context_tokens", 0))))
            rows.append(
                {
                    "qid": q.qid,
                    "category": q.category,
                    "evidence": ours[-1].evidence,
                    "gold": q.evidence,
                    "missed": [g for g in q.evidence if g not in cited],
                }
            )
            if raw is not None:
                base.append(score(q, *raw.fill(q.question, max(ours[-1].tokens, 1))))
    doc["simplemem"] = summarise(ours)
    doc["questions"] = rows
    print_table("simplemem", doc["simplemem"])
    if base:
        doc["bm25"] = summarise(base)
        print_table("BM25 over raw messages, same tokens", doc["bm25"])
    if not args.no_latency:
        p95, largest_p95, largest = warm_p95_ms(store, convs)
        doc["warm_p95_ms"] = {"all": p95, largest: largest_p95}
        print(f"\nwarm query p95 {p95:.1f} ms; largest tenant {largest}: {largest_p95:.1f} ms")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
