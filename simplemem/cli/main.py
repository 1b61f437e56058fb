"""The ``simplemem`` command line: one module per command group, assembled here."""

from __future__ import annotations

import os

import typer
from pydantic import ValidationError

from simplemem.cli import consolidate, demo, forget, golden, infra, memory, reconcile, serve, streams
from simplemem.cli.errors import ExitCode, error_line
from simplemem.cli.golden import GoldenSettings
from simplemem.infra.settings import InfraSettings
from simplemem.processors.ingest.embedding import missing_backend
from simplemem.schemas.events import describe_errors
from simplemem.schemas.settings import Settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

app = typer.Typer(
    add_completion=False, no_args_is_help=True, help="Streaming long-term memory for LLM agents."
)
for group in (memory, demo, streams, infra, forget, consolidate, reconcile, serve, golden):
    group.register(app)


def main() -> None:  # pragma: no cover
    try:
        settings = Settings()
        InfraSettings()
        GoldenSettings()
    except ValidationError as exc:
        error_line(f"invalid SIMPLEMEM_* settings: {describe_errors(exc)}")
        raise SystemExit(ExitCode.USAGE) from None
    if reason := missing_backend(settings.embedding_backend):
        error_line(reason)
        raise SystemExit(ExitCode.USAGE)
    app(prog_name="simplemem")


if __name__ == "__main__":  # pragma: no cover
    main()
