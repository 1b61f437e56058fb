"""Sliding windows of ``window_size`` messages per (tenant, session), advancing by ``stride``.

A window is emitted when it is full: the first one holds ``window_size`` new messages, each later one
the ``window_size - stride`` previous messages as context plus ``stride`` new ones, so every message is
decided on exactly once and still has context for coreference. A session that goes idle (a gap in
event time, seen by :meth:`Windower.step`; a session silent by wall clock, :meth:`Windower.on_silence`,
the one rule for serve's timer and the stream's idle checks) or ends flushes what it has, so no message waits forever. The windower
is pure: state is plain data (:class:`SessionBuffer`) that its caller keeps (a Faust table in
streams, :class:`simplemem.processors.ingest.sessions.LocalSessions` in one process).
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, Field

from simplemem.schemas.window import AnalyzedMessage, CloseReason, Window


class SessionBuffer(BaseModel):
    messages: list[AnalyzedMessage] = Field(default_factory=list)
    context: int = 0
    last_seen: float = 0.0

    @property
    def pending(self) -> int:
        return len(self.messages) - self.context


class Windower:
    def __init__(self, window_size: int, stride: int, idle_seconds: float) -> None:
        if not 1 <= stride <= window_size:
            raise ValueError("stride must be between 1 and window_size")
        self.window_size = window_size
        self.stride = stride
        self.idle = timedelta(seconds=idle_seconds)

    def step(
        self, buf: SessionBuffer | None, message: AnalyzedMessage, now: float = 0.0
    ) -> tuple[SessionBuffer | None, list[Window]]:
        """One session's buffer after ``message`` (pure: a stream keeps the buffer in a table).
        A message that ends its session closes the session: the buffer returned is ``None``."""
        emitted: list[Window] = []
        if buf is not None and buf.pending and message.ts - buf.messages[-1].ts > self.idle:
            emitted.append(self._emit(buf, CloseReason.IDLE))
            buf = None
        buf = SessionBuffer() if buf is None else buf.model_copy()
        undecided = [m.message_id for m in buf.messages[buf.context :]]
        if message.message_id in undecided:  # an edit of a message not decided yet: it replaces it
            at = buf.context + undecided.index(message.message_id)
            buf.messages = [*buf.messages[:at], message, *buf.messages[at + 1 :]]
        else:
            buf.messages = [*buf.messages, message]
        buf.last_seen = now
        if len(buf.messages) >= self.window_size:
            emitted.append(self._emit(buf, CloseReason.FULL))
            buf.messages = self._context_after(buf.messages)
            buf.context = len(buf.messages)
        if message.ends_session:
            closed, last = self.close(buf, CloseReason.END)
            return closed, emitted + last
        if message.ends_exchange:
            buf, settled = self.settle(buf)
            emitted += settled
        return buf, emitted

    def _context_after(self, messages: list[AnalyzedMessage]) -> list[AnalyzedMessage]:
        """What a decided window leaves as context for the next: its last ``window_size - stride``."""
        keep = self.window_size - self.stride
        return messages[len(messages) - keep :] if keep else []

    def settle(self, buf: SessionBuffer) -> tuple[SessionBuffer, list[Window]]:
        """Decide the undecided tail now (a pause, a complete exchange) without closing the session:
        its last ``window_size - stride`` messages stay as context for the next window, as after a full
        window, so coreference, novelty and dates keep their context when the conversation goes on."""
        if not buf.pending:
            return buf, []
        window = self._emit(buf, CloseReason.PAUSE)
        kept = self._context_after(buf.messages)
        return buf.model_copy(update={"messages": kept, "context": len(kept)}), [window]

    def on_silence(
        self, buf: SessionBuffer, silent: float, pause: float, idle: float
    ) -> tuple[SessionBuffer | None, list[Window]]:
        """A session silent for ``silent`` seconds (wall clock): closed after ``idle``, its tail
        settled after ``pause``, else as it is. One rule for serve and the stream."""
        if silent >= idle:
            return self.close(buf, CloseReason.IDLE)
        if silent >= pause:
            return self.settle(buf)
        return buf, []

    def close(self, buf: SessionBuffer, reason: CloseReason) -> tuple[SessionBuffer | None, list[Window]]:
        """Close a session's open window (idle or end); its buffer is then empty (pure)."""
        return None, ([self._emit(buf, reason)] if buf.pending else [])

    def _emit(self, buf: SessionBuffer, reason: CloseReason) -> Window:
        first = buf.messages[0]
        return Window(
            tenant_id=first.tenant_id,
            session_id=first.session_id,
            messages=list(buf.messages),
            new_from=buf.context,
            reason=reason,
        )
