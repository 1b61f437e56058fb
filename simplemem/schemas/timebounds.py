"""The times simplemem accepts: a message's ``ts`` and a query's ``as_of`` lie between January 1st of
``earliest_year`` and ``max_future_days`` after the current time.

Outside, a message is either not a chat message ("last week" said on 0001-01-01 leaves the calendar:
relative dates reach up to 999 years back) or would never be returned (nothing stated after a query's
``as_of``, the current time by default).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime, BeforeValidator, WithJsonSchema
from pydantic.json_schema import JsonDict

from simplemem.schemas.settings import get_settings


def check_time(value: datetime) -> datetime:
    """``value`` if it is within the bounds; raises ``ValueError`` naming the bound otherwise."""
    s = get_settings()
    if value.year < s.earliest_year:
        raise ValueError(
            f"{value.isoformat()} is before {s.earliest_year}, the earliest accepted year "
            "(SIMPLEMEM_EARLIEST_YEAR)"
        )
    latest = datetime.now(UTC) + timedelta(days=s.max_future_days)
    # The year first: comparing aware times converts to UTC, which overflows at the calendar's ends.
    if value.year > latest.year or value > latest:
        raise ValueError(
            f"{value.isoformat()} is more than {s.max_future_days:g} days in the future "
            "(SIMPLEMEM_MAX_FUTURE_DAYS)"
        )
    return value


BoundedTime = Annotated[AwareDatetime, AfterValidator(check_time)]
"""A time with a UTC offset, within the accepted bounds: every model field that takes one."""


def written(value: object) -> object:
    """A time or day as text (ISO 8601), never a number or a boolean: ``0`` or ``false`` where a
    time belongs is a caller's bug, not the epoch."""
    if isinstance(value, bool | int | float):
        raise ValueError("must be an ISO 8601 string, not a number or a boolean")
    return value


def earliest_unix_time() -> JsonDict:
    """A Unix time's lower bound for the contract: January 1st of the earliest accepted year."""
    return {"minimum": datetime(get_settings().earliest_year, 1, 1, tzinfo=UTC).timestamp()}


def whole_number(value: object) -> object:
    """An integer as JSON has it: ``5`` or ``5.0``, never ``true`` or ``"5"`` (a caller's bug)."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON integer")
    return value


def _years_pattern() -> str:
    """The years a time may have, as the contract's pattern: the earliest accepted year to the
    current one (a time later than ``max_future_days`` from now in this year is refused too)."""
    first, last = get_settings().earliest_year, datetime.now(UTC).year
    decades = []
    for start in range(first - first % 10, last + 1, 10):
        low, high = max(first, start), min(last, start + 9)
        decades.append(f"{start // 10}[{low % 10}-{high % 10}]")
    return "^(" + "|".join(decades) + ")-"


TextTime = Annotated[
    BoundedTime,
    BeforeValidator(written),
    WithJsonSchema(
        {
            "type": "string",
            "format": "date-time",
            "pattern": _years_pattern(),
            "description": "ISO 8601 with a UTC offset, from January 1st of SIMPLEMEM_EARLIEST_YEAR to "
            "SIMPLEMEM_MAX_FUTURE_DAYS after now",
        }
    ),
]
"""A :data:`BoundedTime` that a request gives as text (the HTTP contract's times)."""

DAY_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def calendar_day(value: object) -> object:
    """A day as ``YYYY-MM-DD`` only: ``0`` (the epoch to a lenient parser) or a time where a day
    belongs is a caller's bug."""
    if not isinstance(value, str) or re.fullmatch(DAY_PATTERN, value) is None:
        raise ValueError("must be a day written YYYY-MM-DD")
    return value


TextDay = Annotated[
    date,
    BeforeValidator(calendar_day),
    WithJsonSchema({"type": "string", "format": "date", "pattern": DAY_PATTERN}),
]
"""A day that a request gives as text (a query string's ``since``/``until``)."""
