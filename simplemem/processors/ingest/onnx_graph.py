"""The fp32 ONNX graph of MiniLM's BERT encoder, written from ``config.json`` and ``model.safetensors``
with ``onnx.helper``: the default install then needs no torch (and none of its CUDA libraries) to
derive the int8 model. Only what BertModel computes for this checkpoint is built: absolute positions,
every token in segment 0, post-LayerNorm blocks, erf GELU. The output is the last hidden state,
``token_states`` (batch, tokens, hidden), from ``input_ids`` and ``attention_mask`` (int64, both axes
dynamic); pooling happens in numpy. ``tests/test_onnx_embedding.py`` holds it to the torch model's
vectors (cosine > 0.99999 per sentence).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import NodeProto, TensorProto, helper, numpy_helper

OPSET = 17  # LayerNormalization is a standard op from 17 on; ONNX Runtime 1.18 runs it


@dataclass(frozen=True)
class BertShape:
    """The few numbers of ``config.json`` the graph depends on."""

    layers: int
    hidden: int
    heads: int
    eps: float

    @classmethod
    def read(cls, model_dir: Path) -> BertShape:
        config = json.loads((model_dir / "config.json").read_text())
        # anything else would need a different graph: refuse rather than compute other vectors
        expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
        for key, value in expected.items():
            if config.get(key, value) != value:
                raise ValueError(f"{model_dir}: {key}={config[key]!r}, the ONNX graph supports {value!r}")
        return cls(
            config["num_hidden_layers"],
            config["hidden_size"],
            config["num_attention_heads"],
            float(config["layer_norm_eps"]),
        )


@dataclass
class GraphBuilder:
    """Nodes and initializers in the order they are added, with generated names for the values between."""

    nodes: list[NodeProto] = field(default_factory=list)
    weights: list[TensorProto] = field(default_factory=list)
    _names: set[str] = field(default_factory=set)
    _count: int = 0

    def const(self, name: str, array: np.ndarray) -> str:
        """An initializer, added once under its name (small constants are shared by the layers)."""
        if name not in self._names:
            self._names.add(name)
            self.weights.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out

    def linear(self, x: str, weights: dict[str, np.ndarray], prefix: str) -> str:
        """``x @ W.T + b`` as torch's Linear: the weight is stored transposed for a plain MatMul, the
        pattern the dynamic quantizer turns into an int8 MatMulInteger."""
        w = self.const(f"{prefix}.weight_t", weights[f"{prefix}.weight"].T)
        b = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("Add", self.op("MatMul", x, w), b)

    def layer_norm(self, x: str, weights: dict[str, np.ndarray], prefix: str, eps: float) -> str:
        scale = self.const(f"{prefix}.weight", weights[f"{prefix}.weight"])
        bias = self.const(f"{prefix}.bias", weights[f"{prefix}.bias"])
        return self.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=eps)


def embeddings(g: GraphBuilder, w: dict[str, np.ndarray], shape: BertShape) -> str:
    """Word + position + segment-0 embeddings, then LayerNorm. The segment-0 row is added to the
    position table once, here, since BertModel gives every token type 0 when no types are passed."""
    words = g.op("Gather", g.const("word_embeddings", w["embeddings.word_embeddings.weight"]), "input_ids")
    table = w["embeddings.position_embeddings.weight"] + w["embeddings.token_type_embeddings.weight"][0]
    tokens = g.op("Gather", g.op("Shape", "input_ids"), g.const("axis_1", np.array([1], np.int64)))
    positions = g.op(  # rows 0..tokens-1 of the table, broadcast over the batch
        "Slice",
        g.const("position_embeddings", table),
        g.const("zero", np.array([0], np.int64)),
        tokens,
        g.const("axis_0", np.array([0], np.int64)),
    )
    summed = g.op("Add", words, positions)
    return g.layer_norm(summed, w, "embeddings.LayerNorm", shape.eps)


def additive_mask(g: GraphBuilder) -> str:
    """(batch, 1, 1, tokens): 0 where attended, the float32 minimum on padding, as BertModel adds to the
    attention scores, so a padded batch gives each sentence the vectors it has alone."""
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    mask = g.op("Unsqueeze", mask, g.const("axes_1_2", np.array([1, 2], np.int64)))
    blocked = g.op("Sub", g.const("one", np.array(1.0, np.float32)), mask)
    return g.op("Mul", blocked, g.const("mask_value", np.array(np.finfo(np.float32).min, np.float32)))


def self_attention(
    g: GraphBuilder, x: str, mask: str, w: dict[str, np.ndarray], prefix: str, shape: BertShape
) -> str:
    """Multi-head scaled dot-product attention over (batch, tokens, hidden); the result is the context
    before the output projection."""
    head = shape.hidden // shape.heads
    split = g.const("split_heads", np.array([0, 0, shape.heads, head], np.int64))  # 0 keeps batch, tokens

    def heads(name: str, perm: list[int]) -> str:
        projected = g.linear(x, w, f"{prefix}.attention.self.{name}")
        return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

    query = heads("query", [0, 2, 1, 3])  # (batch, heads, tokens, head)
    key = heads("key", [0, 2, 3, 1])  # (batch, heads, head, tokens)
    value = heads("value", [0, 2, 1, 3])
    scores = g.op(
        "Div", g.op("MatMul", query, key), g.const("sqrt_head", np.array(math.sqrt(head), np.float32))
    )
    probs = g.op("Softmax", g.op("Add", scores, mask), axis=-1)
    context = g.op("Transpose", g.op("MatMul", probs, value), perm=[0, 2, 1, 3])
    return g.op("Reshape", context, g.const("merge_heads", np.array([0, 0, shape.hidden], np.int64)))


def gelu(g: GraphBuilder, x: str) -> str:
    """The exact (erf) GELU of BERT's ``hidden_act="gelu"``: 0.5 * x * (1 + erf(x / sqrt(2)))."""
    erf = g.op("Erf", g.op("Div", x, g.const("sqrt_2", np.array(math.sqrt(2.0), np.float32))))
    half_x = g.op("Mul", x, g.const("half", np.array(0.5, np.float32)))
    return g.op("Mul", half_x, g.op("Add", erf, g.const("one", np.array(1.0, np.float32))))


def encoder_layer(
    g: GraphBuilder, x: str, mask: str, w: dict[str, np.ndarray], index: int, shape: BertShape
) -> str:
    """One post-LayerNorm transformer block: attention and the feed-forward part, each added to its
    input (the residual) before its LayerNorm."""
    prefix = f"encoder.layer.{index}"
    context = self_attention(g, x, mask, w, prefix, shape)
    attended = g.op("Add", g.linear(context, w, f"{prefix}.attention.output.dense"), x)
    attended = g.layer_norm(attended, w, f"{prefix}.attention.output.LayerNorm", shape.eps)
    inner = gelu(g, g.linear(attended, w, f"{prefix}.intermediate.dense"))
    out = g.op("Add", g.linear(inner, w, f"{prefix}.output.dense"), attended)
    return g.layer_norm(out, w, f"{prefix}.output.LayerNorm", shape.eps)


def bert_encoder(model_dir: Path) -> onnx.ModelProto:
    """The whole encoder as an ONNX model, weights embedded (the model's whole size)."""
    from safetensors.numpy import load_file

    shape = BertShape.read(model_dir)
    # fp32 compute whatever the stored precision; some checkpoints nest BertModel under "bert."
    stored = load_file(model_dir / "model.safetensors")
    weights = {k.removeprefix("bert."): v.astype(np.float32, copy=False) for k, v in stored.items()}
    g = GraphBuilder()
    x = embeddings(g, weights, shape)
    mask = additive_mask(g)
    for index in range(shape.layers):
        x = encoder_layer(g, x, mask, weights, index, shape)
    g.nodes.append(helper.make_node("Identity", [x], ["token_states"]))
    dims = ["batch", "tokens"]
    graph = helper.make_graph(
        g.nodes,
        "bert_encoder",
        [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, dims),
            helper.make_tensor_value_info("attention_mask", TensorProto.INT64, dims),
        ],
        [helper.make_tensor_value_info("token_states", TensorProto.FLOAT, [*dims, shape.hidden])],
        g.weights,
    )
    opsets = [helper.make_opsetid("", OPSET)]
    # the oldest IR version that has the opset, so an older ONNX Runtime can still load the file
    model = helper.make_model(
        graph,
        opset_imports=opsets,
        ir_version=helper.find_min_ir_version_for(opsets),
        producer_name="simplemem",
    )
    onnx.checker.check_model(model)
    return model


def write_fp32(model_dir: Path, out: Path) -> None:
    """The fp32 encoder of ``model_dir`` as an ONNX file at ``out`` (the quantizer's input)."""
    onnx.save_model(bert_encoder(model_dir), str(out))
