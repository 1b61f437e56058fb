"""The one error the launchers raise, and the log excerpt it quotes.

Every failure of ``simplemem infra up`` names the service and the log file to read, and quotes the end
of that log, so the person (or CI transcript) seeing the error does not have to go looking for it.
"""

from __future__ import annotations

from pathlib import Path


class InfraError(RuntimeError):
    """A service could not be installed, started or stopped; the message names it and its log file."""


def log_tail(path: Path, lines: int = 15) -> str:
    """The last `lines` lines of a log, indented and cut at 300 characters, for an error message."""
    try:
        text = path.read_text(errors="replace").splitlines()[-lines:]
    except FileNotFoundError:
        return "(no log file)"
    return "\n".join("    " + line[:300] for line in text)
