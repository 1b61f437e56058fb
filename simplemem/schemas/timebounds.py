"""The times simplemem accepts: a message's ``ts`` and a query's ``as_of`` lie between January 1st of
``earliest_year`` and ``max_future_days`` after the current time.

Outside, a message is either not a chat message ("last week" said on 0001-01-01 leaves the calendar:
relative dates reach up to 999 years back) or would never be returned (nothing stated after a query's
``as_of``, the current time by default).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from pydantic import AfterValidator, AwareDatetime

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
