"""LongMemEval_S: assistant-style histories (long answers: lists, recipes, code), one tenant per question.

    python -m bench.longmemeval [--data FILE] [--limit N] [--per-type N] [--store DIR [--reuse]]
                                [--no-baselines] [--out bench/results/longmemeval.json]

Ingestion (embedded mode, one store): turns, cl100k tokens, turns/s and tokens/s after the models are
loaded, memory units (per turn, mean length), the bytes of the lexical and vector files against
the scrubbed input, peak RSS, rejected messages by reason. ``--reuse`` answers from a store an
earlier run with the same ``--store`` and questions filled (no ingestion numbers then).

Retrieval, each question asked as of its ``question_date`` against its tenant, per question type:
evidence recall (share of the ``has_answer`` turns cited in the memories' ``source_ids``), session
recall (share of ``answer_session_ids`` cited at least once), answer recall (share of the answer's
content words in the context; not for single-session-preference, whose answer is a rubric), context
tokens (mean, p95, max), warm query latency. Baselines over the raw turns stated by then: BM25 and
MiniLM (the pipeline's embedder, 256 word pieces per turn) top-3 and top-4 turns, and both filling
the pipeline's own context size for that question with whole turns (``-budget``).
"""

from __future__ import annotations

import argparse
import logging
import re
import resource
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import orjson

from bench.common import retrieval_options, scratch_store, tuned
from bench.longmemeval_data import DEFAULT_FILE, PREFERENCE, SPEAKERS, TYPES, LmeQuestion, LmeTurn
from bench.longmemeval_data import load_questions as load_lme
from bench.metrics import answer_recall, evidence_recall
from simplemem.processors.ingest.embedding import Embedder
from simplemem.processors.language.tokens import count_tokens
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    from simplemem.processors.ingest.pipeline import Pipeline
    from simplemem.processors.retrieval.retriever import Retriever
    from simplemem.runtime import Runtime

SHORT = dict(zip(TYPES, ("ss-user", "ss-asst", "ss-pref", "multi", "k-update", "temporal"), strict=True))
BASELINES = ("bm25-k3", "bm25-k4", "minilm-k3", "minilm-k4", "bm25-budget", "minilm-budget")
METRICS = ("evidence", "sessions", "answer", "messages")


@dataclass
class IngestStats:
    """What one ingestion of the histories cost."""

    turns: int = 0
    tokens: int = 0
    raw_bytes: int = 0
    scrubbed_bytes: int = 0
    seconds: float = 0.0
    units: int = 0
    windows: int = 0
    windows_filtered: int = 0
    pii_scrubbed: int = 0
    peak_rss_mb: float = 0.0
    rejected: dict[str, int] = field(default_factory=dict)
    failed: dict[str, int] = field(default_factory=dict)


@dataclass
class Score:
    qtype: str
    evidence: float
    sessions: float
    answer: float | None
    tokens: int
    messages: int  # distinct messages cited: how many places the context draws on


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    """Resident memory now, so that the progress lines show whether it grows with the input."""
    import psutil

    return float(psutil.Process().memory_info().rss) / 2**20


def turn_line(t: LmeTurn) -> str:
    return f"[{t.ts.date().isoformat()}] {SPEAKERS.get(t.role, t.role)}: {t.text}"


def reason_class(reason: str) -> str:
    """A rejection reason without its numbers, so that the same cause is counted once."""
    return re.sub(r"\d+", "N", reason)


def count_scrubbed(pipeline: Pipeline, sink: list[int]) -> None:
    """Make the pipeline report the bytes of each batch's scrubbed text (what memory is made of)."""
    from simplemem.processors.ingest.analysis import AnalyzedMessage, MessageAnalyzer

    class Counting(MessageAnalyzer):
        def embed(self, prepared: Any) -> list[AnalyzedMessage]:
            sink.append(sum(len(m.text.encode("utf-8")) for m in prepared))
            return super().embed(prepared)

    was = pipeline.analyzer
    pipeline.analyzer = Counting(was.preparer, was.embedder, was.assistant_vector_chars)


def event_lines(questions: list[LmeQuestion]) -> Iterator[tuple[str, bytes]]:
    """Every history's events as the pipeline reads them, made as they are read."""
    return ((e["message_id"], orjson.dumps(e)) for q in questions for e in q.events())


def ingest(rt: Runtime, questions: list[LmeQuestion], encoding: str) -> IngestStats:
    """Every history through the whole pipeline in one run, as ``simplemem ingest`` would: the events
    are made as the pipeline reads them (not held all at once), so the peak RSS is the pipeline's and
    the loaded questions', not a copy of the input's."""
    stats = IngestStats()
    for q in questions:
        for e in q.events():
            stats.tokens += count_tokens(e["text"], encoding)
            stats.raw_bytes += len(e["text"].encode("utf-8"))
    lines = event_lines(questions)
    pipeline = rt.pipeline
    pipeline.warm_up()
    scrubbed: list[int] = []
    count_scrubbed(pipeline, scrubbed)
    done, start = [0], time.perf_counter()

    def progress(n: int) -> None:
        done[0] += n
        if done[0] // 1000 != (done[0] - n) // 1000:
            elapsed = time.perf_counter() - start
            print(f"  {done[0]} turns in {elapsed:.0f}s, RSS {rss_mb():.0f} MB", file=sys.stderr, flush=True)

    report = pipeline.ingest(lines, progress=progress)
    stats.seconds = time.perf_counter() - start
    return _with_report(stats, report, sum(scrubbed))


def _with_report(stats: IngestStats, report: IngestReport, scrubbed: int) -> IngestStats:
    stats.turns, stats.units, stats.scrubbed_bytes = report.accepted, report.units, scrubbed
    stats.windows, stats.windows_filtered = report.windows, report.windows_filtered
    stats.pii_scrubbed = report.pii_scrubbed
    stats.rejected = dict(Counter(reason_class(r.reason) for r in report.rejected))
    stats.failed = dict(Counter(reason_class(f.reason or "") for f in report.failures))
    stats.peak_rss_mb = peak_rss_mb()
    return stats


def unit_stats(rt: Runtime, questions: list[LmeQuestion]) -> dict[str, float]:
    """What the stored units hold: their text, the message text kept beside it (``context``), and
    the document each is stored as in SQLite."""
    n = text = context = with_context = doc = 0
    kinds: Counter[str] = Counter()
    for q in questions:
        for batch in rt.lexical.iter_units(q.tenant_id, 500):
            for u in batch:
                n += 1
                kinds[u.kind.value] += 1
                text += len(u.text)
                context += len(u.context or "")
                with_context += bool(u.context)
                doc += len(orjson.dumps(u.model_dump(mode="json")))
    per = max(n, 1)
    return {
        "units": n,
        **{f"kind_{k}": v for k, v in kinds.items()},
        "mean_text_chars": text / per,
        "mean_context_chars": context / per,
        "share_with_context": with_context / per,
        "mean_json_bytes": doc / per,
    }


def stored_doc_bytes(path: Path) -> float:
    """The mean bytes of a unit's document as the SQLite file stores it (deflated, without its
    context), 0 where there is no such file."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        row = db.execute("SELECT avg(length(doc)) FROM units").fetchone()
        db.close()
    except sqlite3.Error:
        return 0.0
    return float(row[0] or 0.0)


def disk_bytes(store: Path) -> dict[str, int]:
    """Bytes on disk: the lexical SQLite file (with its WAL), the vector file, the rest."""
    out = {"sqlite": 0, "milvus": 0, "other": 0}
    for path in store.rglob("*"):
        if not path.is_file():
            continue
        top = path.relative_to(store).parts[0]
        part = "sqlite" if top.startswith("lexical.sqlite") else "milvus" if "vectors" in top else "other"
        out[part] += path.stat().st_size
    return out


def sqlite_tables(path: Path) -> dict[str, int]:
    """Bytes per table and index of the SQLite file (its ``dbstat`` view), where SQLite has it."""
    import sqlite3

    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        rows = db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
        db.close()
    except sqlite3.Error:
        return {}
    return {str(name): int(size) for name, size in rows}


class RawTurns:
    """One question's turns stated by its ``as_of``, searched as they are: the baselines."""

    def __init__(self, q: LmeQuestion, embedder: Embedder, encoding: str) -> None:
        import bm25s

        self.turns = [t for t in q.turns if t.ts <= q.as_of]
        self.lines = [turn_line(t) for t in self.turns]
        self.tokens = [count_tokens(line, encoding) for line in self.lines]
        corpus = [f"{SPEAKERS.get(t.role, t.role)}: {t.text}" for t in self.turns]
        self.bm25 = bm25s.BM25()
        self.bm25.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
        self.embedder = embedder
        self.vectors = embedder.encode(corpus)

    def bm25_order(self, query: str) -> list[int]:
        import bm25s

        docs, _ = self.bm25.retrieve(
            bm25s.tokenize([query], stopwords="en", show_progress=False),
            k=len(self.turns),
            show_progress=False,
        )
        return [int(i) for i in docs[0]]

    def dense_order(self, query: str) -> list[int]:
        q = self.embedder.encode([query])[0]
        return [int(i) for i in np.argsort(-(self.vectors @ q), kind="stable")]

    def context(self, chosen: list[int]) -> tuple[str, set[str], int]:
        """The chosen turns in time order, one line each, with their ids and cl100k tokens."""
        idx = sorted(set(chosen))
        text = "\n".join(self.lines[i] for i in idx)
        return text, {self.turns[i].message_id for i in idx}, sum(self.tokens[i] for i in idx) + len(idx) - 1

    def within(self, order: list[int], budget: int) -> list[int]:
        """The best-ranked turns that fit ``budget`` tokens together (at least the first)."""
        chosen: list[int] = []
        used = 0
        for i in order:
            cost = self.tokens[i] + (1 if chosen else 0)  # the line break before it
            if chosen and used + cost > budget:
                continue
            chosen.append(i)
            used += cost
        return chosen


def score(q: LmeQuestion, context: str, cited: set[str], tokens: int) -> Score:
    """The four measures of one context for one question."""
    session_of = q.session_of()
    sessions = {session_of[m] for m in cited if m in session_of}
    wanted = list(dict.fromkeys(q.answer_sessions))
    return Score(
        qtype=q.qtype,
        evidence=evidence_recall(q.evidence, cited),
        sessions=sum(1 for s in wanted if s in sessions) / len(wanted) if wanted else 1.0,
        answer=None if q.qtype == PREFERENCE else answer_recall(q.answer, context),
        tokens=tokens,
        messages=len(cited),
    )


def request(q: LmeQuestion) -> QueryRequest:
    return QueryRequest(id=q.qid, tenant_id=q.tenant_id, query=q.question, as_of=q.as_of)


def baseline_scores(q: LmeQuestion, base: RawTurns, budget: int) -> dict[str, Score]:
    bm25, dense = base.bm25_order(q.question), base.dense_order(q.question)
    picks = {
        "bm25-k3": bm25[:3],
        "bm25-k4": bm25[:4],
        "minilm-k3": dense[:3],
        "minilm-k4": dense[:4],
        "bm25-budget": base.within(bm25, budget),
        "minilm-budget": base.within(dense, budget),
    }
    return {name: score(q, *base.context(chosen)) for name, chosen in picks.items()}


def evaluate(
    rt: Runtime, questions: list[LmeQuestion], settings: Settings, baselines: bool
) -> tuple[dict[str, list[Score]], list[dict[str, Any]]]:
    """Every question through the pipeline (and the baselines): scores per method, and per question."""
    scores: dict[str, list[Score]] = defaultdict(list)
    rows: list[dict[str, Any]] = []
    for q in questions:
        result = rt.retriever.query(request(q))
        cited = {s for m in result.memories for s in m.source_ids}
        runs = {"simplemem": score(q, result.context, cited, result.context_tokens)}
        if baselines:
            base = RawTurns(q, rt.embedder, settings.tokenizer_encoding)
            runs.update(baseline_scores(q, base, max(result.context_tokens, 1)))
        for name, s in runs.items():
            scores[name].append(s)
        rows.append({"qid": q.qid, "type": q.qtype, "k": result.k, **{n: asdict(s) for n, s in runs.items()}})
    return scores, rows


def warm_latencies_ms(retriever: Retriever, questions: list[LmeQuestion]) -> list[float]:
    """Each question timed again, after the evaluation pass warmed the caches and models."""
    out = []
    for q in questions:
        start = time.perf_counter()
        retriever.query(request(q))
        out.append((time.perf_counter() - start) * 1000)
    return out


def summarise(scores: dict[str, list[Score]]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per method, per question type and ``all``: mean of each measure, context tokens mean/p95/max."""

    def cell(items: list[Score]) -> dict[str, float | None]:
        out: dict[str, float | None] = {}
        for metric in METRICS:
            values = [v for v in (getattr(s, metric) for s in items) if v is not None]
            out[metric] = float(np.mean(values)) if values else None
        tokens = np.array([s.tokens for s in items], dtype=float)
        out.update(tokens=float(tokens.mean()), tokens_p95=float(np.percentile(tokens, 95)))
        out["tokens_max"] = float(tokens.max())
        out["n"] = float(len(items))
        return out

    table: dict[str, dict[str, dict[str, float | None]]] = {}
    for method, items in scores.items():
        by_type = {t: [s for s in items if s.qtype == t] for t in TYPES}
        table[method] = {SHORT[t]: cell(v) for t, v in by_type.items() if v}
        table[method]["all"] = cell(items)
    return table


def print_table(table: dict[str, dict[str, dict[str, float | None]]]) -> None:
    def fmt(v: float | None, digits: int) -> str:
        return "-" if v is None else f"{v:.{digits}f}"

    cols = list(next(iter(table.values())))
    labels = {
        "evidence": "evidence-turn recall",
        "sessions": "answer-session recall",
        "answer": "answer words in context",
        "tokens": "context tokens (mean)",
        "tokens_p95": "context tokens (p95)",
        "tokens_max": "context tokens (max)",
        "messages": "distinct messages cited (mean)",
    }
    first = next(iter(table.values()))
    print("questions: " + ", ".join(f"{c} {first[c]['n']:.0f}" for c in cols))
    for metric, label in labels.items():
        digits = 0 if metric.startswith("tokens") else 1 if metric == "messages" else 3
        print(f"\n{label}")
        print(f"{'method':<14}" + "".join(f"{c:>10}" for c in cols))
        for method, row in table.items():
            print(f"{method:<14}" + "".join(f"{fmt(row[c].get(metric), digits):>10}" for c in cols))


def print_ingest(stats: IngestStats, units: dict[str, float], disk: dict[str, int], turns: int) -> None:
    """``turns``: of the questions selected (a reused store was not ingested by this run)."""
    s, turns = stats, max(turns, 1)
    if s.seconds:
        print(
            f"ingested {s.turns} turns, {s.tokens} tokens in {s.seconds:.0f}s: {s.turns / s.seconds:.1f} "
            f"turns/s, {s.tokens / s.seconds:.0f} tokens/s; {s.windows} windows, {s.windows_filtered} "
            f"filtered; {s.pii_scrubbed} messages with PII scrubbed; peak RSS {s.peak_rss_mb:.0f} MB"
        )
        print(f"rejected: {sum(s.rejected.values())} {s.rejected or ''}; failed: {sum(s.failed.values())}")
    n = units["units"]
    print(
        f"memory units: {n:.0f} ({n / turns:.2f} per turn; {units.get('kind_code', 0):.0f} code), "
        f"mean text {units['mean_text_chars']:.0f} chars, mean context {units['mean_context_chars']:.0f} "
        f"chars ({units['share_with_context']:.0%} have one), mean stored document "
        f"{units['mean_stored_doc_bytes']:.0f} B ({units['mean_json_bytes']:.0f} B as JSON with its context)"
    )
    total = disk["sqlite"] + disk["milvus"]
    line = f"on disk: SQLite {disk['sqlite'] / 1e6:.1f} MB, vectors {disk['milvus'] / 1e6:.1f} MB"
    if s.scrubbed_bytes:
        line += (
            f", {total / 1e6:.1f} MB for {s.scrubbed_bytes / 1e6:.1f} MB of scrubbed text "
            f"({s.raw_bytes / 1e6:.1f} MB raw): x{total / s.scrubbed_bytes:.1f}, {total / max(n, 1):.0f} B/unit"
        )
    print(line)


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE, help="the LongMemEval_S dev file")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only (after --per-type)")
    ap.add_argument("--per-type", type=int, default=None, help="first N questions of each type")
    ap.add_argument("--store", type=Path, default=None, help="store folder (default: a fresh temporary one)")
    ap.add_argument("--reuse", action="store_true", help="with --store: answer from the store a run filled")
    ap.add_argument("--no-baselines", action="store_true", help="measure the pipeline only")
    retrieval_options(ap)
    ap.add_argument("--out", type=Path, default=Path("bench/results/longmemeval.json"))
    args = ap.parse_args()
    if args.reuse and args.store is None:
        ap.error("--reuse needs --store DIR")
    return args


def prepared(args: argparse.Namespace) -> list[LmeQuestion] | None:
    """The selected questions, the process made quiet and offline; None (said why) without the data."""
    return prepared_questions(args.data, args.limit, args.per_type)


def prepared_questions(
    data: Path, limit: int | None = None, per_type: int | None = None
) -> list[LmeQuestion] | None:
    if not data.is_file():
        print(f"bench.longmemeval skipped: no data file at {data} (LongMemEval_S dev set)", file=sys.stderr)
        return None
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from simplemem.cli.console import quiet_libraries

    quiet_libraries()
    import bm25s  # noqa: F401  (it sets its logger to DEBUG when imported)

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return load_lme(data, limit, per_type)


def main() -> None:
    args = arguments()
    questions = prepared(args)
    if not questions:
        return
    from simplemem.runtime import open_runtime, store_exists

    settings = Settings()
    store = args.store or scratch_store("simplemem-lme-")
    late = sum(1 for q in questions for t in q.turns if t.has_answer and t.ts > q.as_of)
    print(f"{len(questions)} questions, {sum(len(q.turns) for q in questions)} turns; store {store}")
    print(f"evidence turns stated after their question's date (unreachable): {late}")
    rt = open_runtime(settings, store)
    tuned(rt.retriever, args)
    stats = IngestStats()
    if args.reuse and store_exists(store):
        print(f"answering from the store in {store} (not ingested again)")
    else:
        stats = ingest(rt, questions, settings.tokenizer_encoding)
    units = unit_stats(rt, questions)
    scores, rows = evaluate(rt, questions, settings, not args.no_baselines)
    lat = warm_latencies_ms(rt.retriever, questions)
    rt.close()
    disk = disk_bytes(store)
    units["mean_stored_doc_bytes"] = stored_doc_bytes(store / "lexical.sqlite")
    print()
    print_ingest(stats, units, disk, stats.turns or sum(len(q.turns) for q in questions))
    tables = sqlite_tables(store / "lexical.sqlite")
    print("SQLite by table: " + ", ".join(f"{k} {v / 1e6:.1f} MB" for k, v in list(tables.items())[:5]))
    table = summarise(scores)
    print_table(table)
    p50, p95 = float(np.percentile(lat, 50)), float(np.percentile(lat, 95))
    print(f"\nsimplemem warm query latency: p50 {p50:.1f} ms, p95 {p95:.1f} ms over {len(lat)} questions")
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    doc = {
        "ingest": asdict(stats),
        "units": units,
        "disk_bytes": disk,
        "sqlite_tables": tables,
        "table": table,
        "query_ms": {"p50": p50, "p95": p95},
        "questions": rows,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
