"""`simplemem infra up | down | status`: the local services (simplemem/infra/) for development and tests."""

from __future__ import annotations

import logging
from typing import Annotated

import typer
from rich.logging import RichHandler

from simplemem.cli.console import err
from simplemem.cli.report import print_statuses

infra_app = typer.Typer(
    no_args_is_help=True, help="Start, stop and inspect the local services (simplemem/infra/)."
)
ServicesArg = Annotated[
    list[str] | None,
    typer.Argument(help="kafka, opensearch, milvus, redis (default: all)", show_default=False),
]


def show_progress(json_out: bool) -> None:
    """The launcher's steps (installing, started, ready in N s) on stderr as they happen: a first
    `up` downloads and prepares services for minutes and should not look hung."""
    if json_out:
        return
    handler = RichHandler(console=err, show_path=False, show_level=False, markup=False)
    launcher = logging.getLogger("simplemem.infra")
    launcher.addHandler(handler)
    launcher.setLevel(logging.INFO)


@infra_app.command("up")
def infra_up(services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Install what is missing, start the services, wait until each answers a real request."""
    from simplemem.infra.stack import InfraError, up

    show_progress(json_out)
    try:
        print_statuses(up(services or None), json_out)
    except InfraError as exc:
        err.print(f"[red]{exc}[/red]")
        raise typer.Exit(1) from None


@infra_app.command("down")
def infra_down(
    services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """Stop what `up` started (pid files)."""
    from simplemem.infra.stack import down

    show_progress(json_out)
    print_statuses(down(services or None), json_out)


@infra_app.command("status")
def infra_status(
    services: ServicesArg = None, json_out: Annotated[bool, typer.Option("--json")] = False
) -> None:
    """What runs where: endpoint, pid and state of each service."""
    from simplemem.infra.stack import status

    print_statuses(status(services or None), json_out)


def register(app: typer.Typer) -> None:
    app.add_typer(infra_app, name="infra")
