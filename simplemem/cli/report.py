"""Everything the CLI prints about results: the ingestion accounting, an answer, service states."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from simplemem.cli.console import json_line, out, shown
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.query import QueryResult

if TYPE_CHECKING:
    from simplemem.infra.stack import ServiceStatus


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
    if report.repetition_dropped_chars:
        table.add_row("repeated characters dropped", str(report.repetition_dropped_chars))
    if report.llm_fallbacks:
        table.add_row("LLM fallbacks to offline", str(report.llm_fallbacks))
    console.print(table)
    for r in report.rejected[:50]:
        console.print(f"[red]rejected[/red] {_text(f'{r.where}: {r.reason}', console)}")
    if len(report.rejected) > 50:
        console.print(f"... and {len(report.rejected) - 50} more rejections")
    for f in report.failures[:20]:
        console.print(f"[red]failed[/red] {_text(f'{f.message_id}: {f.reason}', console)}")


def _text(text: str, console: Console) -> str:
    """Input-derived text inside a markup line: escaped for the terminal and for rich's markup."""
    return escape(shown(text, console))


def _share(part: int, whole: int) -> str:
    return f"{part / whole:.1%}" if whole else "0.0%"


def print_answer(result: QueryResult, console: Console = out) -> None:
    if result.migration:
        console.print(
            "[yellow]this tenant's history is being imported: the answer may be incomplete[/yellow]"
        )
    console.print(
        f"[bold]complexity[/bold] {result.complexity:.2f}  [bold]k[/bold] {result.k}  "
        f"[bold]tokens[/bold] {result.context_tokens}"
    )
    console.print(shown(result.context or "(no memory matches)", console), markup=False, highlight=False)


def print_statuses(statuses: list[ServiceStatus], as_json: bool) -> None:
    if as_json:
        json_line([s.to_dict() for s in statuses])
        return
    table = Table(title="services")
    for col in ("service", "state", "endpoint", "pid"):
        table.add_column(col)
    for st in statuses:
        table.add_row(st.name, st.state, st.endpoint, str(st.pid or "-"))
    out.print(table)
