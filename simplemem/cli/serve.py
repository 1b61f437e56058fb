"""`simplemem serve | keys create | keys list | keys revoke | feedback export`: the query service."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from simplemem.cli.console import out, quiet_libraries
from simplemem.cli.errors import CliError, ExitCode, one_line_errors
from simplemem.schemas.keys import check_id
from simplemem.schemas.settings import get_settings

if TYPE_CHECKING:
    from fastapi import FastAPI

    from simplemem.api.keys import KeyStore

keys_app = typer.Typer(no_args_is_help=True, help="Tenants' API keys (stored hashed).")
feedback_app = typer.Typer(no_args_is_help=True, help="The feedback loop's log of wrong answers.")

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", help="embedded store folder (default: SIMPLEMEM_STORE); services: Redis"),
]


@one_line_errors
def serve(
    host: Annotated[
        str | None, typer.Option("--host", help="address to bind (default: SIMPLEMEM_API_HOST)")
    ] = None,
    port: Annotated[int | None, typer.Option("--port", help="port (default: SIMPLEMEM_API_PORT)")] = None,
    store: StoreOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="server processes (services mode; default SIMPLEMEM_API_WORKERS)"
        ),
    ] = None,
) -> None:
    """Serve the memory over HTTP (OpenAPI at /docs): events, queries, feedback, memories, deletions."""
    import uvicorn

    from simplemem.api.build import build_app
    from simplemem.cli.store import open_store

    settings = get_settings()
    bind_host, bind_port = host or settings.api_host, port or settings.api_port
    processes = workers or settings.api_workers
    if processes > 1:
        if settings.mode != "services":
            raise CliError("--workers above 1 needs SIMPLEMEM_MODE=services: an embedded store has one owner")
        out.print(f"serving services memory on http://{bind_host}:{bind_port} with {processes} processes")
        uvicorn.run(
            "simplemem.cli.serve:services_app",
            factory=True,
            workers=processes,
            host=bind_host,
            port=bind_port,
            access_log=False,
            log_level="warning",
        )
        return
    # Embedded: this process holds the store (and its lock) for as long as it serves.
    with open_store(settings, store, "simplemem serve", create=True) as rt:
        app = build_app(rt)
        out.print(f"serving {settings.mode} memory on http://{bind_host}:{bind_port}")
        uvicorn.run(
            app,
            host=bind_host,
            port=bind_port,
            access_log=False,  # paths carry message ids; /metrics counts the requests
            log_level="warning",
        )


def services_app() -> FastAPI:
    """One process of `simplemem serve --workers N` (services mode): uvicorn calls this in each
    process it starts, so each has its own models and store clients, closed when it exits."""
    import atexit

    from simplemem.api.build import build_app
    from simplemem.runtime import open_runtime

    quiet_libraries()
    settings = get_settings()
    if settings.mode != "services":
        raise RuntimeError("several serve processes need services mode: an embedded store has one owner")
    rt = open_runtime(settings)
    atexit.register(rt.close)
    return build_app(rt)


def _keys(store: Path | None) -> KeyStore:
    from simplemem.api.keys import open_key_store

    settings = get_settings()
    return open_key_store(settings, Path(store or settings.store))


@keys_app.command("create")
@one_line_errors
def keys_create(
    tenant: Annotated[str, typer.Option("--tenant", help="the tenant the key acts for")],
    store: StoreOpt = None,
) -> None:
    """Create a key for TENANT; it is printed once, as the last word of the last line."""
    from simplemem.api.keys import new_key

    try:
        check_id(tenant, tenant=True)
    except ValueError as exc:
        raise CliError(f"--tenant: {exc}", ExitCode.USAGE) from None
    keys = _keys(store)
    key, record = new_key(tenant)
    keys.add(record)
    keys.close()
    sys.stdout.write(f"key {record.key_id} for tenant {tenant} (shown once, stored hashed): {key}\n")


@keys_app.command("list")
@one_line_errors
def keys_list(
    tenant: Annotated[str | None, typer.Option("--tenant", help="only this tenant's keys")] = None,
    store: StoreOpt = None,
) -> None:
    """Every key: id, tenant, creation time, revoked or not (never the key)."""
    keys = _keys(store)
    for record in keys.list(tenant):
        state = "revoked" if record.revoked else "active"
        sys.stdout.write(
            f"{record.key_id}\t{record.tenant_id}\t{record.created_at.isoformat(timespec='seconds')}\t{state}\n"
        )
    keys.close()


@keys_app.command("revoke")
@one_line_errors
def keys_revoke(
    key_id: Annotated[str, typer.Argument(help="the key's id (keys list)")], store: StoreOpt = None
) -> None:
    """Revoke a key: requests with it are refused from now on."""
    keys = _keys(store)
    found = keys.revoke(key_id)
    keys.close()
    if not found:
        raise CliError(f"no key {key_id}")
    out.print(f"revoked {key_id}")


@feedback_app.command("export")
@one_line_errors
def feedback_export(store: StoreOpt = None) -> None:
    """Every logged miss as a JSON line (scrubbed query, complexity, k), for tuning the classifier."""
    from simplemem.api.feedback import open_feedback_log

    settings = get_settings()
    for record in open_feedback_log(settings, Path(store or settings.store)).export():
        sys.stdout.write(record.model_dump_json() + "\n")


def register(app: typer.Typer) -> None:
    app.command()(serve)
    app.add_typer(keys_app, name="keys")
    app.add_typer(feedback_app, name="feedback")
