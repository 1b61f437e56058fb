"""Per-session state of one process (embedded mode, replay, tuning): open windows and entropy
histories in memory. Streams keep the same plain data in a Faust table instead; the windower and
the entropy filter themselves hold none."""

from __future__ import annotations

import heapq
from datetime import datetime

from simplemem.processors.ingest.entropy import SessionHistory
from simplemem.processors.ingest.windowing import SessionBuffer, Windower
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.window import AnalyzedMessage, CloseReason, Window


class LocalSessions:
    def __init__(self, windower: Windower) -> None:
        self.windower = windower
        self.buffers: dict[SessionKey, SessionBuffer] = {}
        self.histories: dict[SessionKey, SessionHistory] = {}
        # Per tenant, its open sessions by the time of their last turn (oldest first; an entry whose
        # time is no longer its session's last is skipped): which ones a later turn leaves idle.
        self._by_last_turn: dict[str, list[tuple[datetime, str]]] = {}

    def add(self, message: AnalyzedMessage, now: float = 0.0) -> list[Window]:
        """Buffer one message; return the windows it closes: its tenant's other sessions that it
        leaves idle (:meth:`_left_idle`), then its own session's (an idle gap first, then a full
        window)."""
        key = message.session_key
        emitted = self._left_idle(message)
        buffer, own = self.windower.step(self.buffers.pop(key, None), message, now)
        if buffer is not None:  # None: the message ended its session
            self.buffers[key] = buffer
            self._note_last_turn(key, buffer, message.ts)
        return emitted + own

    def _left_idle(self, message: AnalyzedMessage) -> list[Window]:
        """Close the tenant's other sessions whose last turn is more than the idle time older than
        ``message`` (event time). Such a session would close at its next turn anyway (the same
        windows); closing it now is what bounds a bulk import's state: without it, a session that no
        event marks as ended held its open window (analysed messages) and its entropy history until
        the end of the input, tens of MB per LongMemEval history. A turn that arrives after a turn of
        its tenant stated more than the idle time later (input out of time order) starts a new
        window, as after a gap."""
        order = self._by_last_turn.get(message.tenant_id)
        closed: list[Window] = []
        while order and message.ts - order[0][0] > self.windower.idle:
            last, session_id = heapq.heappop(order)
            key = SessionKey(message.tenant_id, session_id)
            buffer = self.buffers.get(key)
            if key == message.session_key or buffer is None or _last_turn(buffer, last) != last:
                continue  # its own gap is the windower's rule; or a stale entry
            del self.buffers[key]
            closed += self.windower.close(buffer, CloseReason.IDLE)[1]
        return closed

    def _note_last_turn(self, key: SessionKey, buffer: SessionBuffer, ts: datetime) -> None:
        order = self._by_last_turn.setdefault(key.tenant_id, [])
        heapq.heappush(order, (_last_turn(buffer, ts), key.session_id))
        if len(order) > 2 * len(self.buffers) + 64:  # stale entries: keep the heap near the open count
            self._reindex()

    def _reindex(self) -> None:
        """The per-tenant orders rebuilt from the open sessions (stale entries dropped)."""
        self._by_last_turn = {}
        for key, buffer in self.buffers.items():
            if buffer.messages:
                order = self._by_last_turn.setdefault(key.tenant_id, [])
                order.append((buffer.messages[-1].ts, key.session_id))
        for order in self._by_last_turn.values():
            heapq.heapify(order)

    def close_silent(self, now: float, pause: float, idle: float) -> list[Window]:
        """Apply the silence rule (:meth:`Windower.on_silence`) to every open session at wall-clock
        ``now``: tails of sessions silent for ``pause`` are decided, those silent for ``idle`` close."""
        windows = []
        for key, buffer in list(self.buffers.items()):
            kept, decided = self.windower.on_silence(buffer, now - buffer.last_seen, pause, idle)
            if kept is None:
                del self.buffers[key]
            else:
                self.buffers[key] = kept
            windows += decided
        return windows

    def close_all(self) -> list[Window]:
        """The end of the input: every open window closes; the sessions' state is dropped after
        their last windows are judged (:meth:`forget_closed`)."""
        windows = []
        for key in list(self.buffers):
            _, closed = self.windower.close(self.buffers.pop(key), CloseReason.END)
            windows += closed
        self._by_last_turn = {}
        return windows

    def history(self, key: SessionKey) -> SessionHistory:
        return self.histories.get(key, SessionHistory())

    def forget_closed(self) -> None:
        """Drop the histories of sessions without an open window (state lives as long as its session)."""
        for key in [k for k in self.histories if k not in self.buffers]:
            del self.histories[key]


def _last_turn(buffer: SessionBuffer, default: datetime) -> datetime:
    """The time of a buffer's last message (what the windower's gap rule compares with)."""
    return buffer.messages[-1].ts if buffer.messages else default
