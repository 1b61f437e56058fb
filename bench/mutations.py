"""Do the tests fail when the code breaks? Eleven mutations a memory service must never ship, run
against the unit tests of each revision, with the size of the code beside them.

    python -m bench.mutations [--rev REV ...] [--tests "pytest args"] [--only NAME ...] [--check]
                              [--baseline-only] [--show-failing]

For each revision (default: 97e3cbe, the code before issue 14, and HEAD) a throwaway
``git worktree add --detach`` under /tmp is made (``.venv`` linked to this clone's venv, ``../shared``
linked so the golden data is found), measured (non-blank lines of ``.py`` per top-level package, the
ten longest functions) and tested: once as it is (the baseline), then once per mutation. A mutation
is a search/replace in one file; since the code moved between revisions, it may give alternative
patterns, and the first whose every search string occurs exactly once is applied. A mutation that
finds no pattern in a revision is reported "n/a" there. Each run is the non-integration suite
(``-m "not integration"``, services skipped); a mutation's count is the tests that fail under it and
pass in the baseline. The file is restored after each run and the worktree removed at the end.
``--check`` only applies each mutation and imports the module (no tests).
"""

from __future__ import annotations

import argparse
import ast
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_REVS = ("97e3cbe", "HEAD")
PACKAGES = ("schemas", "processors", "runtime", "streams", "api", "cli", "infra", "bench", "tests")
CODE_PACKAGES = PACKAGES[:-1]
# before the one-package layout the query service was the top-level package ``service``
OLD_NAMES = {"service": "api"}


def package_of(rel: str) -> str:
    """``simplemem/processors/ingest/x.py`` and, in older revisions, ``processors/x.py``: ``processors``."""
    parts = rel.split("/")
    if parts[0] == "simplemem" and len(parts) > 1:
        return parts[1].removesuffix(".py")
    if parts[0] == "processors" and parts[-1] == "runtime.py":
        return "runtime"
    return OLD_NAMES.get(parts[0], parts[0])


TOP_FUNCTIONS = 10
# A mutated run may hang (an inverted loop bound...): it is stopped after this many baselines.
TIMEOUT_BASELINES = 3
MIN_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Variant:
    """One way to apply a mutation: every ``(search, replace)`` pair on one file."""

    path: str
    edits: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    variants: tuple[Variant, ...]


def _one(path: str, search: str, replace: str) -> Variant:
    return Variant(path, ((search, replace),))


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "sqlite-no-tenant",
        "embedded lexical search matches every tenant's memories (FTS tenant token and join dropped)",
        (
            Variant(
                "simplemem/processors/stores/sqlite_lexical.py",
                (
                    (
                        "match = f\"tenant:{tenant_token(tenant_id)} AND ({' OR '.join(_quote(t) for t in terms)})\"",
                        "match = f\"({' OR '.join(_quote(t) for t in terms)})\"",
                    ),
                    (
                        '"JOIN units u ON u.rowid = f.rowid AND u.tenant_id = ?",',
                        '"JOIN units u ON u.rowid = f.rowid AND ? IS NOT NULL",',
                    ),
                ),
            ),
            Variant(
                "simplemem/processors/stores/sqlite_lexical.py",
                (
                    (
                        "match = f\"tenant:{tenant_token(tenant_id)} AND ({' OR '.join(_quote(t) for t in terms)})\"",
                        "match = f\"({' OR '.join(_quote(t) for t in terms)})\"",
                    ),
                    (
                        '"SELECT u.id, SUM(x.s) AS s FROM scored x JOIN units u ON u.rowid = x.r AND u.tenant_id = ?",',
                        '"SELECT u.id, SUM(x.s) AS s FROM scored x JOIN units u ON u.rowid = x.r AND ? IS NOT NULL",',
                    ),
                    (
                        '"JOIN units u ON u.rowid = f.rowid AND u.tenant_id = ? WHERE units_fts MATCH ?",',
                        '"JOIN units u ON u.rowid = f.rowid AND ? IS NOT NULL WHERE units_fts MATCH ?",',
                    ),
                ),
            ),
            Variant(  # since the search sums both FTS sides in SQL
                "simplemem/processors/stores/sqlite_lexical.py",
                (
                    (
                        "match = f\"tenant:{tenant_token(tenant_id)} AND ({' OR '.join(_quote(t) for t in terms)})\"",
                        "match = f\"({' OR '.join(_quote(t) for t in terms)})\"",
                    ),
                    (
                        '"JOIN units u ON u.rowid = f.rowid AND u.tenant_id = ? WHERE units_fts MATCH ?",',
                        '"JOIN units u ON u.rowid = f.rowid AND ? IS NOT NULL WHERE units_fts MATCH ?",',
                    ),
                ),
            ),
        ),
    ),
    Mutation(
        "milvus-no-tenant",
        "vector search filter no longer names the tenant",
        (
            _one(
                "simplemem/processors/stores/milvus_vectors.py",
                'expr = [f"tenant_id == {_lit(tenant_id)}"]',
                "expr = ['tenant_id != \"\"']",
            ),
        ),
    ),
    Mutation(
        "vectors-no-tenant",
        "the embedded vector store's search reads every tenant's rows",
        (
            _one(
                "simplemem/processors/stores/sqlite_vectors.py",
                'vec FROM vectors WHERE tenant_id = ?",\n                (tenant_id,),',
                'vec FROM vectors WHERE tenant_id != ?",\n                ("",),',
            ),
            _one(  # since the file numbers its tenants
                "simplemem/processors/stores/sqlite_vectors.py",
                'vec FROM vectors WHERE tenant_id = ?",\n                (self._tenants.number(tenant_id),),',
                'vec FROM vectors WHERE tenant_id != ?",\n                (-1,),',
            ),
        ),
    ),
    Mutation(
        "pii-scrub-dropped",
        "PiiScrubber.scrub returns its input unchanged",
        (
            _one(
                "simplemem/processors/pii/scrubber.py",
                "        if not text.strip():\n            return Scrubbed(text, [])\n",
                "        return Scrubbed(text, [])\n",
            ),
        ),
    ),
    Mutation(
        "entropy-inverted",
        "entropy filter keeps the windows below the threshold and drops the rest",
        (
            _one(
                "simplemem/processors/ingest/entropy.py",
                "kept=score >= self.threshold,",
                "kept=score < self.threshold,",
            ),
        ),
    ),
    Mutation(
        "retrieval-archived",
        "retrieval asks the stores for archived memories too (active_only off, sibling check gone)",
        (
            Variant(
                "simplemem/processors/retrieval/admission.py",
                (
                    (
                        "return filters.include_archived or unit.status == MemoryStatus.ACTIVE",
                        "return True",
                    ),
                ),
            ),
            Variant(
                "simplemem/processors/retrieval/retriever.py",
                (
                    ("active_only=not filters.include_archived,", "active_only=False,"),
                    (
                        "return filters.include_archived or unit.status == MemoryStatus.ACTIVE",
                        "return True",
                    ),
                ),
            ),
            Variant(
                "simplemem/processors/retrieval/retriever.py",
                (
                    ("active_only=not filters.include_archived,", "active_only=False,"),
                    (
                        "if unit.id not in have and unit.status == MemoryStatus.ACTIVE:",
                        "if unit.id not in have:",
                    ),
                ),
            ),
        ),
    ),
    Mutation(
        "temporal-yesterday",
        '"yesterday" resolves to the day it was said',
        (
            _one(
                "simplemem/processors/language/temporal.py",
                '    if name == "yesterday":\n        return _day(ref - timedelta(days=1))',
                '    if name == "yesterday":\n        return _day(ref)',
            ),
        ),
    ),
    Mutation(
        "memory-id-no-tenant",
        "memory id hash leaves the tenant out (two tenants' equal facts share an id)",
        (
            _one(
                "simplemem/schemas/memory.py",
                "for part in (tenant_id, str(kind),",
                "for part in (str(kind),",
            ),
        ),
    ),
    Mutation(
        "event-tenant-unchecked",
        "ChatEvent accepts any non-empty tenant_id (blank, spaces, control characters)",
        (
            # now: every model takes a tenant id as the annotated type TenantId
            _one(
                "simplemem/schemas/keys.py",
                "AfterValidator(partial(check_id, tenant=True))",
                "AfterValidator(str)",
            ),
            # after: the id rule lives in simplemem.schemas.keys.check_id
            _one(
                "simplemem/schemas/events.py",
                "        return check_id(value, tenant=True)",
                "        return value",
            ),
            # before: one blank check for the ids and the speaker
            _one(
                "simplemem/schemas/events.py",
                '@field_validator("tenant_id", "session_id", "message_id", "speaker")',
                '@field_validator("session_id", "message_id", "speaker")',
            ),
        ),
    ),
    Mutation(
        "code-blocks-noop",
        "split_code finds no code: code is decomposed as prose",
        (
            _one(
                "simplemem/processors/language/code_blocks.py",
                '    blocks: list[str] = []\n    if "```" in text:',
                '    return CodeSplit([], text)\n    blocks: list[str] = []\n    if "```" in text:',
            ),
        ),
    ),
    Mutation(
        "window-stride-off-by-one",
        "each window after the first carries stride - 1 new messages (one more of context)",
        (
            _one(
                "simplemem/processors/ingest/windowing.py",
                "keep = self.window_size - self.stride\n",
                "keep = self.window_size - self.stride + 1\n",
            ),
        ),
    ),
)


@dataclass
class Run:
    """One pytest run: the failing test ids, the totals, the wall time, or why it did not count."""

    failing: set[str] = field(default_factory=set)
    total: int = 0
    skipped: int = 0
    seconds: float = 0.0
    problem: str | None = None


@dataclass
class RevisionReport:
    rev: str
    commit: str
    lines: dict[str, int | None]  # None: no such package in this revision
    functions: list[tuple[int, str]]
    baseline: Run | None = None
    mutations: dict[str, Run | str] = field(default_factory=dict)  # a str: why there is no run
    variants: dict[str, int] = field(default_factory=dict)  # the pattern applied, 1-based
    notes: list[str] = field(default_factory=list)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def git(*args: str, cwd: Path = ROOT) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


@contextmanager
def worktree(rev: str, venv: Path) -> Iterator[Path]:
    """A detached worktree of ``rev`` at /tmp/mut-*/repo, removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=f"mut-{rev}-"))
    repo = base / "repo"
    git("worktree", "add", "--detach", str(repo), rev)
    try:
        (repo / ".venv").symlink_to(venv)
        shared = ROOT.parent / "shared"  # tests find ../shared next to the clone
        if shared.exists():
            (base / "shared").symlink_to(shared)
        yield repo
    finally:
        git("worktree", "remove", "--force", str(repo))
        shutil.rmtree(base, ignore_errors=True)


def python_files(repo: Path) -> list[str]:
    return [p for p in git("ls-files", "--", "*.py", cwd=repo).splitlines() if package_of(p) in PACKAGES]


def count_lines(repo: Path, files: Sequence[str]) -> dict[str, int | None]:
    lines: dict[str, int] = {}
    for rel in files:
        text = (repo / rel).read_text(encoding="utf-8")
        package = package_of(rel)
        lines[package] = lines.get(package, 0) + sum(1 for line in text.splitlines() if line.strip())
    return {p: lines.get(p) for p in PACKAGES}


def largest_functions(repo: Path, files: Sequence[str], top: int) -> list[tuple[int, str]]:
    """The ``top`` longest functions and methods of the code packages (tests excluded), by
    ``end_lineno - lineno + 1``, as (lines, "file:Qualified.name")."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, prefix: str, rel: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                found.append(((child.end_lineno or child.lineno) - child.lineno + 1, f"{rel}:{name}"))
                visit(child, f"{name}.", rel)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", rel)
            else:
                visit(child, prefix, rel)

    for rel in files:
        if package_of(rel) in CODE_PACKAGES:
            visit(ast.parse((repo / rel).read_text(encoding="utf-8")), "", rel)
    return sorted(found, key=lambda f: (-f[0], f[1]))[:top]


def test_env(repo: Path) -> dict[str, str]:
    """This environment without any SIMPLEMEM_ setting (no integration), services skipped, no .pyc
    written (a restored file must never meet its mutated bytecode)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIMPLEMEM_")}
    env.update(
        SIMPLEMEM_SKIP_SERVICES="1",
        PYTHONPATH=str(repo),
        PYTHONDONTWRITEBYTECODE="1",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    return env


def pytest_args(repo: Path, extra: Sequence[str], notes: list[str]) -> list[str]:
    """The user's pytest arguments, without test paths this revision does not have (noted)."""
    kept = []
    for arg in extra:
        if arg.startswith("tests/") and not (repo / arg.split("::")[0]).exists():
            notes.append(f"{arg} does not exist here: left out")
            continue
        kept.append(arg)
    return kept


def run_tests(repo: Path, extra: Sequence[str], label: str, timeout: float) -> Run:
    work = Path(tempfile.mkdtemp(prefix=f"pt-{label}-", dir=repo.parent))
    report = work / "junit.xml"
    cmd = [
        str(repo / ".venv" / "bin" / "python"),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not integration",
        "--basetemp",
        str(work / "tmp"),
        "--junitxml",
        str(report),
        *extra,
    ]
    start = time.monotonic()
    with (work / "pytest.log").open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=repo, env=test_env(repo), stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the group this run started, nothing else
            proc.wait()
            return Run(seconds=time.monotonic() - start, problem=f"timeout after {timeout:.0f} s")
    run = Run(seconds=time.monotonic() - start)
    if not report.exists():
        run.problem = f"pytest exited {proc.returncode} without a report"
        return run
    for case in ET.parse(report).getroot().iter("testcase"):
        run.total += 1
        test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            run.failing.add(test_id)
        elif case.find("skipped") is not None:
            run.skipped += 1
    shutil.rmtree(work, ignore_errors=True)
    return run


_LEGACY_NAMES = {"pii/scrubber": "pii", "ingest/llm_decompose": "llm", "retrieval/retriever": "retrieval"}


def legacy_path(rel: str) -> str:
    """Where a file of the one-package layout lived before it (flat top-level packages)."""
    if not rel.startswith("simplemem/"):
        return rel
    rest = rel.removeprefix("simplemem/")
    if rest == "runtime.py":
        return "processors/runtime.py"
    if rest.startswith("api/"):
        return "service/" + rest.removeprefix("api/")
    parts = rest.split("/")
    if parts[0] == "processors" and len(parts) == 3 and parts[1] != "stores":
        stem = f"{parts[1]}/{parts[2].removesuffix('.py')}"
        name = _LEGACY_NAMES.get(stem, f"pii_{parts[2][:-3]}" if parts[1] == "pii" else parts[2][:-3])
        return f"processors/{name}.py"
    return rest


def _variant_number(mutation: Mutation, variant: Variant) -> int:
    """1-based, counting a variant at its legacy path as the variant it derives from."""
    for i, v in enumerate(mutation.variants, 1):
        if v.edits == variant.edits and variant.path in (v.path, legacy_path(v.path)):
            return i
    raise ValueError(variant.path)


def choose_variant(repo: Path, mutation: Mutation) -> tuple[Variant | None, str]:
    """The first variant whose every search string occurs exactly once, or why none does (a revision
    before the one-package layout has the file at its legacy path)."""
    why = []
    candidates = [*mutation.variants, *(Variant(legacy_path(v.path), v.edits) for v in mutation.variants)]
    for v in candidates:
        path = repo / v.path
        if not path.exists():
            why.append(f"{v.path} missing")
            continue
        text = path.read_text(encoding="utf-8")
        counts = [text.count(search) for search, _ in v.edits]
        if all(c == 1 for c in counts):
            return v, ""
        why.append(f"{v.path}: pattern counts {counts}")
    return None, "; ".join(why)


def apply(repo: Path, variant: Variant) -> str:
    """Apply the variant; returns the original text."""
    path = repo / variant.path
    original = path.read_text(encoding="utf-8")
    text = original
    for search, replace in variant.edits:
        text = text.replace(search, replace, 1)
    path.write_text(text, encoding="utf-8")
    return original


def imports(repo: Path, rel: str) -> str | None:
    """None if the mutated module still imports, else the last line of the error."""
    module = rel.removesuffix(".py").replace("/", ".")
    code = f"import importlib; importlib.import_module({module!r})"
    proc = subprocess.run(
        [str(repo / ".venv" / "bin" / "python"), "-c", code],
        cwd=repo,
        env=test_env(repo),
        capture_output=True,
        text=True,
    )
    if proc.returncode == 0:
        return None
    lines = proc.stderr.strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"


def measure(rev: str, args: argparse.Namespace, mutations: Sequence[Mutation]) -> RevisionReport:
    commit = git("rev-parse", "--short", rev).strip()
    with worktree(commit, args.venv) as repo:
        files = python_files(repo)
        rep = RevisionReport(
            rev, commit, count_lines(repo, files), largest_functions(repo, files, TOP_FUNCTIONS)
        )
        extra = pytest_args(repo, args.tests, rep.notes)
        timeout = MIN_TIMEOUT_S
        if not args.check:
            log(f"{commit}: baseline run")
            rep.baseline = run_tests(repo, extra, "baseline", args.max_seconds)
            b = rep.baseline
            log(
                f"{commit}: baseline {b.total} tests, {len(b.failing)} failing, {b.seconds:.0f} s {b.problem or ''}"
            )
            timeout = max(MIN_TIMEOUT_S, TIMEOUT_BASELINES * b.seconds)
        for m in mutations:
            variant, why = choose_variant(repo, m)
            if variant is None:
                rep.mutations[m.name] = f"n/a ({why})"
                log(f"{commit}: {m.name}: n/a: {why}")
                continue
            rep.variants[m.name] = _variant_number(m, variant)
            original = apply(repo, variant)
            try:
                error = imports(repo, variant.path)
                if error is not None:
                    rep.mutations[m.name] = f"import error: {error}"
                elif args.check:
                    rep.mutations[m.name] = f"applies to {variant.path}, imports"
                else:
                    log(f"{commit}: {m.name} ({variant.path})")
                    run = run_tests(repo, extra, m.name, timeout)
                    rep.mutations[m.name] = run
                    log(
                        f"{commit}: {m.name}: {len(run.failing)} failing, {run.seconds:.0f} s {run.problem or ''}"
                    )
            finally:
                (repo / variant.path).write_text(original, encoding="utf-8")
            if git("status", "--porcelain", "--untracked-files=no", cwd=repo).strip():
                raise RuntimeError(f"{commit}: {variant.path} was not restored")
    return rep


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    cells = [[str(h) for h in headers], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(lines)


def mutation_cell(rep: RevisionReport, name: str) -> str:
    result = rep.mutations.get(name)
    if isinstance(result, str):
        return result
    if result is None:
        return "not run"
    if result.problem:
        return result.problem
    baseline = rep.baseline.failing if rep.baseline else set()
    return str(len(result.failing - baseline))


def render(reports: Sequence[RevisionReport], mutations: Sequence[Mutation], args: argparse.Namespace) -> str:
    labels = [f"{tag} {r.commit}" for tag, r in zip(_tags(len(reports)), reports, strict=True)]
    out = [f"simplemem mutation report ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})"]
    out.append(
        "tests: " + (shlex.join(args.tests) if args.tests else "the whole suite") + ', -m "not integration"'
    )
    out += ["", "Lines per package (non-blank lines of .py files)"]
    rows: list[list[object]] = [[p, *(_absent(r.lines[p]) for r in reports)] for p in PACKAGES]
    rows.append(["total", *(sum(n or 0 for n in r.lines.values()) for r in reports)])
    out.append(table(["package", *labels], rows))
    for label, r in zip(labels, reports, strict=True):
        out += ["", f"Largest functions, {label} (end_lineno - lineno + 1; tests excluded)"]
        out.append(table(["lines", "function"], r.functions))
    if not args.check:
        out += ["", "Failing tests per mutation (tests that fail under it and pass without it)"]
        rows = [[m.name, *(mutation_cell(r, m.name) for r in reports)] for m in mutations]
        base: list[object] = ["(baseline: failing / run / skipped)"]
        for r in reports:
            b = r.baseline
            base.append(b.problem or f"{len(b.failing)} / {b.total} / {b.skipped}" if b else "not run")
        rows.append(base)
        rows.append(
            ["(baseline wall time)", *(f"{r.baseline.seconds:.0f} s" if r.baseline else "" for r in reports)]
        )
        out.append(table(["mutation", *(f"{lb}: failing tests" for lb in labels)], rows))
    else:
        out += ["", "Mutations (--check: applied and imported, no tests run)"]
        out.append(
            table(
                ["mutation", *labels], [[m.name, *(r.mutations[m.name] for r in reports)] for m in mutations]
            )
        )
    out += ["", "The mutations"]
    for m in mutations:
        out.append(f"- {m.name}: {m.what} ({', '.join(sorted({v.path for v in m.variants}))})")
        for i, v in enumerate(m.variants, 1):
            used = [lb for lb, r in zip(labels, reports, strict=True) if r.variants.get(m.name) == i]
            edits = "; ".join(f"{s!r} -> {t!r}" for s, t in v.edits)
            out.append(f"    {i}. {edits} [applied: {', '.join(used) or 'none'}]")
    if args.show_failing:
        out += _failing_lists(reports, labels)
    for label, r in zip(labels, reports, strict=True):
        if r.baseline and r.baseline.failing:
            out += ["", f"Failing without any mutation, {label} (subtracted above):"]
            out += [f"  {t}" for t in sorted(r.baseline.failing)]
        out += [f"note, {label}: {n}" for n in r.notes]
    return "\n".join(out)


def _failing_lists(reports: Sequence[RevisionReport], labels: Sequence[str]) -> list[str]:
    out = ["", "Tests failing under each mutation (baseline failures left out)"]
    for label, r in zip(labels, reports, strict=True):
        baseline = r.baseline.failing if r.baseline else set()
        for name, run in r.mutations.items():
            if isinstance(run, Run):
                out.append(f"{label}, {name}:")
                out += [f"  {t}" for t in sorted(run.failing - baseline)] or ["  (none)"]
    return out


def _absent(lines: int | None) -> str:
    return "(absent)" if lines is None else str(lines)


def _tags(count: int) -> list[str]:
    return ["before", "after"] if count == 2 else [f"rev{i + 1}" for i in range(count)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--rev", action="append", help=f"a revision to measure (repeatable; default {DEFAULT_REVS})"
    )
    ap.add_argument(
        "--tests", type=shlex.split, default=[], help='extra pytest arguments, e.g. "tests/test_x.py"'
    )
    ap.add_argument("--only", action="append", help="run only this mutation (repeatable)")
    ap.add_argument("--check", action="store_true", help="apply and import each mutation; run no tests")
    ap.add_argument("--baseline-only", action="store_true", help="time the unmutated runs only")
    ap.add_argument("--show-failing", action="store_true", help="list the tests each mutation fails")
    ap.add_argument("--venv", type=Path, default=(ROOT / ".venv").resolve(), help="the venv to link")
    ap.add_argument("--max-seconds", type=float, default=3600.0, help="a baseline run's time limit")
    args = ap.parse_args()
    names = {m.name for m in MUTATIONS}
    if args.only and not set(args.only) <= names:
        ap.error(f"unknown mutation(s) {sorted(set(args.only) - names)}; known: {sorted(names)}")
    mutations = [m for m in MUTATIONS if (not args.only or m.name in args.only) and not args.baseline_only]
    reports = [measure(rev, args, mutations) for rev in (args.rev or DEFAULT_REVS)]  # one after another
    print(render(reports, mutations, args))


if __name__ == "__main__":
    main()
