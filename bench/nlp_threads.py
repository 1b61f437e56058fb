"""spaCy's throughput on chat turns alone, and beside a thread that runs Python.

    python -m bench.nlp_threads [--texts 600]

Ingestion runs spaCy on a thread of its own while MiniLM and the writer work on others. spaCy 3.8.8
and later, in their CPython 3.11 wheels, take and drop the GIL in every step of the entity
recognizer's parse loop; with another thread running Python, each of those waits for the GIL, and
spaCy slows down by two orders of magnitude (pyproject.toml pins below 3.8.8 for this). Run this
after any change of spaCy or thinc: "beside Python" should stay within a few times "alone".
The texts are LoCoMo's turns (``--data``), or the shipped sample conversation without it.
"""

from __future__ import annotations

import argparse
import threading
import time

import orjson
import spacy

from bench.common import parser
from bench.locomo_data import load_all
from simplemem.processors.language.nlp import load_pipeline, pipe
from simplemem.schemas.settings import REPO_ROOT, Settings

SAMPLE = REPO_ROOT / "simplemem" / "cli" / "data" / "sample_conversation.jsonl"


def chat_texts(args: argparse.Namespace, count: int) -> list[str]:
    """``count`` turns: LoCoMo's when its folder is there, else the sample conversation's, repeated."""
    texts = [t.text for c in load_all(args.data, args.limit) for t in c.turns]
    if not texts:
        texts = [orjson.loads(line)["text"] for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    return (texts * (count // len(texts) + 1))[:count]


def timed(nlp: spacy.language.Language, texts: list[str]) -> float:
    """Seconds for spaCy over ``texts``, as ingestion runs it."""
    start = time.perf_counter()
    pipe(nlp, texts)
    return time.perf_counter() - start


def beside_python(nlp: spacy.language.Language, texts: list[str]) -> float:
    """Seconds for spaCy over ``texts`` while another thread runs Python."""
    stop = threading.Event()

    def busy() -> None:
        while not stop.is_set():
            sum(range(100))

    other = threading.Thread(target=busy, daemon=True)
    other.start()
    try:
        return timed(nlp, texts)
    finally:
        stop.set()
        other.join()


def main() -> None:
    ap = parser(__doc__, None)
    ap.add_argument("--texts", type=int, default=600, help="turns per measurement")
    args = ap.parse_args()
    settings = Settings()
    nlp = load_pipeline(settings.spacy_model, settings.blas_threads)
    texts = chat_texts(args, args.texts)
    pipe(nlp, texts[:100])  # warm
    alone = timed(nlp, texts)
    beside = beside_python(nlp, texts)
    print(f"spaCy {spacy.__version__}, {len(texts)} turns, components {', '.join(nlp.pipe_names)}")
    print(f"alone:         {alone:6.2f} s  ({len(texts) / alone:6.0f} turns/s)")
    print(
        f"beside Python: {beside:6.2f} s  ({len(texts) / beside:6.0f} turns/s), x{beside / alone:.1f} slower"
    )


if __name__ == "__main__":
    main()
