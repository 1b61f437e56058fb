"""``simplemem tune-threshold``: analyse once, print the discard rate and dropped windows per threshold."""

from __future__ import annotations

import math
from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from simplemem.cli.console import shown
from simplemem.cli.errors import CliError, ExitCode
from simplemem.processors.ingest.tuning import scored_windows, sweep
from simplemem.schemas.accounting import IngestReport
from simplemem.schemas.settings import Settings

SHOWN_CHARS = 160  # of each message of a dropped window
LOWEST, HIGHEST = (
    0.0,
    1.0,
)  # an information score's range (simplemem/processors/ingest/entropy.py): a threshold's too


def parse_thresholds(text: str) -> list[float]:
    """The comma-separated thresholds of ``--thresholds``, or :class:`CliError` naming a bad one."""
    values: list[float] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        try:
            value = float(part)
        except ValueError:
            value = math.nan
        if not LOWEST <= value <= HIGHEST:  # NaN fails too
            raise CliError(
                f"--thresholds: {part!r} is not a number in [{LOWEST:g}, {HIGHEST:g}]", ExitCode.USAGE
            )
        values.append(value)
    if not values:
        raise CliError("--thresholds: give at least one threshold", ExitCode.USAGE)
    return values


def sweep_thresholds(
    settings: Settings,
    lines: Iterable[tuple[str, bytes]],
    thresholds: list[float],
    show: int,
    console: Console,
) -> None:
    from simplemem.processors.ingest.pipeline import validate_line
    from simplemem.runtime import open_runtime

    rt = open_runtime(settings)  # its analyzer only: no store is opened
    try:
        report = IngestReport()
        events = [e for where, raw in lines if (e := validate_line(settings, raw, where, report)) is not None]
        messages = rt.analyzer.analyze(events)
    finally:
        rt.close()
    results = sweep(scored_windows(settings, messages), thresholds)
    table = Table(title="entropy threshold sweep")
    for col in ("threshold", "windows", "windows dropped", "messages", "discard rate"):
        table.add_column(col)
    for r in results:
        table.add_row(
            f"{r.threshold:.2f}",
            str(r.windows),
            str(len(r.dropped)),
            str(r.messages),
            f"{r.discard_rate:.1%}",
        )
    console.print(table)
    if report.rejected:
        console.print(f"{len(report.rejected)} lines rejected (see `simplemem ingest` for reasons)")
    for r in results:
        console.print(f"\n[bold]dropped at {r.threshold:.2f}[/bold] (first {show} of {len(r.dropped)})")
        for window, score in r.dropped[:show]:
            console.print(
                f"  tenant={window.tenant_id} session={window.session_id} "
                f"messages={window.new_messages[0].message_id}..{window.new_messages[-1].message_id}  score={score.score:.3f} novelty={score.novelty:.2f} "
                f"divergence={score.divergence:.2f}"
            )
            for m in window.new_messages:
                text = shown(f"    {m.speaker}: {m.text[:SHOWN_CHARS]}", console)
                console.print(text, markup=False, highlight=False)
