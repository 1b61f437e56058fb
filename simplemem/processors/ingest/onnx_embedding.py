"""MiniLM through ONNX Runtime with int8 weights: the same model at a higher throughput than torch on
one core, which is what lets the embedder and spaCy share a small machine.

The int8 file is derived once per machine from the shipped weights (the fp32 graph written from
``model.safetensors`` by ``simplemem/processors/ingest/onnx_graph.py``, no torch, then ``onnxruntime`` dynamic
quantization, per-channel) and cached under a key of the source files, that builder and the tool
versions; nothing comes from a model hub. Vectors stay close to the fp32 torch model's:
``tests/test_onnx_embedding.py`` checks mean > 0.98 and minimum > 0.95 cosine on ten sentences of
its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path

import numpy as np

from simplemem.processors.ingest.embedding import Vectors, model_dimension, shipped_model_dir

log = logging.getLogger(__name__)

_SOURCE_FILES = ("config.json", "model.safetensors", "tokenizer.json", "modules.json")
# what reads the weights, writes the fp32 graph and quantizes it (the builder is imported by a build
# only: a query process that finds the int8 file does not load onnx)
_BUILD_TOOLS = ("safetensors", "numpy", "onnx", "onnxruntime")
_GRAPH_BUILDER = Path(__file__).with_name("onnx_graph.py")


def model_key(model_dir: Path) -> str:
    """Changes when the weights, the graph builder or the converting tools change, so a stale file is
    never reused."""
    h = hashlib.sha256()
    for name in _SOURCE_FILES:
        path = model_dir / name
        if path.exists():
            stat = path.stat()
            h.update(f"{name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    h.update(_GRAPH_BUILDER.read_bytes())
    for package in _BUILD_TOOLS:
        h.update(f"{package}={version(package)}".encode())
    return h.hexdigest()[:16]


def int8_model_path(model_dir: Path, cache_dir: Path) -> Path:
    """The cached int8 model for ``model_dir``, built on first use (atomically: workers may race)."""
    target = cache_dir / f"minilm-int8-{model_key(model_dir)}.onnx"
    if target.exists():
        return target
    cache_dir.mkdir(parents=True, exist_ok=True)
    log.info("building the int8 ONNX model of %s into %s (once per machine)", model_dir, target)
    with tempfile.TemporaryDirectory(dir=cache_dir) as tmp, _quiet_tools():
        from onnxruntime.quantization import QuantType, quantize_dynamic

        from simplemem.processors.ingest.onnx_graph import write_fp32

        fp32 = Path(tmp) / "fp32.onnx"
        write_fp32(model_dir, fp32)

        int8 = Path(tmp) / "int8.onnx"
        quantize_dynamic(fp32, int8, weight_type=QuantType.QInt8, per_channel=True)
        os.replace(int8, target)
    return target


@contextmanager
def _quiet_tools() -> Iterator[None]:
    """The one-time build says nothing on stderr: the quantizer's advice (logged on the root logger)
    and ONNX Runtime's warnings are about tools, not about anything a user can act on."""
    import onnxruntime as ort

    root = logging.getLogger()
    level = root.level
    ort.set_default_logger_severity(3)
    root.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        root.setLevel(level)


class OnnxMiniLMEmbedder:
    """Mean-pooled, normalised MiniLM vectors from the int8 ONNX model, in length-sorted batches."""

    def __init__(
        self,
        model_dir: Path | None,
        cache_dir: Path,
        *,
        batch_size: int = 8,
        batch_tokens: int = 512,
        threads: int = 1,
        runners: int = 1,
        onnx_file: Path | None = None,
    ) -> None:
        """``runners``: how many of a call's batches run at once, each on one thread of ONNX Runtime's
        (a batch run gives it its cores: ONNX Runtime's own threads per batch spin more than they
        compute on batches this small). ``onnx_file`` runs another graph of the same model instead
        of the cached int8 one (the tests run the fp32 graph through the same tokenizer and
        pooling)."""
        import onnxruntime as ort
        from tokenizers import Tokenizer

        source = model_dir or shipped_model_dir()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self._session = ort.InferenceSession(
            str(onnx_file or int8_model_path(source, cache_dir)), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(source / "tokenizer.json"))
        self._tokenizer.enable_truncation(_max_tokens(source))
        self._tokenizer.no_padding()  # the file's own setting pads; batches are padded here, by length
        self.dim = model_dimension(source)
        self.batch_size = batch_size
        self.batch_tokens = batch_tokens
        self._runners = ThreadPoolExecutor(runners, thread_name_prefix="minilm") if runners > 1 else None

    def encode(self, texts: list[str]) -> Vectors:
        """Texts tokenized once, sorted by their word pieces and run in small batches padded to their
        longest: int8 MiniLM on one core is bound by the padded positions, and ONNX Runtime quantizes
        a batch's activations with one scale, so a short batch also keeps each vector nearer fp32.
        A text repeated in the call is embedded once (a scrubbed list repeats its lines)."""
        distinct = list(dict.fromkeys(texts))
        if len(distinct) < len(texts):
            rows_of = {t: i for i, t in enumerate(distinct)}
            return self.encode(distinct)[[rows_of[t] for t in texts]]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        pieces = [e.ids for e in self._tokenizer.encode_batch(texts)]
        batches = list(length_batches([len(p) for p in pieces], self.batch_size, self.batch_tokens))

        def run(rows: list[int]) -> None:
            width = max(len(pieces[r]) for r in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            for j, r in enumerate(rows):
                ids[j, : len(pieces[r])] = pieces[r]
                mask[j, : len(pieces[r])] = 1
            states = self._session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            means = (states * mask[:, :, None]).sum(axis=1) / np.maximum(mask.sum(axis=1, keepdims=True), 1)
            norms = np.linalg.norm(means, axis=1, keepdims=True)
            out[rows] = means / np.where(norms == 0, 1, norms)

        if self._runners is not None and len(batches) > 1:
            list(self._runners.map(run, batches))
        else:
            for rows in batches:
                run(rows)
        return out


def length_batches(lengths: list[int], rows: int, tokens: int) -> Iterator[list[int]]:
    """Indexes in order of length, cut into batches of at most ``rows`` rows whose padded size (rows
    times the longest) stays within ``tokens``; a text longer than that goes alone."""
    batch: list[int] = []
    for i in sorted(range(len(lengths)), key=lengths.__getitem__):
        if batch and (len(batch) == rows or lengths[i] * (len(batch) + 1) > tokens):
            yield batch
            batch = []
        batch.append(i)
    if batch:
        yield batch


def _max_tokens(model_dir: Path) -> int:
    config = model_dir / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text()).get("max_seq_length", 256))
    return 256
