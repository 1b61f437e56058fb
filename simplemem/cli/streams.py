"""`simplemem worker | publish | replay | dlq list | dlq replay`: the Kafka side of the CLI."""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from simplemem.cli.console import err, out, progress_bar, quiet_libraries
from simplemem.cli.errors import one_line_errors
from simplemem.cli.inputs import InputArg, open_input
from simplemem.schemas.codec import dumps
from simplemem.schemas.keys import check_id
from simplemem.schemas.settings import Settings, get_settings
from simplemem.schemas.stream import DeadLetter

dlq_app = typer.Typer(no_args_is_help=True, help="Inspect and re-inject dead letters.")


def worker(ctx: typer.Context) -> None:
    """Start a stream worker (Faust). Extra options go to Faust's worker, e.g. --web-port 6067."""
    from simplemem.streams.app import create_app

    quiet_libraries()
    settings = get_settings()
    _topics_ready(settings)
    settings.stream_data_dir.mkdir(parents=True, exist_ok=True)  # Faust writes below it
    app = create_app(settings)
    err.print("loading models ...")
    app.worker_context.warm_up()  # type: ignore[attr-defined]
    app.worker_context.seed_tombstones()  # type: ignore[attr-defined]
    sys.argv = ["simplemem worker", "worker", "--loglevel", "warn", *ctx.args]
    app.main()


def _topics_ready(settings: Settings) -> None:
    """Create or verify the topics; a topic that differs from its declaration stops the command."""
    from simplemem.streams.topics import TopicMismatch, ensure_topics

    try:
        asyncio.run(ensure_topics(settings))
    except TopicMismatch as exc:
        err.print(f"[red]{exc}[/red]", markup=True, highlight=False)
        raise typer.Exit(2) from None


@one_line_errors
def publish(events: InputArg) -> None:
    """Publish a history (EVENTS.jsonl) to the turns topic, keyed by session (tenant and session id)."""
    from simplemem.streams.kafka_io import publish as send_all

    settings = get_settings()
    with open_input(events) as source:  # read before the topics are touched: a bad path costs nothing
        lines = [raw for _, raw in source.lines()]
    _topics_ready(settings)
    with progress_bar() as progress:
        task = progress.add_task("publishing", total=len(lines))
        report = asyncio.run(send_all(settings, lines, progress=lambda n: progress.advance(task, n)))
    out.print(f"published {report.published} events to {settings.topic(settings.turns_topic)}")
    if report.unkeyed:
        out.print(f"{report.unkeyed} lines had no tenant_id/session_id: the workers will dead-letter them")


@one_line_errors
def replay(
    tenant: Annotated[str, typer.Option("--tenant", help="the tenant whose memory is re-derived")],
    store: Annotated[
        Path | None,
        typer.Option("--store", help="embedded store folder (services mode: the configured stores)"),
    ] = None,
) -> None:
    """Re-derive a tenant's memory from the durable (scrubbed) history into the configured stores."""
    from simplemem.cli.report import print_report
    from simplemem.cli.store import open_store
    from simplemem.streams.deletions import seed_tombstones
    from simplemem.streams.history import HistoryCount, tenant_history

    quiet_libraries()
    settings = get_settings()
    try:
        check_id(tenant, tenant=True)
    except ValueError as exc:
        raise typer.BadParameter(f"--tenant: {exc}") from None
    count = HistoryCount()
    with open_store(settings, store, "simplemem replay", create=True) as rt, progress_bar() as progress:
        # forgotten messages stay forgotten in the target store, whichever store recorded them
        forgotten = seed_tombstones(settings, rt.tombstones, tenant)
        task = progress.add_task(f"replaying {tenant}", total=None)
        messages = tenant_history(settings, tenant, count)
        report = rt.pipeline.ingest_analyzed(messages, progress=lambda n: progress.advance(task, n))
    out.print(f"{count.turns} of {count.records} retained records are turns of {tenant}")
    if forgotten:
        out.print(f"{forgotten} deletion requests of {tenant} applied: their messages are not re-derived")
    print_report(report)


def _dead_letters() -> list[tuple[int, DeadLetter]]:
    from simplemem.streams.kafka_io import read_topic

    settings = get_settings()
    records = asyncio.run(read_topic(settings, settings.topic(settings.dlq_topic)))
    return [(r.offset, DeadLetter.model_validate_json(r.value)) for r in records if r.value]


@dlq_app.command("list")
def dlq_list(
    json_out: Annotated[bool, typer.Option("--json", help="one JSON line per dead letter")] = False,
) -> None:
    """Every dead letter: when, which stage, why, and where the turn was."""
    letters = _dead_letters()
    if json_out:
        for _, d in letters:
            sys.stdout.buffer.write(dumps(d) + b"\n")
        return
    table = Table(title=f"dead letters ({len(letters)})")
    for col in ("failed at", "stage", "code", "tenant", "message", "source", "reason"):
        table.add_column(col, overflow="fold")
    for _, d in letters:
        src = f"{d.source.topic}/{d.source.partition}/{d.source.offset}"
        table.add_row(
            d.failed_at.isoformat(timespec="seconds"),
            d.stage.value,
            d.code,
            d.tenant_id or "-",
            d.message_id or "-",
            src,
            d.reason[:160],
        )
    out.print(table)


@dlq_app.command("replay")
def dlq_replay(
    stage: Annotated[
        str | None, typer.Option("--stage", help="only this stage (validate, analyze, index...)")
    ] = None,
    code: Annotated[str | None, typer.Option("--code", help="only this reason class")] = None,
) -> None:
    """Re-inject dead letters into the turns topic (after fixing the cause): the original bytes, or the
    turn re-read from its recorded position (for a letter that quotes only part of a large record)."""
    from simplemem.streams.kafka_io import fetch_record
    from simplemem.streams.kafka_io import publish as send_all

    settings = get_settings()
    chosen = [
        d
        for _, d in _dead_letters()
        if (stage is None or d.stage == stage) and (code is None or d.code == code)
    ]
    payloads: list[bytes] = []
    missing = 0
    for d in chosen:
        if d.original is not None and not d.truncated:
            payloads.append(base64.b64decode(d.original))
            continue
        record = asyncio.run(fetch_record(settings, d.source.topic, d.source.partition, d.source.offset))
        if record is None or record.value is None:
            missing += 1
        else:
            payloads.append(record.value)
    report = asyncio.run(send_all(settings, payloads))
    out.print(
        f"re-published {report.published} of {len(chosen)} dead letters to {settings.topic(settings.turns_topic)}"
    )
    if missing:
        out.print(f"[yellow]{missing} original turns are no longer on their topic[/yellow]")


def register(app: typer.Typer) -> None:
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(worker)
    app.command()(publish)
    app.command()(replay)
    app.add_typer(dlq_app, name="dlq")
