"""Temporal anchoring table: relative expressions -> absolute ISO values (see module conventions)."""

from datetime import date, datetime

import pytest

from simplemem.processors.language.temporal import anchor_text, find_anchors
from simplemem.processors.language.timespan import iso_span

REF = datetime(2026, 1, 14, 10, 0)  # a Wednesday

CASES = [
    # (text, past tense?, expected ISO value of the first anchor)
    ("I ran a race yesterday", True, "2026-01-13"),
    ("I'm going today", False, "2026-01-14"),
    ("we meet tomorrow", False, "2026-01-15"),
    ("the day before yesterday it snowed", True, "2026-01-12"),
    ("the day after tomorrow I fly", False, "2026-01-16"),
    ("last night was fun", True, "2026-01-13"),
    ("tonight we cook", False, "2026-01-14"),
    ("I moved three days ago", True, "2026-01-11"),
    ("I moved 3 days ago", True, "2026-01-11"),
    ("I got promoted two weeks ago", True, "2025-12-31"),
    ("a week ago I started", True, "2026-01-07"),
    ("I quit 2 months ago", True, "2025-11"),
    ("we married five years ago", True, "2021-01"),
    ("a couple of days ago it rained", True, "2026-01-12"),
    ("in 3 days I leave", False, "2026-01-17"),
    ("in two weeks the course starts", False, "2026-01-28"),
    ("in 6 months we move", False, "2026-07"),
    ("10 days from now is the deadline", False, "2026-01-24"),
    ("last week I was sick", True, "2026-W02"),
    ("next week is busy", False, "2026-W04"),
    ("this week I rest", False, "2026-W03"),
    ("last month I travelled", True, "2025-12"),
    ("next month I start", False, "2026-02"),
    ("last year I lived abroad", True, "2025"),
    ("next year we retire", False, "2027"),
    ("last Friday I saw her", True, "2026-01-09"),
    ("next Monday is the review", False, "2026-01-19"),
    ("this Saturday we hike", False, "2026-01-17"),
    ("last Wednesday was hard", True, "2026-01-07"),
    ("I went to the museum on Friday", True, "2026-01-09"),
    ("see you on Friday", False, "2026-01-16"),
    ("this weekend we camp", False, "2026-01-17/2026-01-18"),
    ("last weekend we camped", True, "2026-01-10/2026-01-11"),
    ("next weekend is free", False, "2026-01-24/2026-01-25"),
    ("we camped two weekends ago", True, "2026-01-03/2026-01-04"),
    ("last Fri we made pots", True, "2026-01-09"),
    ("I joined a group last Tues.", True, "2026-01-13"),
    ("next Thurs is the show", False, "2026-01-22"),  # the Thursday of next week, not tomorrow
    ("see you this Thursday", False, "2026-01-15"),
    ("my birthday is June 14", False, "2026-06-14"),
    ("my birthday is on 14 June", False, "2026-06-14"),
    ("I was born on December 30", True, "2025-12-30"),
    # a day near the reference is its nearest occurrence, whatever the tense (another event's)
    ("the trip moved to January 20", True, "2026-01-20"),
    ("the launch was planned for March 10", True, "2026-03-10"),
    ("it has been like this since about January 9", False, "2026-01-09"),
    ("the review is on January 20th", False, "2026-01-20"),
    ("she started school in September", True, "2025-09"),
    ("we travel in April", False, "2026-04"),
    ("next June's graduation is the big one", False, "2026-06"),
    ("on 8 May, 2023 we met", True, "2023-05-08"),
    ("on May 8, 2023 we met", True, "2023-05-08"),
    ("in May 2023 we met", True, "2023-05"),
    ("the date was 2024-02-29", True, "2024-02-29"),
    ("since 2016 I paint", False, "2016"),
]


@pytest.mark.parametrize(("text", "past", "expected"), CASES)
def test_anchor_values(text: str, past: bool, expected: str) -> None:
    anchors = find_anchors(text, REF, past=past)
    assert anchors, f"no temporal expression found in {text!r}"
    assert anchors[0].value == expected


def test_table_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize(
    "text",
    [
        "I may go to the gym",  # the verb "may"
        "I volunteer on Saturdays",  # a habit
        "we play every Thursday",  # a habit
        "April is my cousin",  # a name, no preposition
        "Leo sleeps in June's room",  # a name: a bare month owns nothing
        "we met during May’s party",
        "I ran 5 km",
        "this sun is too hot for a hike",  # not "Sun(day)"
    ],
)
def test_non_dates_are_left_alone(text: str) -> None:
    assert find_anchors(text, REF, past=False) == []


def test_rewrite_keeps_words_and_adds_iso() -> None:
    text, anchors = anchor_text("I ran my first half marathon yesterday!", REF, past=True)
    assert text == "I ran my first half marathon yesterday (2026-01-13)!"
    assert anchors[0].first_day == date(2026, 1, 13)


@pytest.mark.parametrize(
    ("said", "written"),
    [
        ("I was sick last week", "I was sick last week (the week before 2026-01-14)"),
        ("we camped last weekend", "we camped last weekend (the weekend before 2026-01-14)"),
        ("next week is busy", "next week (the week after 2026-01-14) is busy"),
        ("this week I rest", "this week (the week of 2026-01-12) I rest"),
        ("we camped two weekends ago", "we camped two weekends ago (the weekend of 2026-01-03)"),
    ],
)
def test_neighbouring_weeks_are_written_from_the_day_they_were_said(said: str, written: str) -> None:
    assert anchor_text(said, REF, past=True)[0] == written


def test_absolute_iso_is_not_repeated() -> None:
    text, _ = anchor_text("it was 2024-02-29", REF, past=True)
    assert text == "it was 2024-02-29"


@pytest.mark.parametrize(
    ("value", "first", "last"),
    [
        ("2026", date(2026, 1, 1), date(2026, 12, 31)),
        ("2026-02", date(2026, 2, 1), date(2026, 2, 28)),
        ("2026-W02", date(2026, 1, 5), date(2026, 1, 11)),
        ("2026-01-10/2026-01-11", date(2026, 1, 10), date(2026, 1, 11)),
        ("2026-01-13", date(2026, 1, 13), date(2026, 1, 13)),
    ],
)
def test_iso_spans(value: str, first: date, last: date) -> None:
    assert iso_span(value) == (first, last)


def test_queries_read_years_ago_as_the_whole_year() -> None:
    assert find_anchors("what did I do two years ago?", REF, past=True, loose=True)[0].value == "2024"
