"""The ``simplemem`` command line: ingest, query, demo, tune-threshold (and, later, infra and streams)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import orjson
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from schemas.accounting import IngestReport
from schemas.query import QueryRequest, QueryResult
from schemas.settings import Settings, get_settings
from streams.console import err, out, progress_bar, quiet_libraries, read_lines
from streams.stream_cli import register as register_stream_commands

if TYPE_CHECKING:
    from infra.services import ServiceStatus
    from processors.runtime import Runtime

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Streaming long-term memory for LLM agents."
)

StoreOpt = Annotated[
    Path | None, typer.Option("--store", help="store folder (default: SIMPLEMEM_STORE or ./.simplemem)")
]


def _runtime(store: Path | None) -> Runtime:
    from processors.runtime import open_runtime

    quiet_libraries()
    return open_runtime(get_settings(), store)


def print_report(report: IngestReport, console: Console = out) -> None:
    table = Table(title="ingestion", show_header=False)
    table.add_row("read", str(report.read))
    table.add_row("rejected", str(len(report.rejected)))
    table.add_row("accepted", str(report.accepted))
    table.add_row("windows", str(report.windows))
    table.add_row(
        "windows filtered", f"{report.windows_filtered} ({_share(report.windows_filtered, report.windows)})"
    )
    table.add_row("messages indexed", str(report.outcomes["indexed"]))
    table.add_row(
        "messages filtered", f"{report.outcomes['filtered']} (discard rate {report.discard_rate:.1%})"
    )
    table.add_row("messages failed", str(report.outcomes["failed"]))
    table.add_row("units", str(report.units))
    table.add_row("code blocks", str(report.code_blocks))
    table.add_row("messages with PII scrubbed", str(report.pii_scrubbed))
    if report.llm_fallbacks:
        table.add_row("LLM fallbacks to offline", str(report.llm_fallbacks))
    console.print(table)
    for r in report.rejected[:50]:
        console.print(f"[red]rejected[/red] {r.where}: {r.reason}")
    if len(report.rejected) > 50:
        console.print(f"... and {len(report.rejected) - 50} more rejections")
    for f in report.failures[:20]:
        console.print(f"[red]failed[/red] {f.message_id}: {f.reason}")


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "0.0%"


@app.command()
def ingest(
    events: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="chat events, one JSON per line")
    ],
    store: StoreOpt = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the accounting as JSON")] = False,
) -> None:
    """Run the whole pipeline over EVENTS.jsonl and print the accounting."""
    rt = _runtime(store)
    total = sum(1 for _ in read_lines(events))
    try:
        with progress_bar() as progress:
            task = progress.add_task("loading models", total=total)
            pipeline = rt.pipeline
            progress.update(task, description="ingesting")
            report = pipeline.ingest(read_lines(events), progress=lambda n: progress.advance(task, n))
    finally:
        rt.close()
    if json_out:
        sys.stdout.buffer.write(
            orjson.dumps(report.model_dump(mode="json", exclude={"filtered_scores"})) + b"\n"
        )
    else:
        print_report(report)


@app.command()
def query(
    text: Annotated[str | None, typer.Argument(help="the question")] = None,
    tenant: Annotated[str | None, typer.Option("--tenant", help="tenant id")] = None,
    store: StoreOpt = None,
    as_of: Annotated[
        str | None, typer.Option("--as-of", help="ISO-8601 time the question is asked at")
    ] = None,
    batch: Annotated[
        Path | None,
        typer.Option(
            "--batch", exists=True, dir_okay=False, help="questions JSONL: {id, tenant_id, query, as_of?}"
        ),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print JSON (one line per question)")] = False,
) -> None:
    """Answer "what does the agent need to know" for a question, from a tenant's memory."""
    if batch is None and (text is None or tenant is None):
        raise typer.BadParameter("give TEXT and --tenant, or --batch FILE")
    rt = _runtime(store)
    retriever = rt.retriever
    from processors.migration import MigrationState
    from streams.lazy import lazy_migration

    migration = lazy_migration(rt)

    def answer(request: QueryRequest) -> QueryResult:
        state = migration.ensure(request.tenant_id) if migration else None
        result = retriever.query(request)
        if state == MigrationState.IN_PROGRESS:
            result.migration = state.value
        return result

    try:
        if batch is not None:
            for where, raw in read_lines(batch):
                try:
                    request = QueryRequest.model_validate(orjson.loads(raw))
                except (orjson.JSONDecodeError, ValidationError) as exc:
                    line = {"id": None, "error": f"{where}: {exc}"}
                    sys.stdout.buffer.write(orjson.dumps(line) + b"\n")
                    continue
                result = answer(request)
                sys.stdout.buffer.write(orjson.dumps(result.to_json()) + b"\n")
            return
        try:
            request = QueryRequest(tenant_id=tenant or "", query=text or "", as_of=as_of)
        except ValidationError as exc:
            raise typer.BadParameter(str(exc)) from None
        result = answer(request)
        if json_out:
            sys.stdout.buffer.write(orjson.dumps(result.to_json()) + b"\n")
            return
        _print_answer(result)
    finally:
        if migration:
            sys.stdout.flush()
            migration.wait()  # the answer is out; let the import finish before the process exits
        rt.close()


def _print_answer(result: QueryResult) -> None:
    if result.migration:
        out.print("[yellow]this tenant's history is being imported: the answer may be incomplete[/yellow]")
    out.print(
        f"[bold]complexity[/bold] {result.complexity:.2f}  [bold]k[/bold] {result.k}  "
        f"[bold]tokens[/bold] {result.context_tokens}"
    )
    out.print(result.context or "(no memory matches)", markup=False, highlight=False)


@app.command()
def demo(
    store: Annotated[
        Path | None, typer.Option("--store", help="store folder (default: a temporary one)")
    ] = None,
) -> None:
    """Ingest a small sample conversation, ask a few questions, show the tokens saved."""
    import tempfile

    from streams.demo import run_demo

    quiet_libraries()
    target = store or Path(tempfile.mkdtemp(prefix="simplemem-demo-"))
    run_demo(get_settings(), target, out)


@app.command("tune-threshold")
def tune_threshold(
    events: Annotated[Path, typer.Argument(exists=True, dir_okay=False)],
    thresholds: Annotated[str, typer.Option("--thresholds", help="comma-separated")] = "0.25,0.35,0.45",
    show: Annotated[int, typer.Option("--show", help="dropped windows listed per threshold")] = 10,
) -> None:
    """Discard rate and the windows dropped at each threshold (the A/B procedure), writing nothing."""
    from streams.tuning import sweep_thresholds

    quiet_libraries()
    values = [float(v) for v in thresholds.split(",") if v.strip()]
    sweep_thresholds(get_settings(), read_lines(events), values, show, out)


infra_app = typer.Typer(no_args_is_help=True, help="Start, stop and inspect the local services (infra/).")
app.add_typer(infra_app, name="infra")
ServicesArg = Annotated[
    list[str] | None,
    typer.Argument(help="kafka, opensearch, milvus, redis (default: all)", show_default=False),
]


def _print_statuses(statuses: list[ServiceStatus], as_json: bool) -> None:
    if as_json:
        sys.stdout.buffer.write(orjson.dumps([s.to_dict() for s in statuses]) + b"\n")
        return
    table = Table(title="services")
    for col in ("service", "state", "endpoint", "pid"):
        table.add_column(col)
    for st in statuses:
        table.add_row(st.name, st.state, st.endpoint, str(st.pid or "-"))
    out.print(table)


@infra_app.command("up")
def infra_up(services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Install what is missing, start the services, wait until each answers a real request."""
    from infra.services import InfraError, up

    try:
        _print_statuses(up(services or None), json_out)
    except InfraError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None


@infra_app.command("down")
def infra_down(
    services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Stop what `up` started (pid files)."""
    from infra.services import down

    _print_statuses(down(services or None), json_out)


@infra_app.command("status")
def infra_status(
    services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """What runs where: endpoint, pid and state of each service."""
    from infra.services import status

    _print_statuses(status(services or None), json_out)


register_stream_commands(app)


def main() -> None:  # pragma: no cover
    try:
        Settings()
    except ValidationError as exc:
        err.print(f"[red]invalid SIMPLEMEM_* settings:[/red] {exc}")
        raise SystemExit(2) from None
    app(prog_name="simplemem")


if __name__ == "__main__":  # pragma: no cover
    main()
