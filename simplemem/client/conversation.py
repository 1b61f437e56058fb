"""Turn by turn: a conversation hands out its session's turns with fresh message ids and the
current time, for :meth:`Client.send` (one at a time, or many in one call)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from simplemem.schemas.events import Role, Turn


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Conversation:
    """One session: ``user`` and ``assistant`` are the speakers' names shown in memories."""

    session_id: str
    user: str = "user"
    assistant: str = "assistant"
    clock: Callable[[], datetime] = field(default=_now, repr=False)

    def turn(self, role: Role | str, text: str, *, speaker: str | None = None, **fields: Any) -> Turn:
        """A turn of this session; ``fields`` are :class:`Turn`'s others (``ends_exchange``,
        ``ends_session``, ``metadata``, ``message_id``, ``ts``)."""
        role = Role(role)
        if speaker is None:
            speaker = self.user if role == Role.USER else self.assistant
        fields.setdefault("message_id", uuid.uuid4().hex)
        fields.setdefault("ts", self.clock())
        return Turn(session_id=self.session_id, role=role, speaker=speaker, text=text, **fields)

    def said(self, text: str, **fields: Any) -> Turn:
        """The user's turn."""
        return self.turn(Role.USER, text, **fields)

    def answered(self, text: str, **fields: Any) -> Turn:
        """The assistant's turn; it ends the exchange (decided now, not after a pause) unless told."""
        fields.setdefault("ends_exchange", True)
        return self.turn(Role.ASSISTANT, text, **fields)
