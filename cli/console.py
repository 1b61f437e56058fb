"""Console helpers shared by the CLI modules: the two consoles, progress bars, quiet libraries."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

out = Console()
err = Console(stderr=True)


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


def progress_bar() -> Progress:
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def read_lines(path: Path) -> Iterator[tuple[str, bytes]]:
    with path.open("rb") as fh:
        for n, line in enumerate(fh, start=1):
            if line.strip():
                yield f"line {n}", line
