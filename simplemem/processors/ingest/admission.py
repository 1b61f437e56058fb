"""Which turns go on to a window, one rule for both drivers (the embedded :class:`Pipeline` and the
stream stages): a forgotten turn is dropped, and a turn whose analysis fails on its own becomes a
failed outcome. Each driver only reports these its way (rejections, dead letters, counters).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from typing import TypeVar

from simplemem.processors.stores.tombstones import Tombstones, forgotten_among
from simplemem.schemas.accounting import MessageOutcome, Outcome
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.window import AnalyzedMessage

log = logging.getLogger(__name__)

FORGOTTEN_REASON = "forgotten on request (right to be forgotten): not accepted again"

T = TypeVar("T")


def split_forgotten(
    tombstones: Tombstones | None, items: Iterable[T], turn: Callable[[T], tuple[str, str, datetime] | None]
) -> tuple[list[T], list[T]]:
    """``items`` split into (kept, forgotten), each in its order; ``turn`` names an item's (tenant,
    message id, time), or None for an item that is no turn (always kept). One look-up per tenant."""
    items = list(items)
    if tombstones is None or not items:
        return items, []
    turns = [turn(item) for item in items]
    gone = forgotten_among(tombstones, (t for t in turns if t is not None))
    if not gone:
        return items, []
    kept: list[T] = []
    dropped: list[T] = []
    for item, t in zip(items, turns, strict=True):
        (dropped if t is not None and (t[0], t[1]) in gone else kept).append(item)
    return kept, dropped


def failed_outcome(tenant_id: str, session_id: str | None, message_id: str, reason: str) -> MessageOutcome:
    return MessageOutcome(
        tenant_id=tenant_id,
        session_id=session_id,
        message_id=message_id,
        outcome=Outcome.FAILED,
        reason=reason,
    )


def analysed_or_failed(
    batch: Callable[[], Sequence[AnalyzedMessage]],
    alone: Callable[[list[ChatEvent]], Sequence[AnalyzedMessage]],
    events: Sequence[ChatEvent],
) -> list[AnalyzedMessage | MessageOutcome]:
    """The batch's analysed messages; if the batch fails, each event alone, so a message that breaks
    the analysis costs only itself: its place holds its failed outcome."""
    try:
        return list(batch())
    except Exception:
        log.exception("analysis failed for a batch; retrying one by one")
    results: list[AnalyzedMessage | MessageOutcome] = []
    for event in events:
        try:
            results.extend(alone([event]))
        except Exception as exc:
            log.warning("analysis failed for message %s: %s", event.message_id, exc)
            reason = f"analysis failed: {exc}"
            results.append(failed_outcome(event.tenant_id, event.session_id, event.message_id, reason))
    return results
