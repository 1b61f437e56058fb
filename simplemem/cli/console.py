"""Console helpers shared by the CLI modules: the two consoles, progress bars, quiet libraries."""

from __future__ import annotations

import logging
import re
import sys

import orjson
from rich.console import Console
from rich.progress import (
    BarColumn,
    DownloadColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

out = Console()
err = Console(stderr=True)

# C0 controls but tab and newline, DEL and C1 controls: what starts terminal escape sequences.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def json_line(value: object) -> None:
    """One JSON line on stdout (a pydantic model as its JSON form): for ``--json`` output."""
    from pydantic import BaseModel

    data = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    sys.stdout.buffer.write(orjson.dumps(data) + b"\n")


def plain(text: str) -> None:
    """A line of data (ids, names, numbers) printed as is: no markup, no highlighting."""
    out.print(text, markup=False, highlight=False)


def printable(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` (tabs and newlines kept)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def shown(text: str, console: Console) -> str:
    """Stored text as it may be shown on ``console``: escaped on a terminal (memories and inputs may
    carry escape sequences that retitle, clear or rewrite it), as stored in a file or pipe."""
    return printable(text) if console.is_terminal else text


def quiet_libraries() -> None:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for name in (
        "presidio-analyzer",
        "sentence_transformers",
        "transformers",
        "pymilvus",
        "milvus_lite",
        "bm25s",
    ):
        logging.getLogger(name).setLevel(logging.ERROR)
    # Milvus Lite's embedded gRPC server logs an unimplemented optional call on every start.
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    import warnings

    warnings.filterwarnings("ignore")


def progress_bar(*, in_bytes: bool = False) -> Progress:
    """A bar on stderr counting items, or bytes of input (``in_bytes``); without a total it pulses.
    Disabled when stderr is not a terminal: there rich draws nothing but leaves an empty line behind."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn() if in_bytes else MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    )
