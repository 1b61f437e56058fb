"""Where commands read JSON lines from: a file, a pipe or FIFO (``/dev/stdin``, ``<(...)``), or ``-``
for standard input. Every input is read once, as it streams: a pipe cannot be read twice, so the
size (progress total) is known only for regular files."""

from __future__ import annotations

import io
import os
import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Annotated, BinaryIO

import typer

from simplemem.cli.errors import CliError

STDIN = "-"
InputArg = Annotated[
    str,
    typer.Argument(
        metavar="EVENTS", help="chat events, one JSON per line: a file, a pipe (/dev/stdin, <(...)) or -"
    ),
]


@dataclass
class Input:
    """An open input; ``size`` in bytes when it is a regular file, ``consumed`` the bytes read so far."""

    name: str
    stream: BinaryIO
    size: int | None
    consumed: int = 0

    def lines(self) -> Iterator[tuple[str, bytes]]:
        """``(where, raw)`` for each non-blank line, numbered from 1."""
        for n, line in enumerate(self.stream, start=1):
            self.consumed += len(line)
            if line.strip():
                yield f"line {n}", line


def _size(stream: BinaryIO) -> int | None:
    try:
        st = os.fstat(stream.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):  # an in-memory stream (tests)
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


@contextmanager
def open_input(name: str) -> Iterator[Input]:
    """The input called ``name`` (``-``: standard input), or :class:`CliError` saying why not."""
    if name == STDIN:
        stdin = sys.stdin.buffer
        yield Input("standard input", stdin, _size(stdin))
        return
    try:
        stream = open(name, "rb")  # noqa: SIM115 - closed below, after the caller's last read
    except OSError as exc:
        raise CliError(f"cannot read {name}: {exc.strerror or exc}") from None
    try:
        yield Input(name, stream, _size(stream))
    finally:
        stream.close()
