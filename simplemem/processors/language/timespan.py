"""ISO-8601 values of reduced precision (2023, 2023-05, 2023-W18, 2023-05-07) as day spans."""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from simplemem.processors.language.temporal import month_span

_WEEK = re.compile(r"^(\d{4})-W(\d{2})$")


def iso_span(value: str) -> tuple[date, date] | None:
    value = value.strip()
    if "/" in value:
        a, _, b = value.partition("/")
        first, last = iso_span(a), iso_span(b)
        return (first[0], last[1]) if first and last else None
    try:
        if re.fullmatch(r"\d{4}", value):
            y = int(value)
            return date(y, 1, 1), date(y, 12, 31)
        if re.fullmatch(r"\d{4}-\d{2}", value):
            return month_span(int(value[:4]), int(value[5:]))
        m = _WEEK.match(value)
        if m:
            monday = date.fromisocalendar(int(m.group(1)), int(m.group(2)), 1)
            return monday, monday + timedelta(days=6)
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            d = date.fromisoformat(value)
            return d, d
        d = datetime.fromisoformat(value).date()
        return d, d
    except ValueError:
        return None
