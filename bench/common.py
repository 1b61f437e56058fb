"""What every benchmark script does first: arguments, offline model loading, quiet libraries."""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import tempfile
import time
from pathlib import Path

import orjson

from bench.locomo_data import DEFAULT_DIR, Conversation, Question, load_all
from simplemem.processors.retrieval.config import PRESETS, RetrievalConfig
from simplemem.processors.retrieval.retriever import Retriever
from simplemem.schemas.query import QueryRequest


def scratch_store(prefix: str) -> Path:
    """A temporary store folder for one run, removed when the process ends (a run over the
    LongMemEval histories leaves hundreds of MB): pass ``--store DIR`` to keep one."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def parser(doc: str | None, limit: int | None) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_DIR, help="the LoCoMo folder")
    ap.add_argument("--limit", type=int, default=limit, help="first N conversations only")
    return ap


def retrieval_options(ap: argparse.ArgumentParser) -> None:
    """``--preset NAME`` and ``--retrieval FIELD=VALUE``: answer with another retrieval config."""
    ap.add_argument("--preset", choices=sorted(PRESETS), default=None, help="a named retrieval config")
    ap.add_argument(
        "--retrieval",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="a RetrievalConfig field for this run (k_max=30, date_boost=0...), repeatable",
    )


def tuned(retriever: Retriever, args: argparse.Namespace) -> RetrievalConfig:
    """The retriever's config after ``--preset`` and ``--retrieval`` (set on it, and returned)."""
    config = retriever.config
    if args.preset:
        config = RetrievalConfig.from_settings_of(config, PRESETS[args.preset])
    pairs = [item.split("=", 1) for item in args.retrieval]
    if any(len(pair) != 2 for pair in pairs):
        raise SystemExit(f"--retrieval takes FIELD=VALUE, got {args.retrieval}")
    retriever.config = config.with_(**dict(pairs))
    default = RetrievalConfig.from_settings_of(retriever.config, RetrievalConfig())
    before = default.model_dump()
    changed = {k: v for k, v in retriever.config.model_dump().items() if v != before[k]}
    if changed:
        print(f"retrieval config changed: {changed}")
    return retriever.config


def conversations(args: argparse.Namespace) -> list[Conversation]:
    """Load the conversations and prepare the process (offline models, quiet third-party logs)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from simplemem.cli.console import quiet_libraries

    quiet_libraries()
    convs = load_all(args.data, args.limit)
    if not convs:  # a clone without ../shared beside it: say so, rather than measure nothing
        raise SystemExit(f"no LoCoMo conversations (*.json) in {args.data}: pass --data FOLDER")
    return convs


def event_lines(convs: list[Conversation], pause_every_turn: bool = False) -> list[tuple[str, bytes]]:
    """The conversations' events; ``pause_every_turn``: each one marked ``ends_exchange``, so every
    window is decided at once, as a pause after every turn would (the worst case of a short pause)."""
    mark = {"ends_exchange": True} if pause_every_turn else {}
    return [(e["message_id"], orjson.dumps({**e, **mark})) for c in convs for e in c.events()]


def warm_latencies_ms(retriever: Retriever, questions: list[Question], warm_up: int = 10) -> list[float]:
    """Per-question query time after ``warm_up`` untimed queries (caches and lazy loads settled)."""
    requests = [QueryRequest(tenant_id=q.tenant_id, query=q.question, as_of=q.as_of) for q in questions]
    for request in requests[:warm_up]:
        retriever.query(request)
    latencies = []
    for request in requests:
        start = time.perf_counter()
        retriever.query(request)
        latencies.append((time.perf_counter() - start) * 1000)
    return latencies
