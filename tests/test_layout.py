"""The architecture as the imports show it: layers only import downwards, and no module imports
another that imports it back (function-local imports included: they hide cycles, not remove them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("schemas", "processors", "streams", "service", "cli", "infra", "bench")
# what each layer may import from the project (itself included)
ALLOWED = {
    "schemas": {"schemas"},
    "processors": {"schemas", "processors"},
    "streams": {"schemas", "processors", "streams"},
    "service": {"schemas", "processors", "streams", "service"},
    "cli": {"schemas", "processors", "streams", "service", "cli", "infra"},
    "infra": {"schemas", "infra"},
    "bench": {"schemas", "processors", "streams", "service", "cli", "infra", "bench"},
}


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_imports() -> dict[str, set[str]]:
    """Module -> the project modules it imports, anywhere in its body."""
    modules = {_module(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found.add(node.module)
                found.update(f"{node.module}.{a.name}" for a in node.names)
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def test_layers_import_only_downwards() -> None:
    wrong = [
        f"{mod} imports {dep}"
        for mod, deps in project_imports().items()
        for dep in deps
        if dep.split(".")[0] not in ALLOWED[mod.split(".")[0]]
    ]
    assert wrong == []


def test_no_import_cycles() -> None:
    graph = project_imports()
    cycles = []
    for start in graph:
        stack, seen = [(start, [start])], set()
        while stack:
            node, path = stack.pop()
            for dep in graph[node]:
                if dep == start:
                    cycles.append(" -> ".join([*path, start]))
                elif dep not in seen:
                    seen.add(dep)
                    stack.append((dep, [*path, dep]))
    assert cycles == []


@pytest.mark.parametrize("package", ["processors", "schemas"])
def test_no_kafka_below_the_streams(package: str) -> None:
    for path in (ROOT / package).rglob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {n for n in names if n.split(".")[0] in {"faust", "aiokafka"}}, path
