"""The ONNX MiniLM graphs against the torch model they stand for: same vector space.

The torch model is not in the default install, so its fp32 vectors for the test sentences are shipped
in ``tests/data/minilm_reference.json`` (computed once with sentence-transformers on torch by
``tests/make_minilm_reference.py``; rerun it, with the ``torch`` extra, when the sentences change).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from simplemem.processors.ingest.embedding import MiniLMEmbedder, MissingExtra, shipped_model_dir
from simplemem.processors.ingest.onnx_embedding import OnnxMiniLMEmbedder, length_batches, model_key
from simplemem.processors.ingest.onnx_graph import BertShape, write_fp32
from simplemem.schemas.settings import Settings

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())
SENTENCES: list[str] = REFERENCE["sentences"]
TORCH_FP32 = np.asarray(REFERENCE["vectors"], dtype=np.float32)
HAS_TORCH = find_spec("torch") is not None and find_spec("sentence_transformers") is not None


def test_the_fp32_graph_computes_the_torch_models_vectors(tmp_path: Path) -> None:
    """The graph written without torch is the same function as BertModel. Measured: 1 - cosine is at
    most 1e-6 here; a missing residual, mask or segment row, or a wrong GELU moves some vector by more
    than 1e-2, a LayerNorm epsilon of 1e-4 instead of 1e-12 by 2e-5 (up to 1e-5 no fp32 vector moves)."""
    fp32 = tmp_path / "fp32.onnx"
    write_fp32(shipped_model_dir(), fp32)
    vectors = OnnxMiniLMEmbedder(None, tmp_path, onnx_file=fp32).encode(SENTENCES)
    cosine = (vectors * TORCH_FP32).sum(axis=1)
    assert cosine.min() > 0.99999, dict(zip(SENTENCES, cosine.round(6).tolist(), strict=True))


def test_the_graph_refuses_a_config_it_does_not_implement(tmp_path: Path) -> None:
    model = tmp_path / "model"
    shutil.copytree(shipped_model_dir(), model)
    config = json.loads((model / "config.json").read_text())
    assert BertShape.read(model) == BertShape(6, 384, 12, config["layer_norm_eps"])
    (model / "config.json").write_text(json.dumps({**config, "hidden_act": "gelu_new"}))
    with pytest.raises(ValueError, match="hidden_act='gelu_new'"):
        write_fp32(model, tmp_path / "fp32.onnx")


def test_int8_vectors_agree_with_torch() -> None:
    onnx = OnnxMiniLMEmbedder(None, Settings().model_cache_dir)
    a = onnx.encode(SENTENCES)
    assert a.shape == TORCH_FP32.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    cosine = (a * TORCH_FP32).sum(axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98
    # batching and order do not change a vector
    again = onnx.encode(list(reversed(SENTENCES)))[::-1]
    assert np.allclose(a, again, atol=1e-5)
    assert onnx.encode([]).shape == (0, 384)


def test_a_vector_does_not_depend_on_the_lengths_beside_it() -> None:
    """A short sentence keeps its vector when a long answer is embedded in the same call: batches are
    padded to their own longest text only, and padding never counts as words."""
    onnx = OnnxMiniLMEmbedder(None, Settings().model_cache_dir)
    alone = onnx.encode(SENTENCES[:3])
    long_answer = " ".join(SENTENCES * 4)
    mixed = onnx.encode([long_answer, *SENTENCES[:3], long_answer])
    assert np.allclose(mixed[1:4], alone, atol=1e-5)


def test_a_text_repeated_in_a_call_is_embedded_once_and_returned_at_each_place() -> None:
    onnx = OnnxMiniLMEmbedder(None, Settings().model_cache_dir)
    runs: list[int] = []
    session_run = onnx._session.run

    def counting(*args: object, **kwargs: object) -> object:
        runs.append(len(args[1]["input_ids"]))  # type: ignore[index]
        return session_run(*args, **kwargs)  # type: ignore[arg-type]

    onnx._session = type("Counted", (), {"run": staticmethod(counting)})()
    texts = [SENTENCES[0], SENTENCES[1], SENTENCES[0], SENTENCES[0]]
    out = onnx.encode(texts)
    assert sum(runs) == 2
    assert np.allclose(out[0], out[2]) and np.allclose(out[0], out[3]) and not np.allclose(out[0], out[1])
    assert np.allclose(out[:2], onnx.encode(texts[:2]), atol=1e-5)


def test_length_batches_bound_rows_and_padded_size() -> None:
    lengths = [5, 300, 7, 6, 120, 130, 5, 9, 8, 250]
    batches = list(length_batches(lengths, rows=3, tokens=260))
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    order = [lengths[i] for b in batches for i in b]
    assert order == sorted(lengths)  # shortest first, so a batch's rows are alike
    for b in batches:
        assert len(b) <= 3
        assert len(b) == 1 or max(lengths[i] for i in b) * len(b) <= 260
    assert [lengths[i] for i in batches[-1]] == [300]  # too long to share a batch
    assert list(length_batches([], rows=3, tokens=260)) == []


@pytest.mark.skipif(not HAS_TORCH, reason="the torch extra is not installed")
def test_the_torch_backend_still_computes_the_reference() -> None:
    """With the extra installed, the shipped reference is still what sentence-transformers computes."""
    vectors = MiniLMEmbedder(dtype="float32").encode(SENTENCES)
    assert ((vectors * TORCH_FP32).sum(axis=1)).min() > 0.99999


@pytest.mark.skipif(HAS_TORCH, reason="the torch extra is installed")
def test_the_torch_backend_names_its_extra_when_missing() -> None:
    with pytest.raises(MissingExtra, match=r"`torch` extra"):
        MiniLMEmbedder()
    # the CLI says so in one line before doing anything
    env = {**os.environ, "PYTHONPATH": str(REPO), "SIMPLEMEM_EMBEDDING_BACKEND": "torch"}
    run = subprocess.run(
        [sys.executable, "-m", "simplemem.cli", "demo"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert run.returncode == 2 and run.stdout == ""
    assert (
        run.stderr.startswith("error: ") and "`torch` extra" in run.stderr and "Traceback" not in run.stderr
    )


def test_model_key_follows_the_weights(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(shipped_model_dir(), copy)
    before = model_key(copy)
    assert model_key(copy) == before
    with (copy / "config.json").open("a") as f:
        f.write("\n")
    assert model_key(copy) != before
