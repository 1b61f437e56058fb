"""A stream for consolidation: near-identical coffee orders, one a day in a session of its own,
among unrelated facts and a few identical code blocks (never merged). Shared by the tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.helpers.events import chat_event

T0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
# Variants of one drink, each well above the affinity threshold from a plain latte (MiniLM int8
# cosine 0.92-0.96). An "oat latte" (0.84-0.87, by the batch it is embedded in) sat on the threshold
# itself, so whether it joined the others depended on quantization noise.
DRINKS = ("latte", "latte", "soy latte", "latte", "large latte")
CAFE = "Quillfeather"

UNRELATED = [
    "My sister Ines lives in Porto and works at the university there.",
    "I play the cello in a community orchestra on Sunday evenings.",
    "Our beagle Pixel turned four years old last week.",
    "I am training for the Lisbon half marathon in October.",
    "My favourite author is Ursula Le Guin, I reread Earthsea every winter.",
    "The car needs new brake pads before the road trip to Scotland.",
]
CODE = "Here is the retry helper again:\n```python\ndef retry(fn, attempts=3):\n    for i in range(attempts):\n        try:\n            return fn()\n        except OSError:\n            pass\n```"


event = chat_event


def order_ids(orders: int) -> list[str]:
    return [f"order{day:03d}:m1" for day in range(orders)]


def stream(tenant: str, orders: int = 50) -> list[dict[str, Any]]:
    events = []
    for day in range(orders):
        drink = DRINKS[day % len(DRINKS)]
        text = f"I ordered a {drink} at the {CAFE} cafe on the corner this morning."
        events.append(event(tenant, f"order{day:03d}", text, T0 + timedelta(days=day, minutes=day % 7)))
    for i, text in enumerate(UNRELATED):
        events.append(event(tenant, f"life{i}", text, T0 + timedelta(days=3 + 7 * i, hours=5)))
    for i in range(3):
        events.append(event(tenant, f"code{i}", CODE, T0 + timedelta(days=2 + i, hours=9)))
    return events
