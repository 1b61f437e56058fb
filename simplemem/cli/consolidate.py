"""`simplemem consolidate`: stage 2 on demand (a worker runs it on a timer in services mode).

Clusters of related memories become abstracts (the originals archived, with provenance), then the
knowledge-update rule marks superseded facts. Per tenant, or every tenant of the store.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from simplemem.cli.console import json_line, plain
from simplemem.cli.errors import one_line_errors
from simplemem.cli.store import checked_tenant, open_store, tenants_of
from simplemem.schemas.settings import get_settings


@one_line_errors
def consolidate(
    tenant: Annotated[str | None, typer.Option("--tenant", help="one tenant (default: every tenant)")] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="embedded store folder (services mode: the configured stores)"),
    ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="one JSON line per decision")] = False,
) -> None:
    """Consolidate memories into abstracts and mark superseded facts."""
    tenant = checked_tenant(tenant)
    with open_store(get_settings(), store, "simplemem consolidate", create=False) as rt:
        tenants = tenants_of(rt, tenant)
        for t in tenants:
            run = rt.consolidate(t)
            if json_out:
                for d in run.decisions:
                    json_line(d)
                continue
            archived = sum(len(d.member_ids) for d in run.decisions)
            plain(
                f"{t}: {run.read} memories read, {len(run.decisions)} abstracts made from {archived} "
                f"memories (archived), {len(run.deleted)} older abstracts absorbed, "
                f"{len(run.updated)} memories with changed supersession"
                + _fallbacks(run.summary_fallbacks, run.update_fallbacks)
            )


def _fallbacks(summaries: int, verdicts: int) -> str:
    """The LLM answers replaced by the offline rule (said only when there were any)."""
    if not summaries and not verdicts:
        return ""
    return f"; LLM fallbacks to offline: {summaries} summaries, {verdicts} update verdicts"


def register(app: typer.Typer) -> None:
    app.command()(consolidate)
