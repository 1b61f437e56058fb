"""Threshold A/B: score every window once, then report what each threshold would drop."""

from __future__ import annotations

from dataclasses import dataclass, field

from simplemem.processors.ingest.entropy import EntropyFilter
from simplemem.processors.ingest.sessions import LocalSessions
from simplemem.processors.ingest.windowing import Windower
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import AnalyzedMessage, EntropyScore, Window


@dataclass
class ThresholdOutcome:
    threshold: float
    windows: int = 0
    messages: int = 0
    dropped_messages: int = 0
    dropped: list[tuple[Window, EntropyScore]] = field(default_factory=list)

    @property
    def discard_rate(self) -> float:
        return self.dropped_messages / self.messages if self.messages else 0.0


def scored_windows(settings: Settings, messages: list[AnalyzedMessage]) -> list[tuple[Window, EntropyScore]]:
    """Windows and their scores; the score does not depend on the threshold, so compute it once."""
    sessions = LocalSessions(
        Windower(settings.window_size, settings.window_stride, settings.session_idle_seconds)
    )
    entropy = EntropyFilter(
        1.0, settings.entropy_alpha, settings.entropy_history_messages, judged_messages=settings.window_stride
    )
    windows = [w for m in messages for w in sessions.add(m)] + sessions.close_all()
    scored = []
    for w in windows:
        history = sessions.history(w.session_key)
        scored.append((w, entropy.score(w, history)))
        sessions.histories[w.session_key] = entropy.remember(history, w.new_messages)
    return scored


def sweep(scored: list[tuple[Window, EntropyScore]], thresholds: list[float]) -> list[ThresholdOutcome]:
    results = []
    for threshold in thresholds:
        outcome = ThresholdOutcome(threshold)
        for window, score in scored:
            outcome.windows += 1
            outcome.messages += len(window.new_messages)
            if score.score < threshold:
                outcome.dropped_messages += len(window.new_messages)
                outcome.dropped.append((window, score))
        results.append(outcome)
    return results
