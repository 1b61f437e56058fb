"""One user turn of a scripted conversation, as a chat event dict (the benches' and tests' data)."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def chat_event(
    tenant: str, session: str, text: str, at: datetime, i: int = 1, speaker: str = "Jordan"
) -> dict[str, Any]:
    """Message ids are ``<session>:m<i>``: unique per tenant as long as ``i`` is per session."""
    return {
        "tenant_id": tenant,
        "session_id": session,
        "message_id": f"{session}:m{i}",
        "speaker": speaker,
        "role": "user",
        "text": text,
        "ts": at.isoformat(),
    }
