"""`simplemem forget`: the right to be forgotten, from the command line.

Embedded mode: carried out on the store at once. Services mode: carried out on the service stores at
once, then published on the deletions topic (the durable record that workers and ``replay`` read;
a worker's forget agent also tombstones the memories on the units topic).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simplemem.cli.console import json_line, plain
from simplemem.cli.errors import CliError, one_line_errors
from simplemem.cli.store import open_store
from simplemem.schemas.keys import check_id
from simplemem.schemas.settings import Settings, get_settings
from simplemem.schemas.stream import DeletionRecord, DeletionRequest

if TYPE_CHECKING:
    from simplemem.runtime import Runtime


def _request(tenant: str, message_ids: list[str], everything: bool, by: str) -> DeletionRequest:
    try:
        check_id(tenant, tenant=True)
    except ValueError as exc:
        raise typer.BadParameter(f"--tenant: {exc}") from None
    for mid in message_ids:
        try:
            check_id(mid)
        except ValueError as exc:
            raise typer.BadParameter(f"--message-id {mid!r}: {exc}") from None
    if everything == bool(message_ids):
        raise typer.BadParameter("name messages with --message-id, or forget the whole tenant with --all")
    return DeletionRequest(
        tenant_id=tenant,
        message_ids=message_ids,
        whole_tenant=everything,
        requested_by=by,
        requested_at=datetime.now(UTC),
    )


@one_line_errors
def forget(
    tenant: Annotated[str, typer.Option("--tenant", help="the tenant whose messages are forgotten")],
    message_id: Annotated[
        list[str] | None, typer.Option("--message-id", help="a message to forget (repeat for more)")
    ] = None,
    everything: Annotated[
        bool, typer.Option("--all", help="forget the whole tenant: every message and memory")
    ] = False,
    store: Annotated[
        Path | None,
        typer.Option("--store", help="embedded store folder (services mode: the configured stores)"),
    ] = None,
    by: Annotated[str, typer.Option("--by", help="who asked, for the deletion record")] = "cli",
    json_out: Annotated[bool, typer.Option("--json", help="print the deletion record as JSON")] = False,
) -> None:
    """Forget messages (and every memory derived from them) or a whole tenant, in every store."""
    settings = get_settings()
    request = _request(tenant, list(message_id or []), everything, by)
    with open_store(settings, store, "simplemem forget", create=False) as rt:
        result = rt.forget(request)
        if everything:
            _forget_scopes(settings, rt, tenant)
    if settings.mode == "services":
        from simplemem.streams.deletions import publish_deletion

        try:
            asyncio.run(publish_deletion(settings, request))
        except Exception as exc:
            raise CliError(
                f"forgotten in the stores, but not recorded on the deletions topic ({exc}); "
                "run the command again once Kafka is reachable"
            ) from None
    _print(result.record, json_out)


def _forget_scopes(settings: Settings, rt: Runtime, tenant: str) -> None:
    """The tenant's mem0 scopes (its end users' ids) go with it, where the query service kept any."""
    from simplemem.api.directory import Scope, open_directory
    from simplemem.api.keys import KEYS_FILE

    if settings.mode == "services" or (rt.store_dir / KEYS_FILE).exists():
        directory = open_directory(
            settings, rt.store_dir, lambda text: rt.nlp_preparer.scrubber.scrub(text).text
        )
        directory.forget(tenant, Scope())


def _print(record: DeletionRecord, json_out: bool) -> None:
    if json_out:
        json_line(record)
        return
    what = (
        "the whole tenant" if record.request.whole_tenant else f"{len(record.request.message_ids)} messages"
    )
    plain(
        f"forgot {what} of {record.request.tenant_id}: {record.units_deleted} memories deleted, "
        f"{record.units_rewritten} rewritten, {record.buffer_turns_removed} recent turns removed "
        f"({record.seconds:.3f} s)"
    )


def register(app: typer.Typer) -> None:
    app.command()(forget)
