"""`simplemem reconcile`: make the vector store hold exactly the units of the lexical store.

Per tenant (or every tenant of the store), the ids of both stores are compared; the units without a
vector get one again from their text, and the vectors without a unit are deleted
(:mod:`simplemem.processors.lifecycle.reconcile`). ``--dry-run`` only reports the difference.
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
def reconcile(
    tenant: Annotated[str | None, typer.Option("--tenant", help="one tenant (default: every tenant)")] = None,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="embedded store folder (services mode: the configured stores)"),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="report the difference, change nothing")] = False,
    json_out: Annotated[bool, typer.Option("--json", help="one JSON line per tenant")] = False,
) -> None:
    """Compare the lexical and the vector store per tenant and repair the difference."""
    from simplemem.processors.lifecycle.reconcile import find_drift, repair

    tenant = checked_tenant(tenant)
    settings = get_settings()
    batch = settings.forget_batch_units
    with open_store(settings, store, "simplemem reconcile", create=False) as rt:
        for t in tenants_of(rt, tenant):
            drift = find_drift(t, rt.lexical, rt.vectors, batch)
            if drift.drifted and not dry_run:
                repair(drift, rt.lexical, rt.vectors, lambda: rt.embedder, batch)
            if json_out:
                json_line(
                    {
                        "tenant_id": t,
                        "units": drift.units,
                        "vectors": drift.vectors,
                        "missing_vectors": drift.missing_vectors,
                        "orphan_vectors": drift.orphan_vectors,
                        "repaired": drift.drifted and not dry_run,
                    }
                )
                continue
            verb = "would repair" if dry_run else "repaired"
            plain(
                f"{t}: {drift.units} units, {drift.vectors} vectors; {len(drift.missing_vectors)} vectors "
                f"missing, {len(drift.orphan_vectors)} without a unit"
                + (f" ({verb})" if drift.drifted else "")
            )


def register(app: typer.Typer) -> None:
    app.command()(reconcile)
