"""``simplemem demo``: ten weeks of a personal-assistant chat (515 turns, ``simplemem/cli/data/demo_history.txt``)
ingested end to end, then questions answered from a context a few percent of the history's size.

Each answer shows its context with the line that holds the expected answer highlighted (the demo
knows what each question should find, and says so when the context misses it), and the accounting:
what ingestion kept, the context's tokens against the whole history's.
"""

from __future__ import annotations

import re
import time
from datetime import datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from simplemem.cli.console import out, quiet_libraries
from simplemem.cli.errors import one_line_errors
from simplemem.cli.report import print_report
from simplemem.cli.store import open_store
from simplemem.processors.language.tokens import count_tokens
from simplemem.schemas.query import QueryRequest, QueryResult
from simplemem.schemas.settings import Settings, get_settings

TENANT = "demo"
AS_OF = "2026-04-20T12:00:00+00:00"
TURN_GAP = timedelta(seconds=90)
# (question, a string the line that answers it holds)
DEMO: list[tuple[str, str]] = [
    ("Where does Sam work?", "Lumen Health"),
    ("What did Ines bring Sam?", "ceramic bowl"),
    ("Until when was Sam off coffee?", "until April"),
    ("What is the name of Sam's cat and what can't she eat?", "chicken"),
    ("When was the design review?", "26 February"),
    ("What does Tomas do for a living?", "chef"),
    ("When does Sam fly to Lisbon?", "May 14"),
    ("How much is the rent now?", "1,450"),
    ("What is Sam allergic to?", "shellfish"),
    ("What was Sam's half marathon time?", "2:04:37"),
    ("What is the landlord's phone number?", "<PHONE_NUMBER>"),
    ("Who was Sam's lead at work?", "Priya Nair"),
    ("What does Joana eat?", "vegan"),
]
QUESTIONS = [q for q, _ in DEMO]
_SESSION = re.compile(r"^## (\d{4}-\d{2}-\d{2} \d{2}:\d{2})\s*$")
_TURN = re.compile(r"^([A-Z][\w .-]*): (.*)$")


def history_path() -> Path:
    return Path(str(resources.files("simplemem.cli") / "data" / "demo_history.txt"))


def history_events(path: Path | None = None) -> list[dict[str, Any]]:
    """The demo history as chat events: one session per ``##`` header, turns 90 seconds apart."""
    events: list[dict[str, Any]] = []
    session, ts = "", datetime.min
    for line in (path or history_path()).read_text(encoding="utf-8").splitlines():
        if line.startswith("| ") or line == "|":
            events[-1]["text"] += "\n" + line[2:]
        elif m := _SESSION.match(line):
            ts = datetime.fromisoformat(m.group(1) + ":00+00:00")
            session = f"{TENANT}/{ts.date().isoformat()}"
        elif m := _TURN.match(line):
            speaker, text = m.groups()
            events.append(
                {
                    "tenant_id": TENANT,
                    "session_id": session,
                    "message_id": f"{session}/{len(events) + 1}",
                    "speaker": speaker,
                    "role": "assistant" if speaker == "Assistant" else "user",
                    "text": text,
                    "ts": ts.isoformat(),
                }
            )
            ts += TURN_GAP
    return events


def history_lines() -> list[bytes]:
    """The demo history as the JSON lines ``simplemem ingest`` reads."""
    return [orjson.dumps(e) for e in history_events()]


def _show_answer(result: QueryResult, expected: str, full: int, console: Console) -> bool:
    share = result.context_tokens / full if full else 0.0
    console.print(f"\n[bold cyan]Q:[/bold cyan] {result.query}")
    console.print(
        f"[dim]context: {result.context_tokens} tokens = {share:.1%} of the {full}-token history "
        f"({len(result.memories)} memories, k={result.k})[/dim]"
    )
    found = False
    for line in (result.context or "(nothing)").splitlines():
        if expected.lower() in line.lower() and not line.startswith("["):
            found = True
            console.print(f"[bold green]> {line}[/bold green]", markup=True, highlight=False)
        else:
            console.print(f"  {line}", markup=False, highlight=False, style="dim")
    if not found:
        console.print(f'[yellow]  the line that answers (with "{expected}") is not in this context[/yellow]')
    return found


def run_demo(settings: Settings, store: Path, console: Console) -> None:
    lines = history_lines()
    events = [orjson.loads(line) for line in lines]
    history = "\n".join(f"{e['speaker']}: {e['text']}" for e in events)
    full = count_tokens(history, settings.tokenizer_encoding)
    with open_store(settings, store, "simplemem demo", create=True) as rt:
        sessions = len({e["session_id"] for e in events})
        console.print(
            f"[bold]Ingesting[/bold] {len(events)} turns of a personal-assistant chat "
            f"({sessions} sessions, {events[0]['ts'][:10]} to {events[-1]['ts'][:10]}, {full} tokens) into {store}"
        )
        started = time.perf_counter()
        report = rt.pipeline.ingest([(f"turn {i + 1}", line) for i, line in enumerate(lines)])
        took = time.perf_counter() - started
        print_report(report, console)
        console.print(f"[dim]ingested in {took:.1f} s ({len(events) / took:.0f} turns/s)[/dim]")
        answered, tokens = 0, []
        for question, expected in DEMO:
            result = rt.retriever.query(QueryRequest(tenant_id=TENANT, query=question, as_of=AS_OF))
            answered += _show_answer(result, expected, full, console)
            tokens.append(result.context_tokens)
    mean = sum(tokens) / len(tokens)
    table = Table(title="accounting", show_header=False)
    table.add_row("history", f"{len(events)} turns, {full} tokens")
    table.add_row("memories stored", str(report.units))
    table.add_row("questions whose context holds the answer", f"{answered} of {len(DEMO)}")
    table.add_row("mean context", f"{mean:.0f} tokens ({mean / full:.1%} of the history)")
    console.print()
    console.print(table)


@one_line_errors
def demo(
    store: Annotated[
        Path | None, typer.Option("--store", help="store folder (default: a temporary one)")
    ] = None,
) -> None:
    """Ingest ten weeks of a sample chat, ask questions, show each answer's context and its size."""
    import tempfile

    quiet_libraries()
    target = store or Path(tempfile.mkdtemp(prefix="simplemem-demo-"))
    run_demo(get_settings(), target, out)


def register(app: typer.Typer) -> None:
    app.command()(demo)
