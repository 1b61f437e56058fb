"""A query process imports what answering needs (MiniLM on ONNX Runtime, the tokenizer, the stores),
never the ingestion side (spaCy, Presidio; torch and transformers where the `torch` extra is installed)
nor the one-time model build (onnx, safetensors), and answers as the full runtime does."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from simplemem.cli.demo import AS_OF, QUESTIONS, history_lines
from simplemem.schemas.query import QueryRequest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]
INGESTION_ONLY = ("torch", "spacy", "thinc", "presidio_analyzer", "transformers", "sentence_transformers")
MODEL_BUILD_ONLY = ("onnx", "safetensors", "simplemem.processors.ingest.onnx_graph")
# Runs the CLI in a fresh interpreter and reports, last on stderr, which ingestion modules it imported.
PROBE = f"""
import sys, orjson
from simplemem.cli.main import app
try:
    app(prog_name="simplemem")
except SystemExit as exc:
    code = exc.code
sys.stderr.write("\\n" + orjson.dumps([m for m in {INGESTION_ONLY + MODEL_BUILD_ONLY!r} if m in sys.modules]).decode())
sys.exit(code)
"""


def test_a_query_imports_no_ingestion_model_and_answers_as_the_full_runtime(tmp_path: Path, settings) -> None:  # type: ignore[no-untyped-def]
    from simplemem.processors.ingest.embedding import shipped_model_dir
    from simplemem.processors.ingest.onnx_embedding import int8_model_path
    from simplemem.runtime import open_runtime

    int8_model_path(shipped_model_dir(), settings.model_cache_dir)  # built once per machine
    store = tmp_path / "store"
    cli = [sys.executable, "-c", PROBE]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    history = tmp_path / "history.jsonl"
    history.write_bytes(b"".join(line + b"\n" for line in history_lines()))
    ingest = subprocess.run(
        [*cli, "ingest", str(history), "--store", str(store)], cwd=REPO, env=env, capture_output=True
    )
    assert ingest.returncode == 0, ingest.stderr.decode()[-2000:]
    questions = tmp_path / "questions.jsonl"
    questions.write_bytes(
        b"".join(
            orjson.dumps({"id": str(n), "tenant_id": "demo", "query": q, "as_of": AS_OF}) + b"\n"
            for n, q in enumerate(QUESTIONS)
        )
    )
    query = subprocess.run(
        [*cli, "query", "--batch", str(questions), "--store", str(store), "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
    )
    assert query.returncode == 0, query.stderr.decode()[-2000:]
    assert orjson.loads(query.stderr.splitlines()[-1]) == []

    # The same questions through a runtime that has loaded the ingestion side too.
    rt = open_runtime(settings, store)
    try:
        assert rt.pipeline is not None and "spacy" in sys.modules
        expected = [
            rt.retriever.query(QueryRequest(id=str(n), tenant_id="demo", query=q, as_of=AS_OF)).to_json()
            for n, q in enumerate(QUESTIONS)
        ]
    finally:
        rt.close()
    assert [orjson.loads(line) for line in query.stdout.splitlines()] == expected
