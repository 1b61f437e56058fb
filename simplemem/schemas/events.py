"""The chat event: one message as a frontend publishes it. Validation names the failing field."""

from __future__ import annotations

import codecs
from enum import StrEnum
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from simplemem.schemas.keys import ItemId, SessionKey, TenantId, has_control_characters
from simplemem.schemas.timebounds import BoundedTime

MAX_SPEAKER_CHARS = 200  # a display name, not a place for text (that is `text`, with its own limit)
MAX_METADATA_BYTES = 16_384  # a frontend's tags and ids; the text limit cannot be got around through it
MAX_METADATA_DEPTH = 32  # tags nest a level or two; JSON encoders stop at a few hundred (orjson: 255)


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Turn(BaseModel):
    """One message as a caller of the query service sends it: the key decides its tenant. ``ts``
    must carry a UTC offset: naive times are ambiguous and rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)

    session_id: ItemId
    message_id: ItemId
    speaker: str = Field(min_length=1, max_length=MAX_SPEAKER_CHARS)
    role: Role
    text: str
    ts: BoundedTime
    metadata: dict[str, Any] | None = None
    ends_exchange: bool = Field(
        False,
        description="the caller's exchange is complete: its undecided messages are decided now, and the "
        "session stays open (they are context for what follows)",
    )
    ends_session: bool = Field(
        False,
        description="the conversation ends with this message: its window is decided now, not after "
        "the session has been silent for the idle time",
    )

    @field_validator("speaker")
    @classmethod
    def _no_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        if has_control_characters(value):
            raise ValueError("must not contain control characters")
        return value

    @field_validator("metadata")
    @classmethod
    def _small_metadata(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return value
        if _depth_over(value, MAX_METADATA_DEPTH):  # before encoding it: the encoder would raise
            raise ValueError(f"nested over {MAX_METADATA_DEPTH} levels deep")
        if len(orjson.dumps(value)) > MAX_METADATA_BYTES:
            raise ValueError(f"over {MAX_METADATA_BYTES} bytes as JSON")
        return value


class ChatEvent(Turn):
    """One message of a tenant: what the pipeline, the topics and the stores take."""

    tenant_id: TenantId

    @property
    def session_key(self) -> SessionKey:
        """A session's messages stay ordered together (the partition key is its encoding)."""
        return SessionKey(self.tenant_id, self.session_id)


def _depth_over(value: object, limit: int) -> bool:
    """Whether ``value`` nests objects or arrays more than ``limit`` levels deep (walked without
    recursion, so any depth is answered)."""
    level: list[object] = [value]
    for _ in range(limit):
        level = [
            child
            for item in level
            for child in (item.values() if isinstance(item, dict) else item if isinstance(item, list) else ())
        ]
        if not level:
            return False
    return any(isinstance(item, dict | list) for item in level)


class EventRejected(ValueError):
    """A raw event that cannot be accepted; ``reason`` names the field and the problem, ``code`` is
    its class (``invalid_json``, ``not_an_object``, ``too_large``, ``schema``) for metrics."""

    def __init__(self, reason: str, code: str = "schema") -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def describe_errors(error: ValidationError) -> str:
    """One line naming each failing field and its problem."""
    parts = []
    for item in error.errors():
        field = ".".join(str(p) for p in item["loc"]) or "event"
        msg = item["msg"]
        if item["type"] == "missing":
            msg = "field required"
        parts.append(f"{field}: {msg}")
    return "; ".join(parts)


def parse_event(raw: bytes | str | dict[str, Any], *, max_text_chars: int, max_id_chars: int) -> ChatEvent:
    """Decode and validate one raw event, or raise :class:`EventRejected` with a readable reason."""
    data = event_object(raw)
    text = data.get("text")
    if isinstance(text, str) and len(text) > max_text_chars:
        raise EventRejected(f"text: {len(text)} characters, over the limit of {max_text_chars}", "too_large")
    for field in ("tenant_id", "session_id", "message_id"):
        value = data.get(field)
        if isinstance(value, str) and len(value) > max_id_chars:
            raise EventRejected(f"{field}: over {max_id_chars} characters", "too_large")
    try:
        return ChatEvent.model_validate(data)
    except ValidationError as exc:
        raise EventRejected(describe_errors(exc)) from None
    except (TypeError, RecursionError) as exc:  # a value no validator foresaw: this event alone is refused
        raise EventRejected(f"event: cannot be validated ({type(exc).__name__})") from None


def event_object(raw: Any) -> dict[str, Any]:
    """``raw`` as a JSON object: a dict as it is, bytes or a string decoded; ``EventRejected`` else."""
    data = raw
    if isinstance(raw, bytes | str):
        try:
            data = load_json_line(raw)
        except ValueError as exc:
            raise EventRejected(str(exc), "invalid_json") from None
    if not isinstance(data, dict):
        raise EventRejected(f"event must be a JSON object, got {_json_type(data)}", "not_an_object")
    return data


def _json_type(value: Any) -> str:
    names = {
        type(None): "null",
        bool: "boolean",
        int: "number",
        float: "number",
        list: "array",
        str: "string",
    }
    return names.get(type(value), type(value).__name__)


def load_json_line(raw: bytes | str) -> Any:
    """The JSON value on one input line, a leading byte order mark ignored; ``ValueError`` saying why
    there is none."""
    raw = _without_bom(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(_json_problem(raw, exc)) from None


def _without_bom(raw: bytes | str) -> bytes | str:
    """Editors on Windows start a UTF-8 file with a byte order mark: it is not part of the JSON."""
    if isinstance(raw, bytes):
        return raw.removeprefix(codecs.BOM_UTF8)
    return raw.removeprefix("\ufeff")


def _json_problem(raw: bytes | str, exc: orjson.JSONDecodeError) -> str:
    """Why a line is not JSON: bytes that are not UTF-8 named as such (orjson's own message for them
    speaks of "surrogates"), else the parser's message."""
    if isinstance(raw, bytes):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return f"not UTF-8 (byte 0x{raw[bad.start]:02x} at offset {bad.start}): JSON lines must be UTF-8"
    return f"invalid JSON: {exc}"
