"""The chat set (``bench/data/chat/``): conversations written for this project, in the golden format.

One JSON file per conversation, ``{"description", "events", "queries"}`` as ``../shared/golden``: events
are chat events (``simplemem/schemas/events.py``), each conversation in a tenant of its own; a query is a
``query --batch`` request (``id``, ``tenant_id``, ``query``, ``as_of``) plus ``expected`` (strings the
returned context must hold to answer it: for a fact that changed, the current value; ISO dates match
any spelling), ``absent`` (raw PII of the conversation that must appear in no output and no store
file), ``kind`` (what the question exercises: fact, changed, pronoun, person, date, abbrev, code,
pii), used to group the results, and for a fact said of someone by a pronoun ``together``: strings one
returned memory must hold at once (who and what: "Marcus", "wedding"), so that a fact pinned on the
wrong person ("Ken's out next week for Ken's sister's wedding") is not counted as remembered.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

DEFAULT_DIR = Path(__file__).resolve().parent / "data" / "chat"


@dataclass(frozen=True)
class ChatConversation:
    name: str
    description: str
    events: list[dict[str, Any]]
    queries: list[dict[str, Any]]

    @property
    def tenant_id(self) -> str:
        return str(self.events[0]["tenant_id"])

    @property
    def absent(self) -> list[str]:
        """Every PII string of the conversation, once."""
        return list(dict.fromkeys(a for q in self.queries for a in q.get("absent", [])))


def conversation_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def load_conversation(path: Path) -> ChatConversation:
    data = orjson.loads(path.read_bytes())
    return ChatConversation(path.stem, data["description"], data["events"], data["queries"])


def load_chat_set(folder: Path = DEFAULT_DIR, names: list[str] | None = None) -> list[ChatConversation]:
    """The conversations of ``folder`` (all, or those named); ``ValueError`` for a name not there."""
    files = {p.stem: p for p in conversation_files(folder)}
    if not files:
        raise ValueError(f"no conversations (*.json) in {folder}")
    unknown = [n for n in names or [] if n not in files]
    if unknown:
        raise ValueError(f"no conversation {', '.join(unknown)} in {folder} (there are: {', '.join(files)})")
    return [load_conversation(files[n]) for n in names or files]
