"""Exit codes and one-line errors: a command that cannot run says why in one line, never a traceback."""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import IntEnum
from typing import ParamSpec, TypeVar

import typer

from simplemem.cli.console import err
from simplemem.processors.stores.file_format import StoreFormatError
from simplemem.schemas.accounting import IngestReport, Outcome

P = ParamSpec("P")
R = TypeVar("R")


class ExitCode(IntEnum):
    """What a ``simplemem`` exit status means (docs/cli.md, "Exit codes")."""

    OK = 0
    ERROR = 1  # the command could not run: unreadable input, no such store...
    USAGE = 2  # bad arguments, options or settings (as Typer reports them)
    INCOMPLETE = 3  # ingest: some lines rejected or some messages failed; the rest is stored
    NOTHING_INGESTED = 4  # ingest: no events, every line rejected, or every message failed
    STORE_BUSY = 5  # another process is using the embedded store: try again when it is done
    STORE_FORMAT = 6  # the embedded store's files are in another format: rebuild the store


class CliError(Exception):
    """A reason the command stops, printed as one line, with its exit code."""

    def __init__(self, message: str, code: ExitCode = ExitCode.ERROR) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def error_line(message: str) -> None:
    """The one line on stderr that says why a command stops."""
    err.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)


def fail(message: str, code: ExitCode = ExitCode.ERROR) -> typer.Exit:
    """Print ``message`` as the command's error line; the caller raises what this returns."""
    error_line(message)
    return typer.Exit(code)


def one_line_errors(command: Callable[P, R]) -> Callable[P, R]:
    """Turn :class:`CliError` raised anywhere below a command into its line and exit code."""

    @functools.wraps(command)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except CliError as exc:
            raise fail(exc.message, exc.code) from None
        except StoreFormatError as exc:
            raise fail(str(exc), ExitCode.STORE_FORMAT) from None

    return run


def ingest_exit_code(report: IngestReport) -> ExitCode:
    """OK when every line was accepted and every message decided (indexed or filtered)."""
    decided = report.outcomes[Outcome.INDEXED] + report.outcomes[Outcome.FILTERED]
    if decided == 0:
        return ExitCode.NOTHING_INGESTED
    if report.rejected or report.outcomes[Outcome.FAILED]:
        return ExitCode.INCOMPLETE
    return ExitCode.OK
