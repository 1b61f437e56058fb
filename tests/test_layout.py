"""The architecture as the imports show it: layers only import downwards, and no module imports
another that imports it back (function-local imports included: they hide cycles, not remove them)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("simplemem", "bench", "tests")
# what each layer may import from the project (itself included); a layer is a sub-package of simplemem/
# (``runtime`` is the composition root: it builds the processors' stages and stores from the settings)
ALLOWED = {
    "schemas": {"schemas"},
    "processors": {"schemas", "processors"},
    "runtime": {"schemas", "processors", "runtime"},
    "streams": {"schemas", "processors", "runtime", "streams"},
    "api": {"schemas", "processors", "runtime", "streams", "api"},
    "cli": {"schemas", "processors", "runtime", "streams", "api", "cli", "infra", "client"},
    "infra": {"schemas", "infra"},
    "client": {"schemas", "client"},  # the Python client of the query service: light on purpose
    # the helpers the tests and the benches share (processes, scripted conversations): never a bench
    "helpers": {"schemas", "processors", "runtime", "streams", "api", "cli", "infra", "client", "helpers"},
    "bench": {
        "schemas",
        "processors",
        "runtime",
        "streams",
        "api",
        "cli",
        "infra",
        "client",
        "helpers",
        "bench",
    },
    # a test imports a bench module only to test it, or to read a data set the benches own
    "tests": {
        "schemas",
        "processors",
        "runtime",
        "streams",
        "api",
        "cli",
        "infra",
        "client",
        "helpers",
        "bench",
        "tests",
    },
    "simplemem": set(),
}


def layer(module: str) -> str:
    """``simplemem.processors.ingest.pipeline`` -> ``processors``; ``bench.locomo`` -> ``bench``;
    ``tests.helpers.serving`` -> ``helpers``."""
    parts = module.split(".")
    if parts[0] == "tests" and len(parts) > 1 and parts[1] == "helpers":
        return "helpers"
    return parts[1] if parts[0] == "simplemem" and len(parts) > 1 else parts[0]


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
        if layer(dep) not in ALLOWED[layer(mod)]
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
    for path in (ROOT / "simplemem" / package).rglob("*.py"):
        text = path.read_text()
        tree = ast.parse(text)
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not {n for n in names if n.split(".")[0] in {"faust", "aiokafka"}}, path


def test_each_processors_group_is_used_through_its_entry_points() -> None:
    """The PII group's helpers (recognizers, cues, secrets, addresses) sit behind its scrubber."""
    outside = {
        dep
        for mod, deps in project_imports().items()
        if not mod.startswith(("simplemem.processors.pii", "tests."))  # a unit test reads its module
        for dep in deps
        if dep.startswith("simplemem.processors.pii.")
    }
    assert {d.rsplit(".", 1)[0] if d.count(".") > 3 else d for d in outside} <= {
        "simplemem.processors.pii.scrubber"
    }


def test_one_top_level_package_is_installed() -> None:
    from setuptools import find_packages

    found = find_packages(str(ROOT), include=["simplemem*"])
    assert found and all(p == "simplemem" or p.startswith("simplemem.") for p in found)
    text = (ROOT / "pyproject.toml").read_text()
    assert 'include = ["simplemem*"]' in text


MODULE_LINES = 500
FUNCTION_LINES = 80
# Still over the bounds, to be split (retrieval is being made a pipeline of steps; the others are
# listed in the issue that keeps them). A new module or function over them fails.
KNOWN_LONG = {
    "simplemem/processors/retrieval/retriever.py",
    "simplemem/processors/retrieval/retriever.py:query",
    "simplemem/schemas/settings.py",
}


def long_code() -> set[str]:
    """Modules of simplemem/ over :data:`MODULE_LINES` lines and functions over :data:`FUNCTION_LINES`."""
    found = set()
    for path in (ROOT / "simplemem").rglob("*.py"):
        name = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        if text.count("\n") > MODULE_LINES:
            found.add(name)
        functions = (
            n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        )
        found.update(
            f"{name}:{f.name}"
            for f in functions
            if (f.end_lineno or f.lineno) - f.lineno + 1 > FUNCTION_LINES
        )
    return found


def test_modules_and_functions_stay_small() -> None:
    assert long_code() - KNOWN_LONG == set()
