"""BEAM conversations (ICLR 2026: a user and an assistant working on a project over weeks) as events
and questions, laid out the way the long-lived-tenants issue measures them.

- one tenant per conversation; each batch of ``chat.json`` one session;
- a batch's date is the ``time_anchor`` of its first user message that has one (``March-15-2024``,
  09:00 UTC), its messages two minutes apart; a batch without one is dated 14 days after the previous
  batch (the first such batch: 2024-01-01);
- message id ``<tenant>:b<batch number>:<message id>``, every message, roles as given;
- questions from ``probing_questions/probing_questions.json``, every category but abstention, asked a
  day after the last message; gold evidence = ``source_chat_ids`` flattened (lists, or dicts of lists);
  a question whose ids name no message of the conversation is left out.

The data is read from a BEAM checkout (never copied into the repository): ``--data`` names a tier's
folder (``chats/100K``), whose subfolders are the conversations.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "data" / "beam" / "chats" / "100K"
FIRST_DATE = datetime(2024, 1, 1, 9, tzinfo=UTC)
GAP_WITHOUT_ANCHOR = timedelta(days=14)
MESSAGE_STEP = timedelta(minutes=2)
LATEST_END = datetime(2026, 6, 1, tzinfo=UTC)  # a concatenated tenant's last message, at the latest
SKIPPED_CATEGORIES = frozenset({"abstention"})


@dataclass(frozen=True)
class BeamMessage:
    message_id: str
    session_id: str
    role: str
    text: str
    ts: datetime


@dataclass(frozen=True)
class BeamQuestion:
    qid: str
    tenant_id: str
    category: str
    question: str
    answer: str | None
    evidence: list[str]
    as_of: datetime


@dataclass
class BeamConversation:
    tenant_id: str
    messages: list[BeamMessage] = field(default_factory=list)
    questions: list[BeamQuestion] = field(default_factory=list)

    def events(self) -> Iterator[dict[str, Any]]:
        for m in self.messages:
            yield {
                "tenant_id": self.tenant_id,
                "session_id": m.session_id,
                "message_id": m.message_id,
                "speaker": m.role,
                "role": m.role,
                "text": m.text,
                "ts": m.ts.isoformat(),
            }


def anchor_date(text: str | None) -> datetime | None:
    """``March-15-2024`` as 09:00 UTC that day; None when absent or unreadable."""
    if not text:
        return None
    try:
        return datetime.strptime(text, "%B-%d-%Y").replace(hour=9, tzinfo=UTC)
    except ValueError:
        return None


def batch_start(batch: dict[str, Any], previous: datetime | None) -> datetime:
    for exchange in batch["turns"]:
        for m in exchange:
            if m.get("role") == "user" and (when := anchor_date(m.get("time_anchor"))):
                return when
    return previous + GAP_WITHOUT_ANCHOR if previous else FIRST_DATE


def flatten_ids(ids: Any) -> list[int]:
    """``source_chat_ids`` as one list: a list of ids, or a dict of lists, in order, without repeats."""
    values = ids.values() if isinstance(ids, dict) else [ids]
    out: list[int] = []
    for v in values:
        for i in v if isinstance(v, list) else [v]:
            if isinstance(i, int) and i not in out:
                out.append(i)
    return out


def load_conversation(folder: Path, tier: str) -> BeamConversation:
    tenant = f"beam{tier}-{folder.name}"
    conv = BeamConversation(tenant)
    batch_of: dict[int, str] = {}
    start: datetime | None = None
    for batch in json.loads((folder / "chat.json").read_text()):
        start = batch_start(batch, start)
        number = batch["batch_number"]
        position = 0
        for exchange in batch["turns"]:
            for m in exchange:
                mid = f"{tenant}:b{number}:{m['id']}"
                batch_of[m["id"]] = mid
                conv.messages.append(
                    BeamMessage(
                        mid, f"{tenant}:b{number}", m["role"], m["content"], start + position * MESSAGE_STEP
                    )
                )
                position += 1
    as_of = max(m.ts for m in conv.messages) + timedelta(days=1)
    probing = json.loads((folder / "probing_questions" / "probing_questions.json").read_text())
    for category, items in probing.items():
        if category in SKIPPED_CATEGORIES:
            continue
        for n, item in enumerate(items):
            gold = [batch_of[i] for i in flatten_ids(item.get("source_chat_ids")) if i in batch_of]
            if not gold:  # nothing to measure recall against
                continue
            answer = item.get("answer")
            conv.questions.append(
                BeamQuestion(
                    f"{tenant}:{category}:{n}",
                    tenant,
                    category,
                    item["question"],
                    answer if isinstance(answer, str) else None,
                    gold,
                    as_of,
                )
            )
    return conv


def load_tier(folder: Path, limit: int | None = None) -> list[BeamConversation]:
    """Every conversation of a tier's folder, in numeric order; [] when the folder is missing."""
    if not folder.is_dir():
        return []
    subs = sorted((p for p in folder.iterdir() if (p / "chat.json").is_file()), key=lambda p: int(p.name))
    tier = folder.name
    return [load_conversation(p, tier) for p in subs[:limit]]


def concatenated(convs: list[BeamConversation], tenant: str) -> BeamConversation:
    """One tenant holding ``convs`` one after the other (a long-lived tenant made of several
    projects): each conversation starts ``GAP_WITHOUT_ANCHOR`` after the previous one ends; message ids
    keep their conversation's prefix (unique across them); every question is asked a day after the
    last message of all."""
    out = BeamConversation(tenant)
    end: datetime | None = None
    for conv in convs:
        shift = (end + GAP_WITHOUT_ANCHOR - conv.messages[0].ts) if end else timedelta(0)
        out.messages += [
            replace(m, ts=m.ts + shift, session_id=f"{tenant}:{m.session_id}") for m in conv.messages
        ]
        end = out.messages[-1].ts
    assert end is not None
    back = max(end - LATEST_END, timedelta(0))  # events may not be stated in the future
    out.messages = [replace(m, ts=m.ts - back) for m in out.messages]
    end -= back
    for conv in convs:
        out.questions += [replace(q, tenant_id=tenant, as_of=end + timedelta(days=1)) for q in conv.questions]
    return out
