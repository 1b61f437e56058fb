"""``simplemem demo``: the sample conversation shipped with the project, end to end."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Annotated

import orjson
import typer
from rich.console import Console

from cli.console import out, quiet_libraries
from cli.errors import one_line_errors
from cli.inputs import open_input
from cli.report import print_report
from cli.store import open_store
from processors.tokens import count_tokens
from schemas.query import QueryRequest
from schemas.settings import Settings, get_settings

QUESTIONS = [
    "Where does Riley work?",
    "When is the design review?",
    "What is the name of Riley's dog and when was he adopted?",
    "What should I avoid in recipes?",
    "Show me the retry helper for the billing client.",
    "What is Riley's phone number?",
    "Where is Riley travelling next month?",
]
AS_OF = "2026-03-20T12:00:00+00:00"


def sample_path() -> Path:
    return Path(str(resources.files("cli") / "data" / "sample_conversation.jsonl"))


def run_demo(settings: Settings, store: Path, console: Console) -> None:
    path = sample_path()
    with open_store(settings, store, "simplemem demo", create=True) as rt:
        console.print(f"[bold]Ingesting[/bold] {path.name} into {store}")
        with open_input(str(path)) as source:
            report = rt.pipeline.ingest(source.lines())
        print_report(report, console)
        history = "\n".join(
            f"{e['speaker']}: {e['text']}"
            for e in (orjson.loads(line) for line in path.read_bytes().splitlines() if line)
        )
        full = count_tokens(history, settings.tokenizer_encoding)
        for question in QUESTIONS:
            result = rt.retriever.query(QueryRequest(tenant_id="demo", query=question, as_of=AS_OF))
            console.print(
                f"\n[bold cyan]Q:[/bold cyan] {question}  "
                f"(complexity {result.complexity:.2f}, k={result.k}, {result.context_tokens} tokens "
                f"vs {full} for the full history)"
            )
            console.print(result.context or "(nothing)", markup=False, highlight=False)


@one_line_errors
def demo(
    store: Annotated[
        Path | None, typer.Option("--store", help="store folder (default: a temporary one)")
    ] = None,
) -> None:
    """Ingest a small sample conversation, ask a few questions, show the tokens saved."""
    import tempfile

    quiet_libraries()
    target = store or Path(tempfile.mkdtemp(prefix="simplemem-demo-"))
    run_demo(get_settings(), target, out)


def register(app: typer.Typer) -> None:
    app.command()(demo)
