"""The int8 ONNX MiniLM against the torch model it is derived from: same vector space."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from simplemem.processors.ingest.embedding import MiniLMEmbedder, shipped_model_dir
from simplemem.processors.ingest.onnx_embedding import OnnxMiniLMEmbedder, model_key
from simplemem.schemas.settings import Settings

pytestmark = pytest.mark.slow

SENTENCES = [
    "Caroline went to the LGBTQ support group yesterday.",
    "Melanie painted a sunrise over the lake last year.",
    "I'm planning to adopt a dog next month.",
    "We hiked up Mount Tam on Saturday and had a picnic.",
    "My new job at the bakery starts on Monday.",
    "The kids loved the pottery class.",
    "ok thanks",
    "def parse(line: str) -> dict: return json.loads(line)",
    "She has been running marathons since 2019 and finished Boston in 3:10.",
    "",
]


def test_int8_vectors_agree_with_torch() -> None:
    onnx = OnnxMiniLMEmbedder(None, Settings().model_cache_dir)
    torch = MiniLMEmbedder(dtype="float32")
    a, b = onnx.encode(SENTENCES), torch.encode(SENTENCES)
    assert a.shape == b.shape == (len(SENTENCES), 384)
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-4)
    cosine = (a * b).sum(axis=1)
    assert cosine.min() > 0.95 and cosine.mean() > 0.98
    # batching and order do not change a vector
    again = onnx.encode(list(reversed(SENTENCES)))[::-1]
    assert np.allclose(a, again, atol=1e-5)
    assert onnx.encode([]).shape == (0, 384)


def test_model_key_follows_the_weights(tmp_path: Path) -> None:
    copy = tmp_path / "model"
    shutil.copytree(shipped_model_dir(), copy)
    before = model_key(copy)
    assert model_key(copy) == before
    with (copy / "config.json").open("a") as f:
        f.write("\n")
    assert model_key(copy) != before
