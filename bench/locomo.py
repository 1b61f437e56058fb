"""LoCoMo side by side: this pipeline vs full context, BM25 top-10 and MiniLM top-10 over raw turns.

    python -m bench.locomo [--data ../shared/data/locomo] [--limit N] [--out bench/results/locomo.json]
                           [--store DIR [--reuse]] [--no-baselines] [--details FILE]

Per LoCoMo category: evidence recall (gold dia_ids cited in ``source_ids``), answer recall (share of
the gold answer's content tokens in the context, dates compared in ISO form), mean context tokens.
Category 5 (adversarial) has no answer: only its evidence recall and tokens are reported.

A retrieval experiment need not ingest again: ``--store DIR`` keeps the store, and ``--reuse`` answers
from a store that an earlier run with the same ``--store`` (and the same data and ingestion settings)
filled, skipping ingestion; the retriever's config may differ between the runs.
``--no-baselines`` measures the pipeline alone; ``--details FILE`` writes one JSON line per question
(context, cited messages, the answer's content tokens missing from the context) to study misses.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import orjson

from bench.common import conversations, event_lines, parser, retrieval_options, scratch_store, tuned
from bench.locomo_data import Conversation, Question, Turn
from bench.metrics import answer_recall, content_tokens, evidence_recall
from simplemem.processors.ingest.embedding import Embedder
from simplemem.processors.language.tokens import count_tokens
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

METHODS = ("simplemem", "full-context", "bm25-top10", "minilm-top10")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
ADVERSARIAL = 5  # no answer: its evidence is reported, and kept out of the "1-4" column


def turn_line(t: Turn) -> str:
    return f"[{t.ts.date().isoformat()}] {t.speaker}: {t.text}"


class RawTurnBaselines:
    """Retrieval over the raw turns of one conversation, for comparison."""

    def __init__(self, conv: Conversation, embedder: Embedder, encoding: str) -> None:
        import bm25s

        self.turns = conv.turns
        self.full = "\n".join(turn_line(t) for t in self.turns)
        self.full_tokens = count_tokens(self.full, encoding)
        corpus = [f"{t.speaker}: {t.text}" for t in self.turns]
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        self.embedder = embedder
        self.vectors = embedder.encode(corpus)

    def _context(self, idx: list[int]) -> tuple[str, set[str]]:
        chosen = sorted(set(idx))
        return "\n".join(turn_line(self.turns[i]) for i in chosen), {self.turns[i].dia_id for i in chosen}

    def bm25_top(self, query: str, k: int = 10) -> tuple[str, set[str]]:
        import bm25s

        docs, _ = self.bm25.retrieve(
            bm25s.tokenize([query], stopwords="en", show_progress=False),
            k=min(k, len(self.turns)),
            show_progress=False,
        )
        return self._context([int(i) for i in docs[0]])

    def minilm_top(self, query: str, k: int = 10) -> tuple[str, set[str]]:
        q = self.embedder.encode([query])[0]
        idx = np.argsort(-(self.vectors @ q))[:k]
        return self._context([int(i) for i in idx])


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--store", type=Path, default=None, help="store folder (default: a fresh temporary one)")
    ap.add_argument(
        "--reuse", action="store_true", help="with --store: answer from the store an earlier run filled"
    )
    ap.add_argument("--no-baselines", action="store_true", help="measure the pipeline only")
    ap.add_argument(
        "--pause-every-turn",
        action="store_true",
        help="decide the window after every turn (as a pause after each would): quality with windows cut short",
    )
    retrieval_options(ap)
    ap.add_argument("--details", type=Path, default=None, help="one JSON line per question (pipeline)")
    ap.add_argument("--out", type=Path, default=Path("bench/results/locomo.json"))
    args = ap.parse_args()
    from simplemem.runtime import open_runtime, store_exists

    if args.reuse and args.store is None:
        ap.error("--reuse needs --store DIR")
    settings = Settings()
    store = args.store or scratch_store("simplemem-locomo-")
    convs = conversations(args)
    rt = open_runtime(settings, store)
    tuned(rt.retriever, args)
    report, ingest_s = IngestReport(), 0.0
    if args.reuse and store_exists(store):
        print(f"answering from the store in {store} (not ingested again)")
    else:
        pipeline = rt.pipeline
        pipeline.warm_up()
        t0 = time.perf_counter()
        report = pipeline.ingest(event_lines(convs, args.pause_every_turn))
        ingest_s = time.perf_counter() - t0
        print(
            f"ingested {report.accepted} turns in {ingest_s:.1f}s ({report.accepted / ingest_s:.0f} turns/s): "
            f"{report.windows} windows, {report.windows_filtered} filtered, "
            f"discard rate {report.discard_rate:.1%}, {report.units} units, {len(report.rejected)} rejected"
        )

    methods = METHODS[:1] if args.no_baselines else METHODS
    sums: dict[str, dict[int, dict[str, list[float]]]] = {
        m: defaultdict(lambda: defaultdict(list)) for m in methods
    }
    latencies = []
    details = []
    for conv in convs:
        base = None if args.no_baselines else RawTurnBaselines(conv, rt.embedder, settings.tokenizer_encoding)
        for q in conv.questions:
            t = time.perf_counter()
            result = rt.retriever.query(
                QueryRequest(id=q.qid, tenant_id=q.tenant_id, query=q.question, as_of=q.as_of)
            )
            latencies.append(time.perf_counter() - t)
            cited = {s for m in result.memories for s in m.source_ids}
            runs = {"simplemem": (result.context, cited, result.context_tokens)}
            if base is not None:
                runs["full-context"] = (base.full, {t.dia_id for t in conv.turns}, base.full_tokens)
                for name, fn in (("bm25-top10", base.bm25_top), ("minilm-top10", base.minilm_top)):
                    ctx, ids = fn(q.question)
                    runs[name] = (ctx, ids, count_tokens(ctx, settings.tokenizer_encoding))
            if args.details is not None:
                details.append(question_detail(q, result.context, cited, result.context_tokens, result.k))
            for name, (ctx, ids, tokens) in runs.items():
                cell = sums[name][q.category]
                cell["evidence"].append(evidence_recall(q.evidence, ids))
                cell["tokens"].append(tokens)
                if q.category != 5 and q.answer is not None:
                    cell["answer"].append(answer_recall(q.answer, ctx))
    rt.close()

    table = _summarise(sums)
    _print(table)
    lat = np.array(latencies) * 1000
    print(
        f"\nsimplemem query latency: p50 {np.percentile(lat, 50):.1f} ms, p95 {np.percentile(lat, 95):.1f} ms "
        f"over {len(lat)} questions"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(
        orjson.dumps(
            {
                "conversations": [c.tenant_id for c in convs],
                "turns": report.accepted,
                "ingest_seconds": ingest_s,
                "discard_rate": report.discard_rate,
                "units": report.units,
                "table": table,
                "query_ms": {"p50": float(np.percentile(lat, 50)), "p95": float(np.percentile(lat, 95))},
            },
            option=orjson.OPT_INDENT_2,
        )
    )
    print(f"written {args.out}")
    if args.details is not None:
        args.details.parent.mkdir(parents=True, exist_ok=True)
        args.details.write_bytes(b"".join(orjson.dumps(d) + b"\n" for d in details))
        print(f"written {args.details}")


def question_detail(q: Question, context: str, cited: set[str], tokens: int, k: int) -> dict[str, object]:
    """One question's outcome for the pipeline: what a study of its misses needs."""
    wanted = list(dict.fromkeys(content_tokens(q.answer or "")))
    have = set(content_tokens(context))
    return {
        "qid": q.qid,
        "category": CATEGORIES[q.category],
        "question": q.question,
        "answer": q.answer,
        "answer_recall": answer_recall(q.answer, context)
        if q.category != 5 and q.answer is not None
        else None,
        "missed_tokens": [t for t in wanted if t not in have],
        "evidence": q.evidence,
        "cited": sorted(cited & set(q.evidence)),
        "evidence_recall": evidence_recall(q.evidence, cited),
        "k": k,
        "tokens": tokens,
        "context": context,
    }


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _summarise(
    sums: dict[str, dict[int, dict[str, list[float]]]],
) -> dict[str, dict[str, dict[str, float | None]]]:
    table: dict[str, dict[str, dict[str, float | None]]] = {}
    for method, cats in sums.items():
        table[method] = {}
        pooled: dict[str, list[float]] = defaultdict(list)
        answerable: dict[str, list[float]] = defaultdict(list)  # categories 1-4, the issues' measure
        for cat in sorted(cats):
            cell = cats[cat]
            table[method][CATEGORIES[cat]] = {k: _mean(cell[k]) for k in ("evidence", "answer", "tokens")}
            for k in ("evidence", "answer", "tokens"):
                pooled[k].extend(cell[k])
                if cat != ADVERSARIAL:
                    answerable[k].extend(cell[k])
        table[method]["1-4"] = {k: _mean(answerable[k]) for k in ("evidence", "answer", "tokens")}
        table[method]["all"] = {k: _mean(pooled[k]) for k in ("evidence", "answer", "tokens")}
    return table


def _print(table: dict[str, dict[str, dict[str, float | None]]]) -> None:
    def fmt(v: float | None, tokens: bool = False) -> str:
        return "-" if v is None else (f"{v:8.0f}" if tokens else f"{v:8.3f}")

    cats = [*CATEGORIES.values(), "1-4", "all"]
    for metric in ("answer", "evidence", "tokens"):
        print(f"\n{metric} {'recall' if metric != 'tokens' else '(mean cl100k context tokens)'}")
        print(f"{'method':<14}" + "".join(f"{c:>13}" for c in cats))
        for method, row in table.items():
            cells = [fmt(row.get(c, {}).get(metric), metric == "tokens") for c in cats]
            print(f"{method:<14}" + "".join(f"{c:>13}" for c in cells))


if __name__ == "__main__":
    main()
