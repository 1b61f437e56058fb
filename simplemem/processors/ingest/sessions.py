"""Per-session state of one process (embedded mode, replay, tuning): open windows and entropy
histories in memory. Streams keep the same plain data in a Faust table instead; the windower and
the entropy filter themselves hold none."""

from __future__ import annotations

from simplemem.processors.ingest.entropy import SessionHistory
from simplemem.processors.ingest.windowing import SessionBuffer, Windower
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.window import AnalyzedMessage, CloseReason, Window


class LocalSessions:
    def __init__(self, windower: Windower) -> None:
        self.windower = windower
        self.buffers: dict[SessionKey, SessionBuffer] = {}
        self.histories: dict[SessionKey, SessionHistory] = {}

    def add(self, message: AnalyzedMessage, now: float = 0.0) -> list[Window]:
        """Buffer one message; return the windows it closes (an idle gap first, then a full window)."""
        key = message.session_key
        buffer, emitted = self.windower.step(self.buffers.pop(key, None), message, now)
        if buffer is not None:  # None: the message ended its session
            self.buffers[key] = buffer
        return emitted

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
        return windows

    def history(self, key: SessionKey) -> SessionHistory:
        return self.histories.get(key, SessionHistory())

    def forget_closed(self) -> None:
        """Drop the histories of sessions without an open window (state lives as long as its session)."""
        for key in [k for k in self.histories if k not in self.buffers]:
            del self.histories[key]
