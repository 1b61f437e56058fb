"""LoCoMo conversations as chat events and questions (read from ../shared, never copied here)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
from dateutil import parser as dateparser

DEFAULT_DIR = Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
_DIA = re.compile(r"D(\d+):(\d+)")


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str
    ts: datetime


@dataclass
class Question:
    qid: str
    tenant_id: str
    question: str
    answer: str | None
    evidence: list[str]
    category: int
    as_of: datetime


@dataclass
class Conversation:
    tenant_id: str
    turns: list[Turn]
    questions: list[Question]

    def events(self) -> list[dict[str, Any]]:
        return [
            {
                "tenant_id": self.tenant_id,
                "session_id": f"{self.tenant_id}/{t.dia_id.split(':')[0]}",
                "message_id": t.dia_id,
                "speaker": t.speaker,
                "role": "user",
                "text": t.text,
                "ts": t.ts.isoformat(),
            }
            for t in self.turns
        ]


def parse_session_time(value: str) -> datetime:
    """ "1:56 pm on 8 May, 2023" -> an aware datetime (LoCoMo gives no zone: UTC is assumed)."""
    return dateparser.parse(value.replace(" on ", " ")).replace(tzinfo=UTC)


def clean_evidence(items: list[str]) -> list[str]:
    """Normalise the known quirks ("D8:6; D9:17" in one string, "D:11:26")."""
    found: list[str] = []
    for item in items:
        for m in _DIA.finditer(item.replace("D:", "D")):
            found.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return list(dict.fromkeys(found))


def turn_text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", ""))
    caption = turn.get("blip_caption")
    return f"{text} [shares a photo: {caption}]" if caption else text


def load_conversation(path: Path) -> Conversation:
    data = orjson.loads(path.read_bytes())
    conv = data.get("conversation", data)
    tenant = f"locomo-{path.stem}"
    turns: list[Turn] = []
    n = 1
    while f"session_{n}" in conv:
        start = parse_session_time(conv[f"session_{n}_date_time"])
        for i, turn in enumerate(conv[f"session_{n}"]):
            turns.append(
                Turn(turn["dia_id"], turn["speaker"], turn_text(turn), start + timedelta(seconds=30 * i))
            )
        n += 1
    as_of = max(t.ts for t in turns) + timedelta(days=1)
    questions = [
        Question(
            f"{tenant}#q{i}",
            tenant,
            q["question"],
            None if q.get("answer") is None else str(q["answer"]),
            clean_evidence(q.get("evidence", [])),
            int(q["category"]),
            as_of,
        )
        for i, q in enumerate(data["qa"], start=1)
    ]
    return Conversation(tenant, turns, questions)


def load_all(folder: Path = DEFAULT_DIR, limit: int | None = None) -> list[Conversation]:
    paths = sorted(folder.glob("*.json"))[:limit]
    return [load_conversation(p) for p in paths]
