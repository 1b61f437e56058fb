"""bench/ reaches the product only through public names: no ``obj._private`` attribute of another
object and no ``from simplemem... import _private`` (a bench that patches or reads a private method
breaks silently when the code moves, and measures something the product no longer does)."""

from __future__ import annotations

import ast
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def private_uses(source: str) -> list[str]:
    """The private names ``source`` reaches on other objects or imports from simplemem."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and is_private(node.attr) and not on_itself(node):
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("simplemem"):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if is_private(a.name)]
    return found


def is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def on_itself(node: ast.Attribute) -> bool:
    """``self._x`` or ``cls._x``: a class's own private state is its business."""
    return isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")


def test_the_check_sees_a_patched_private_method() -> None:
    assert private_uses("retriever._select = selected\nx = self._own") == ["line 1: retriever._select"]
    assert private_uses("from simplemem.processors.retrieval.select import _pick") == ["line 1: import _pick"]


def test_no_bench_script_uses_a_private_name() -> None:
    uses = {p.name: private_uses(p.read_text()) for p in sorted(BENCH.glob("*.py"))}
    assert {name: found for name, found in uses.items() if found} == {}
