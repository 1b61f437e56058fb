"""The chat set: expected strings found and PII leaked, per conversation, on the embedded default.

    python -m bench.chat [--store DIR] [--conversation NAME ...] [--data bench/data/chat]
                         [--out bench/results/chat.json]

Each conversation of ``bench/data/chat/`` (see ``bench/chat_data.py``) is ingested into its own tenant
as ``simplemem ingest`` does (the store opened and locked by the same code, one ingest per
conversation), then each question is answered as ``simplemem query`` answers it. Reported: expected
strings found in the returned context, questions answered in full, facts said of someone by a
pronoun found in one memory together with whom they are about (``together``), PII leaks (an ``absent`` string,
case-insensitive, in a returned answer or in any file of the store once it is closed) and the mean
context tokens against the tokens of the whole history. Exits 1 on any leak. ``--out`` holds every
question's context and what it missed.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from bench.chat_data import DEFAULT_DIR, ChatConversation, load_chat_set
from bench.common import scratch_store
from bench.metrics import contains
from simplemem.processors.language.tokens import count_tokens
from simplemem.schemas.query import QueryRequest
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    from rich.table import Table

HOLDER = "python -m bench.chat"


@dataclass
class QuestionResult:
    id: str
    query: str
    kind: str
    expected: list[str]
    missing: list[str]
    leaked: list[str]
    context: str
    context_tokens: int
    together: list[str] = field(default_factory=list)
    attributed: bool | None = None  # with ``together``: whether one returned memory holds them all


@dataclass
class ConversationResult:
    name: str
    tenant_id: str
    turns: int
    history_tokens: int
    units: int
    questions: list[QuestionResult] = field(default_factory=list)
    store_leaks: list[tuple[str, str]] = field(default_factory=list)  # (absent string, file)

    @property
    def expected(self) -> int:
        return sum(len(q.expected) for q in self.questions)

    @property
    def found(self) -> int:
        return self.expected - sum(len(q.missing) for q in self.questions)

    @property
    def answered(self) -> int:
        return sum(1 for q in self.questions if not q.missing)

    @property
    def attributions(self) -> int:
        return sum(1 for q in self.questions if q.attributed is not None)

    @property
    def attributed(self) -> int:
        return sum(1 for q in self.questions if q.attributed)

    @property
    def leaks(self) -> int:
        return sum(len(q.leaked) for q in self.questions) + len(self.store_leaks)

    @property
    def mean_context_tokens(self) -> float:
        return sum(q.context_tokens for q in self.questions) / len(self.questions) if self.questions else 0.0


def history_text(conv: ChatConversation) -> str:
    """The whole history as a model would be given it without memory: one dated line per turn."""
    return "\n".join(f"[{e['ts'][:10]}] {e['speaker']}: {e['text']}" for e in conv.events)


def run(
    settings: Settings, store: Path, convs: list[ChatConversation], pause_every_turn: bool = False
) -> list[ConversationResult]:
    """Ingest and ask every conversation in ``store``, then scan the closed store's files.
    ``pause_every_turn``: every event marked ``ends_exchange`` (each window decided at its turn, as a
    pause after every turn would), the worst case of a short pause."""
    from simplemem.cli.answers import answerer
    from simplemem.cli.store import open_store

    results = []
    with ExitStack() as stack:
        rt = stack.enter_context(open_store(settings, store, HOLDER, create=True))
        answer = answerer(rt, stack)
        for conv in convs:
            mark = {"ends_exchange": True} if pause_every_turn else {}
            lines = [
                (f"{conv.name} event {i}", orjson.dumps({**e, **mark})) for i, e in enumerate(conv.events)
            ]
            report = rt.pipeline.ingest(lines)
            if report.rejected or report.failures:
                raise RuntimeError(f"{conv.name}: {report.rejected[:3]} {report.failures[:3]}")
            result = ConversationResult(
                conv.name,
                conv.tenant_id,
                report.accepted,
                count_tokens(history_text(conv), settings.tokenizer_encoding),
                report.units,
            )
            for q in conv.queries:
                request = QueryRequest(
                    id=q["id"], tenant_id=q["tenant_id"], query=q["query"], as_of=q["as_of"]
                )
                answered = answer(request)
                output = orjson.dumps(answered.to_json()).decode().lower()
                together = q.get("together", [])
                result.questions.append(
                    QuestionResult(
                        q["id"],
                        q["query"],
                        q.get("kind", "fact"),
                        q.get("expected", []),
                        [e for e in q.get("expected", []) if not contains(answered.context, e)],
                        [a for a in conv.absent if a.lower() in output],
                        answered.context,
                        answered.context_tokens,
                        together,
                        attributed([m.text for m in answered.memories], together) if together else None,
                    )
                )
            results.append(result)
    files = store_files(store)
    for result, conv in zip(results, convs, strict=True):
        result.store_leaks = scan(files, conv.absent)
    return results


def attributed(memories: list[str], together: list[str]) -> bool:
    """Whether one memory holds every string of ``together``: the fact and whom it is about."""
    return any(all(contains(text, t) for t in together) for text in memories)


def store_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*") if p.is_file())


def file_bytes(path: Path) -> bytes:
    """A file's bytes; for a Parquet file (Milvus Lite's segments, Snappy-compressed, where a byte scan
    sees nothing) the values of its text columns too (not its numbers: the digits of a vector's floats
    would match numeric PII by chance)."""
    blob = path.read_bytes()
    if path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        text = [
            n for n, t in zip(table.column_names, table.schema.types, strict=True) if pa.types.is_string(t)
        ]
        blob += orjson.dumps(table.select(text).to_pydict())
    return blob


def scan(files: Iterable[Path], absent: list[str]) -> list[tuple[str, str]]:
    """``(string, file)`` for each absent string found, case-insensitive, in a file."""
    found = []
    for path in files:
        blob = file_bytes(path).lower()
        found += [(a, str(path)) for a in absent if a.lower().encode() in blob]
    return found


def print_results(results: list[ConversationResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    from simplemem.cli.console import out

    console = out if out.is_terminal else Console(width=160)  # a file or pipe gets the whole table
    table = Table(title="chat set: expected strings in the context, PII leaks, context size")
    for name in (
        "conversation",
        "turns",
        "units",
        "questions",
        "answered",
        "found / expected",
        "attributed",
        "leaks",
    ):
        table.add_column(name, justify="left" if name == "conversation" else "right")
    table.add_column("context tokens\n(mean)", justify="right")
    table.add_column("history\ntokens", justify="right")
    table.add_column("context /\nhistory", justify="right")

    def row(name: str, rs: list[ConversationResult]) -> list[str]:
        expected, found = sum(r.expected for r in rs), sum(r.found for r in rs)
        questions = [q for r in rs for q in r.questions]
        ctx = sum(q.context_tokens for q in questions) / len(questions) if questions else 0.0
        hist = sum(r.history_tokens * len(r.questions) for r in rs) / len(questions) if questions else 0.0
        return [
            name,
            str(sum(r.turns for r in rs)),
            str(sum(r.units for r in rs)),
            str(len(questions)),
            str(sum(r.answered for r in rs)),
            f"{found}/{expected} ({found / expected:.1%})" if expected else "-",
            f"{sum(r.attributed for r in rs)}/{sum(r.attributions for r in rs)}",
            str(sum(r.leaks for r in rs)),
            f"{ctx:.0f}",
            f"{hist:.0f}",
            f"{ctx / hist:.1%}" if hist else "-",
        ]

    for r in results:
        table.add_row(*row(r.name, [r]))
    table.add_section()
    table.add_row(*row("all", results), style="bold")
    console.print(table)
    console.print(kind_table(results))
    for r in results:
        for q in r.questions:
            if q.attributed is False:
                console.print(
                    f"not attributed  {q.id} {q.query!r}: no memory holds {q.together!r}", markup=False
                )
            if q.missing:
                console.print(
                    f"missed  {q.id} [{q.kind}] {q.query!r}: {', '.join(map(repr, q.missing))}", markup=False
                )
    for r in results:
        for q in r.questions:
            for a in q.leaked:
                console.print(f"LEAK    {q.id}: {a!r} in the answer", markup=False)
        for a, path in r.store_leaks:
            console.print(f"LEAK    {r.name}: {a!r} in {path}", markup=False)


def kind_table(results: list[ConversationResult]) -> Table:
    """Found / expected per kind of question (what it exercises: changed facts, pronouns, dates...)."""
    from rich.table import Table

    kinds: dict[str, list[QuestionResult]] = defaultdict(list)
    for q in (q for r in results for q in r.questions):
        kinds[q.kind].append(q)
    table = Table(title="by kind of question")
    for name in ("kind", "questions", "answered", "found / expected"):
        table.add_column(name, justify="left" if name == "kind" else "right")
    for kind, qs in sorted(kinds.items()):
        expected = sum(len(q.expected) for q in qs)
        found = expected - sum(len(q.missing) for q in qs)
        share = f"{found}/{expected} ({found / expected:.1%})" if expected else "-"
        table.add_row(kind, str(len(qs)), str(sum(1 for q in qs if not q.missing)), share)
    return table


def found_share(results: list[ConversationResult]) -> float:
    expected = sum(r.expected for r in results)
    return sum(r.found for r in results) / expected if expected else 1.0


def attributed_share(results: list[ConversationResult]) -> float:
    wanted = sum(r.attributions for r in results)
    return sum(r.attributed for r in results) / wanted if wanted else 1.0


def write(results: list[ConversationResult], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "found": sum(r.found for r in results),
        "expected": sum(r.expected for r in results),
        "attributed": sum(r.attributed for r in results),
        "attributions": sum(r.attributions for r in results),
        "leaks": sum(r.leaks for r in results),
        "conversations": [
            {
                "name": r.name,
                "tenant_id": r.tenant_id,
                "turns": r.turns,
                "units": r.units,
                "history_tokens": r.history_tokens,
                "found": r.found,
                "expected": r.expected,
                "store_leaks": r.store_leaks,
                "questions": [q.__dict__ for q in r.questions],
            }
            for r in results
        ],
    }
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR, help="folder of conversation files")
    ap.add_argument("--store", type=Path, default=None, help="store folder (default: a fresh temporary one)")
    ap.add_argument(
        "--conversation",
        action="append",
        default=None,
        help="a conversation's name (repeatable); default all",
    )
    ap.add_argument("--pause-every-turn", action="store_true", help="decide every window at its turn")
    ap.add_argument("--out", type=Path, default=Path("bench/results/chat.json"))
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    settings = Settings()
    if settings.mode != "embedded":
        ap.error("bench.chat measures the embedded default: unset SIMPLEMEM_MODE")
    try:
        convs = load_chat_set(args.data, args.conversation)
    except ValueError as exc:
        ap.error(str(exc))
    store = args.store or scratch_store("simplemem-chat-")
    from simplemem.cli.errors import CliError

    try:
        results = run(settings, store, convs, args.pause_every_turn)
    except CliError as exc:  # the store is busy or unusable: one line, as the CLI says it
        ap.exit(int(exc.code), f"{exc}\n")
    print_results(results)
    write(results, args.out)
    print(f"written {args.out}" + (f"; store {store}" if args.store else ""))
    sys.exit(1 if any(r.leaks for r in results) else 0)


if __name__ == "__main__":
    main()
