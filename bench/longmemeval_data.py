"""LongMemEval_S questions as tenants: each question's own history (haystack) as chat events.

    python -m bench.longmemeval_data --out FILE [--data FILE] [--limit N]   # the events as a JSONL file


Read from ``../shared/data/longmemeval`` (MIT licence, see its README), never copied here. Each
question is one tenant; its haystack sessions are replayed in time order (the file lists some out of
order), each session's turns ``TURN_SECONDS`` apart from its date, the last one ending the session.
A turn gets the message id ``s<session index>t<turn index>`` (its place in the file, unique even when
a haystack lists a session id twice), which is how the bench maps the memories' ``source_ids`` back to
evidence turns (``has_answer``) and answer sessions. Dates carry no zone: UTC is assumed.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

DEFAULT_FILE = (
    Path(__file__).resolve().parents[2] / "shared" / "data" / "longmemeval" / "longmemeval_s_dev.json"
)
TURN_SECONDS = 5  # "a few seconds apart": a 132-turn session spans 11 minutes
SPEAKERS = {"user": "User", "assistant": "Assistant"}
PREFERENCE = "single-session-preference"  # its "answer" is a rubric, not words to find
TYPES = (
    "single-session-user",
    "single-session-assistant",
    PREFERENCE,
    "multi-session",
    "knowledge-update",
    "temporal-reasoning",
)
_WEEKDAY = re.compile(r"\s*\(\w+\)")
_UNSAFE_ID = re.compile(r"[^\w.-]")


@dataclass(frozen=True)
class LmeTurn:
    message_id: str
    session: str  # the haystack session id, as answer_session_ids name it
    session_key: str  # the event's session_id: unique within the tenant
    role: str
    text: str
    ts: datetime
    has_answer: bool
    last: bool  # the last turn of its session


@dataclass
class LmeQuestion:
    qid: str
    qtype: str
    question: str
    answer: str
    as_of: datetime
    answer_sessions: list[str]
    turns: list[LmeTurn]

    @property
    def tenant_id(self) -> str:
        return f"lme-{self.qid}"

    @property
    def evidence(self) -> list[str]:
        """The message ids of the evidence turns (``has_answer``)."""
        return [t.message_id for t in self.turns if t.has_answer]

    def session_of(self) -> dict[str, str]:
        return {t.message_id: t.session for t in self.turns}

    def events(self) -> list[dict[str, Any]]:
        return [
            {
                "tenant_id": self.tenant_id,
                "session_id": t.session_key,
                "message_id": t.message_id,
                "speaker": SPEAKERS.get(t.role, t.role),
                "role": t.role,
                "text": t.text,
                "ts": t.ts.isoformat(),
                "ends_session": t.last,
            }
            for t in self.turns
        ]


def parse_date(value: str) -> datetime:
    """ "2023/05/30 (Tue) 23:40" -> an aware datetime (UTC assumed)."""
    return datetime.strptime(_WEEKDAY.sub("", value), "%Y/%m/%d %H:%M").replace(tzinfo=UTC)


def history(item: dict[str, Any]) -> list[LmeTurn]:
    """The haystack's turns, sessions in time order (a stable sort: equal dates keep the file's)."""
    sessions = list(
        zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"], strict=True)
    )
    order = sorted(range(len(sessions)), key=lambda i: parse_date(sessions[i][1]))
    turns: list[LmeTurn] = []
    for si in order:
        sid, date, session = sessions[si]
        start = parse_date(date)
        key = f"{si:02d}-{_UNSAFE_ID.sub('-', sid)}"
        for ti, turn in enumerate(session):
            turns.append(
                LmeTurn(
                    message_id=f"s{si:02d}t{ti:03d}",
                    session=sid,
                    session_key=key,
                    role=str(turn["role"]),
                    text=str(turn["content"]),
                    ts=start + timedelta(seconds=TURN_SECONDS * ti),
                    has_answer=bool(turn.get("has_answer")),
                    last=ti == len(session) - 1,
                )
            )
    return turns


def question(item: dict[str, Any]) -> LmeQuestion:
    return LmeQuestion(
        qid=str(item["question_id"]),
        qtype=str(item["question_type"]),
        question=str(item["question"]),
        answer=str(item["answer"]),
        as_of=parse_date(item["question_date"]),
        answer_sessions=[str(s) for s in item["answer_session_ids"]],
        turns=history(item),
    )


def load_questions(path: Path, limit: int | None = None, per_type: int | None = None) -> list[LmeQuestion]:
    """The file's questions in its order: the first ``per_type`` of each type, then the first ``limit``."""
    items = orjson.loads(path.read_bytes())
    if per_type is not None:
        seen: dict[str, int] = defaultdict(int)
        chosen = []
        for item in items:
            seen[item["question_type"]] += 1
            if seen[item["question_type"]] <= per_type:
                chosen.append(item)
        items = chosen
    return [question(item) for item in items[:limit]]


def write_events(questions: list[LmeQuestion], out: Path) -> int:
    """The histories as the JSON lines ``simplemem ingest`` reads; returns how many were written."""
    n = 0
    with out.open("wb") as f:
        for q in questions:
            for e in q.events():
                f.write(orjson.dumps(e) + b"\n")
                n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_FILE, help="the LongMemEval_S dev file")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    args = ap.parse_args()
    n = write_events(load_questions(args.data, args.limit), args.out)
    print(f"{n} events written to {args.out}")


if __name__ == "__main__":
    main()
