"""Temporal anchoring: relative time expressions become absolute ISO-8601 dates at ingestion.

"yesterday" said on 2026-01-12 is stored as "yesterday (2026-01-11)": the original words stay (they
carry nuance and help lexical search) and the absolute date travels with them, so the memory reads the
same whenever it is retrieved. The same engine turns a query's "last week" into a date range.

Conventions for the ambiguous cases (reference = the message time, or the query's ``as_of``):
- weeks run Monday..Sunday; "last week" is the previous Monday..Sunday, "next week" the following one;
  their text reads "last week (the week before 2023-07-03)", from the day it was said, as people
  date such things (the span is the calendar week either way); "last/next weekend" likewise;
- "last <weekday>" is the latest such day strictly before the reference, "next <weekday>" the one
  in the following week ("next Friday" said on a Monday is eleven days later: the people in the chat
  set, and their assistants' confirmations, all read it so), "this <weekday>" the one in the
  reference's week; a bare "on Friday" is read as the latest past Friday in a past-tense sentence
  and the next Friday otherwise;
- "this weekend" is the Saturday..Sunday of the reference's week; "last weekend" the one before it
  (when said on a weekend day, "last weekend" is the weekend a week earlier); "N weekends ago" is N
  weekends before this one;
- weekday abbreviations ("last Fri", "next Tues") count after last/next/this/past only;
- "N weeks ago" is a day (reference - 7N); "N months ago" and "N years ago" are a month;
- a day without a year ("March 30") within about two months of the reference is that occurrence;
  otherwise a date or month without a year ("June 14", "in September") is placed in the year that
  puts it on or before the reference when its clause is in the past, and on or after it otherwise
  (limit: "we went to Greece on June 3", said on May 20, is read as the coming June 3); the
  decomposer reads the tense of the expression's own clause ("the doctor said no coffee until
  July": the coffee is future, the saying past; :mod:`simplemem.processors.language.tense`), "next July" is always
  the next one;
- "last night" is the day before the reference; "tonight", "this morning" are the reference day;
- a month after a preposition is a date unless a possessive follows it ("in June's room" names a
  person); limit: "in June's heat" is read as a person too.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from dateutil.relativedelta import relativedelta

WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
MONTH_ABBR = {m[:3]: i + 1 for i, m in enumerate(MONTHS)} | {"sept": 9}
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "couple of": 2,
    "a couple": 2,
}

_NUM = r"(?P<num>\d{1,3}|a couple of|a couple|couple of|an|a|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_WD = r"(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
# Abbreviated weekdays only after last/next/this/past (alone, "wed" is a word), and "Sat", "Sun" only
# capitalised ("this sun").
_WD_SHORT = r"(?P<wd>mon|tues?|weds?|thu(?:rs?)?|fri|(?-i:Sat|Sun))\.?"
_MONTH = r"(?P<month>january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
# A year-less day ("March 30") this close to the day it was said is that occurrence, whatever the
# tense: the tense is often another event's ("the trip moved to March 30", said on March 29; "the
# launch was planned for April 28", said on March 2), and a day a year away is seldom named without
# its year. About two months: beyond it the tense decides ("I was born on December 30").
NEAR_DAY_DAYS = 61
RECURRING_LOOKBACK_CHARS = 48  # how far before a day or month its habit words may stand (_RECURRING)
_YEAR = r"(?P<year>(?:19|20)\d{2})"

# Order matters: longer, more specific patterns first (the alternation is tried left to right).
_PATTERNS: list[tuple[str, str]] = [
    ("iso", r"\b(?P<iso>(?:19|20)\d{2}-[01]\d-[0-3]\d)\b"),
    ("dmy", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b"),
    ("mdy", rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b"),
    ("my", rf"\b{_MONTH},?\s+{_YEAR}\b"),
    ("day_before_yesterday", r"\bthe day before yesterday\b"),
    ("day_after_tomorrow", r"\bthe day after tomorrow\b"),
    ("ago", rf"\b{_NUM}\s+{_UNIT}\s+ago\b"),
    ("in_n", rf"\bin\s+{_NUM}\s+{_UNIT}\b"),
    ("from_now", rf"\b{_NUM}\s+{_UNIT}\s+from\s+now\b"),
    ("weekends_ago", rf"\b{_NUM}\s+weekends?\s+ago\b"),
    ("rel_weekend", r"\b(?P<rel>last|next|this|past)\s+weekend\b"),
    ("rel_weekday", rf"\b(?P<rel>last|next|this|past)\s+{_WD}\b"),
    ("rel_weekday", rf"\b(?P<rel>last|next|this|past)\s+{_WD_SHORT}(?!\w)"),
    ("rel_unit", r"\b(?P<rel>last|next|this|past)\s+(?P<unit>week|month|year)\b"),
    ("yesterday", r"\byesterday\b"),
    ("last_night", r"\blast night\b"),
    ("today", r"\b(?:today|tonight|this morning|this afternoon|this evening)\b"),
    ("tomorrow", r"\btomorrow\b"),
    ("md", rf"\b{_MONTH}\s+{_DAY}\b(?!\s*(?:,\s*)?(?:19|20)\d{{2}})(?!\s*(?:am|pm|%|:))"),
    ("dm", rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b(?!,?\s+(?:19|20)\d{{2}})"),
    # not before a date: "Thursday 26 February" is the date's (the more specific expression)
    ("on_weekday", rf"\b(?:on\s+)?{_WD}s?\b(?!,?\s+(?:the\s+)?\d{{1,2}}(?:st|nd|rd|th)?\b|,?\s+{_MONTH})"),
    (
        "in_month",
        rf"\b(?P<prep>in|since|until|till|by|during|early|late|mid|next|end of|beginning of)\s+{_MONTH}(?!\s+\d)\b",
    ),
    ("in_year", rf"\b(?P<prep>in|since|during|of|by|until)\s+{_YEAR}\b"),
]
_REGEXES = [(name, re.compile(p, re.IGNORECASE)) for name, p in _PATTERNS]
# Every pattern above needs a digit or one of these whole words (a month, a weekday, a relative day,
# a unit of time, "ago"): a text without any has no expression, and most sentences skip the 22 scans.
_MAY_HOLD_DATE = re.compile(
    r"\d|\b(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?|(?:mon|tues?|wed(?:nes)?|weds|thu(?:rs?)?|thurs|fri|sat(?:ur)?|sun)"
    r"(?:days?)?|yesterday|today|tonight|tomorrow|morning|afternoon|evening|night|weekends?|(?:day|week|month|year)s?|"
    r"ago)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Anchor:
    """One anchored expression: its span in the text, the ISO value and the covered day range."""

    start: int
    end: int
    phrase: str
    iso: str
    first_day: date
    last_day: date
    already_absolute: bool = False

    @property
    def value(self) -> str:
        """The covered span as one ISO-8601 value: a day, week, month, year, or an interval."""
        return iso_value(self.first_day, self.last_day)


def iso_value(first: date, last: date) -> str:
    if first == last:
        return first.isoformat()
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return f"{first.year:04d}"
    if (
        first.day == 1
        and (first.year, first.month) == (last.year, last.month)
        and (last + timedelta(days=1)).day == 1
    ):
        return f"{first.year:04d}-{first.month:02d}"
    if first.weekday() == 0 and last == first + timedelta(days=6):
        year, week, _ = first.isocalendar()
        return f"{year:04d}-W{week:02d}"
    return f"{first.isoformat()}/{last.isoformat()}"


def _num(value: str) -> int:
    value = value.lower()
    return int(value) if value.isdigit() else NUMBER_WORDS[value]


def _month_num(value: str) -> int:
    v = value.lower().rstrip(".")
    return MONTH_ABBR[v[:4] if v.startswith("sept") else v[:3]]


def week_of(day: date) -> tuple[date, date]:
    monday = day - timedelta(days=day.weekday())
    return monday, monday + timedelta(days=6)


def month_span(year: int, month: int) -> tuple[date, date]:
    first = date(year, month, 1)
    return first, first + relativedelta(months=1) - timedelta(days=1)


def _day(d: date) -> tuple[str, date, date]:
    return d.isoformat(), d, d


def _week(d: date, label: str | None = None) -> tuple[str, date, date]:
    first, last = week_of(d)
    return label or f"the week of {first.isoformat()}", first, last


def _month(year: int, month: int) -> tuple[str, date, date]:
    first, last = month_span(year, month)
    return f"{year:04d}-{month:02d}", first, last


def _year(year: int) -> tuple[str, date, date]:
    return f"{year:04d}", date(year, 1, 1), date(year, 12, 31)


def _weekend(saturday: date, label: str | None = None) -> tuple[str, date, date]:
    return label or f"the weekend of {saturday.isoformat()}", saturday, saturday + timedelta(days=1)


def _beside(ref: date, step: int, what: str) -> str | None:
    """A neighbouring week or weekend named from the day it was said ("the week before 2023-07-03"),
    rather than as a calendar week the speaker may not have meant."""
    return f"the {what} {'before' if step < 0 else 'after'} {ref.isoformat()}" if step else None


def _shift(ref: date, n: int, unit: str, loose: bool = False) -> tuple[str, date, date]:
    """``n`` units from ``ref`` (negative: ago): days and weeks to the day, months and years to the
    month ("a year ago" said in August 2023 is 2022-08, more useful than all of 2022)."""
    if unit in ("day", "week"):
        return _day(ref + timedelta(days=n * (7 if unit == "week" else 1)))
    if unit == "year" and loose:
        return _year(ref.year + n)
    d = ref + relativedelta(months=n * (12 if unit == "year" else 1))
    return _month(d.year, d.month)


def _in_year(year: int, month: int, day: int) -> date:
    """That day in ``year`` (February 29 as the 28th); a day the month lacks raises ValueError."""
    return date(year, month, min(day, 28) if month == 2 else day)


def _near_year(ref: date, month: int, day: int) -> int | None:
    """The year of the occurrence of a year-less day within ``NEAR_DAY_DAYS`` of ``ref``, if only one is."""
    try:
        near = [
            y
            for y in (ref.year - 1, ref.year, ref.year + 1)
            if abs((_in_year(y, month, day) - ref).days) <= NEAR_DAY_DAYS
        ]
    except ValueError:
        return None
    return near[0] if len(near) == 1 else None


def _place_year(ref: date, month: int, day: int | None, past: bool) -> int:
    """Pick the year that puts a year-less date on the side of ``ref`` the tense points to; a day
    close to ``ref`` is its nearest occurrence whatever the tense (see the module's conventions)."""
    if day is not None and (near := _near_year(ref, month, day)) is not None:
        return near
    candidate_day = day or 1
    try:
        this_year = _in_year(ref.year, month, candidate_day)
    except ValueError:
        this_year = date(ref.year, month, 1)
    if past:
        if day is None:
            return ref.year if month <= ref.month else ref.year - 1
        return ref.year if this_year <= ref else ref.year - 1
    if day is None:
        return ref.year if month >= ref.month else ref.year + 1
    return ref.year if this_year >= ref else ref.year + 1


def _resolve(
    name: str, m: re.Match[str], ref: date, past: bool, loose: bool = False
) -> tuple[str, date, date] | None:
    g = m.groupdict()
    if name == "iso":
        d = date.fromisoformat(g["iso"])
        return _day(d)
    if name in ("dmy", "mdy"):
        return _day(date(int(g["year"]), _month_num(g["month"]), int(g["day"])))
    if name == "my":
        return _month(int(g["year"]), _month_num(g["month"]))
    if name == "in_year":
        return _year(int(g["year"]))
    if name == "yesterday":
        return _day(ref - timedelta(days=1))
    if name == "last_night":
        return _day(ref - timedelta(days=1))
    if name == "today":
        return _day(ref)
    if name == "tomorrow":
        return _day(ref + timedelta(days=1))
    if name == "day_before_yesterday":
        return _day(ref - timedelta(days=2))
    if name == "day_after_tomorrow":
        return _day(ref + timedelta(days=2))
    if name == "ago":
        return _shift(ref, -_num(g["num"]), g["unit"].lower(), loose)
    if name in ("in_n", "from_now"):
        return _shift(ref, _num(g["num"]), g["unit"].lower(), loose)
    rel = (g.get("rel") or "").lower()
    if name == "rel_unit":
        unit = g["unit"].lower()
        step = {"last": -1, "past": -1, "next": 1, "this": 0}[rel]
        if unit == "week":
            return _week(ref + timedelta(weeks=step), _beside(ref, step, "week"))
        if unit == "month":
            d = ref + relativedelta(months=step)
            return _month(d.year, d.month)
        return _year(ref.year + step)
    if name == "weekends_ago":
        return _weekend(week_of(ref)[0] + timedelta(days=5 - 7 * _num(g["num"])))
    if name == "rel_weekend":
        this_saturday = week_of(ref)[0] + timedelta(days=5)
        if rel == "this":
            return _weekend(this_saturday)
        if rel in ("last", "past"):
            return _weekend(this_saturday - timedelta(days=7), _beside(ref, -1, "weekend"))
        return _weekend(this_saturday + timedelta(days=7), _beside(ref, 1, "weekend"))
    if name in ("rel_weekday", "on_weekday"):
        wd = next(i for i, day in enumerate(WEEKDAYS) if day.startswith(g["wd"].lower()[:3]))
        lead = m.group(0).lower().split()[0] if name == "on_weekday" else rel
        if name == "on_weekday" and m.group(0).lower().endswith(WEEKDAYS[wd] + "s"):
            return None  # "on Saturdays" is a habit, not a date
        if lead == "this":
            return _day(week_of(ref)[0] + timedelta(days=wd))
        if lead == "next":
            return _day(week_of(ref)[0] + timedelta(days=7 + wd))
        go_back = lead in ("last", "past") or past
        if go_back:
            delta = (ref.weekday() - wd) % 7 or 7
            return _day(ref - timedelta(days=delta))
        delta = (wd - ref.weekday()) % 7 or 7
        return _day(ref + timedelta(days=delta))
    if name in ("md", "dm"):
        month, day = _month_num(g["month"]), int(g["day"])
        if not 1 <= day <= 31:
            return None
        year = _place_year(ref, month, day, past)
        try:
            return _day(date(year, month, day))
        except ValueError:
            return None
    if name == "in_month":
        month = _month_num(g["month"])
        if g["prep"].lower() == "next":  # "next May" said in May is a year away
            return _month(ref.year + (month <= ref.month), month)
        return _month(_place_year(ref, month, None, past), month)
    return None


_POSSESSIVE = re.compile(r"['’]s\b")


def _is_possessive_name(name: str, m: re.Match[str], text: str) -> bool:
    """A bare month before a possessive is a person ("in June's room", "during May's party"): a
    month owns nothing unless a word fixes which one ("next June's graduation" stays a date)."""
    return name == "in_month" and m.group("prep").lower() != "next" and bool(_POSSESSIVE.match(text, m.end()))


def _is_may_verb(m: re.Match[str]) -> bool:
    """'may' is a month only when capitalised ("in May", not "I may")."""
    month = m.groupdict().get("month")
    return month is not None and month.lower() == "may" and not month.startswith("M")


# What makes the day or month after it a habit: "every Thursday", "each May", "every other Tuesday",
# "every week on Monday", "every Tuesday and Thursday" (the second day too), "weekly on Fridays",
# "our recurring Monday standup".
_RECURRING = re.compile(
    r"\b(?:(?:every|each)(?:\s+(?:other|second|third|alternate))?(?:\s+(?:week|month|year|two weeks))?"
    r"|weekly|biweekly|fortnightly|recurring|regular)(?:\s+on)?"
    r"(?:\s+(?:mon|tues|wednes|thurs|fri|satur|sun)day(?:,|\s+and|\s+or|\s+&)?)*\s*$",
    re.IGNORECASE,
)
_ABSOLUTE = {"iso", "dmy", "mdy", "my", "in_year"}


Tense = bool | Callable[[int], bool]


def find_anchors(
    text: str, ref: datetime | date, *, past: Tense = False, loose: bool = False
) -> list[Anchor]:
    """All non-overlapping temporal expressions in ``text``, anchored to ``ref``.

    ``past``: the sentence's tense, or a function of an expression's start offset giving the tense of
    its own clause (see :mod:`simplemem.processors.language.tense`). ``loose`` (for queries, where a range is a filter):
    "N years ago" covers the whole year.
    """
    if not _MAY_HOLD_DATE.search(text):
        return []
    ref_day = ref.date() if isinstance(ref, datetime) else ref
    taken: list[tuple[int, int]] = []
    anchors: list[Anchor] = []
    for name, rx in _REGEXES:
        for m in rx.finditer(text):
            start, end = m.span()
            phrase = m.group(0).strip()
            start = start + (len(m.group(0)) - len(m.group(0).lstrip()))
            if any(s < end and start < e for s, e in taken):
                continue
            if _is_may_verb(m) or _is_possessive_name(name, m, text):
                continue
            if name == "on_weekday" and not (phrase[0].isupper() or phrase.lower().startswith("on ")):
                continue
            if name in ("on_weekday", "rel_weekday", "in_month") and _RECURRING.search(
                text[max(0, start - RECURRING_LOOKBACK_CHARS) : start]
            ):
                continue  # "every Thursday", "each May": a habit, not a date
            try:
                resolved = _resolve(name, m, ref_day, past(start) if callable(past) else past, loose)
            except (ValueError, KeyError):
                resolved = None
            if resolved is None:
                continue
            iso, first, last = resolved
            taken.append((start, end))
            anchors.append(Anchor(start, end, phrase, iso, first, last, name in _ABSOLUTE))
    anchors.sort(key=lambda a: a.start)
    return anchors


def anchor_text(text: str, ref: datetime | date, *, past: Tense = False) -> tuple[str, list[Anchor]]:
    """Rewrite ``text`` with the absolute date after each relative expression."""
    anchors = find_anchors(text, ref, past=past)
    out: list[str] = []
    pos = 0
    for a in anchors:
        out.append(text[pos : a.end])
        if a.iso not in a.phrase:
            out.append(f" ({a.iso})")
        pos = a.end
    out.append(text[pos:])
    return "".join(out), anchors
