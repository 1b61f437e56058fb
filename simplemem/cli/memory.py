"""`simplemem ingest | query | tune-threshold`: the memory of a store, from the command line."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated

import orjson
import typer

from simplemem.cli.answers import Answer, answer_batch, answerer, single_request
from simplemem.cli.console import err, json_line, out, progress_bar, quiet_libraries
from simplemem.cli.errors import ingest_exit_code, one_line_errors
from simplemem.cli.inputs import InputArg, open_input
from simplemem.cli.report import print_answer, print_report
from simplemem.cli.store import open_store
from simplemem.runtime import bulk_heap
from simplemem.schemas.settings import get_settings

StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="store folder (default: SIMPLEMEM_STORE or ./.simplemem)")
]


@one_line_errors
def ingest(
    events: InputArg,
    store: StoreOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the accounting as JSON")] = False,
) -> None:
    """Run the whole pipeline over EVENTS (read once, as it streams) and print the accounting."""
    with (
        open_input(events) as source,
        open_store(get_settings(), store, "simplemem ingest", create=True, bulk=True) as rt,
    ):
        with progress_bar(in_bytes=True) as progress:
            task = progress.add_task("loading models", total=source.size)
            pipeline = rt.pipeline
            bulk_heap()
            progress.update(task, description="ingesting")
            report = pipeline.ingest(
                source.lines(), progress=lambda _: progress.update(task, completed=source.consumed)
            )
        if not report.read:
            err.print(f"no events in {source.name}", markup=False, highlight=False)
    if json_out:
        sys.stdout.buffer.write(
            orjson.dumps(report.model_dump(mode="json", exclude={"filtered_scores"})) + b"\n"
        )
    else:
        print_report(report)
    raise typer.Exit(ingest_exit_code(report))


@one_line_errors
def query(
    text: Annotated[str | None, typer.Argument(help="the question")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="tenant id")] = None,
    store: StoreOpt = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="ISO-8601 time the question is asked at")
    ] = None,
    batch: Annotated[
        str | None,
        typer.Option("--batch", help="questions JSONL {id, tenant_id, query, as_of?}: a file, a pipe or -"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON (one line per question)")] = False,
) -> None:
    """Answer "what does the agent need to know" for a question, from a tenant's memory."""
    if batch is not None:
        with ExitStack() as stack:
            source = stack.enter_context(open_input(batch))
            answer_batch(source.lines(), _answering(store, stack))
        return
    request = single_request(text, tenant, as_of)
    with ExitStack() as stack:
        result = _answering(store, stack)(request)
    if json_out:
        json_line(result.to_json())
    else:
        print_answer(result)


def _answering(store: Path | None, stack: ExitStack) -> Answer:
    """The store's answers, open until ``stack`` closes."""
    rt = stack.enter_context(open_store(get_settings(), store, "simplemem query", create=False))
    return answerer(rt, stack)


@one_line_errors
def tune_threshold(
    events: InputArg,
    thresholds: Annotated[str, typer.Option("--thresholds", help="comma-separated")] = "0.25,0.35,0.45",
    show: Annotated[int, typer.Option("--show", help="dropped windows listed per threshold")] = 10,
) -> None:
    """Discard rate and the windows dropped at each threshold (the A/B procedure), writing nothing."""
    from simplemem.cli.tuning import parse_thresholds, sweep_thresholds

    values = parse_thresholds(thresholds)
    quiet_libraries()
    with open_input(events) as source:
        sweep_thresholds(get_settings(), source.lines(), values, show, out)


def register(app: typer.Typer) -> None:
    app.command()(ingest)
    app.command()(query)
    app.command("tune-threshold")(tune_threshold)
