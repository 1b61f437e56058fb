"""Evidence recall and answer recall, the LoCoMo measures of ``bench/locomo.py``; expected strings,
the measure of the golden sets (``tests/test_golden.py``, ``bench/chat.py``).

Answer recall: the share of the gold answer's content tokens present in the context, after absolute
dates in both are rewritten in ISO form ("7 May 2023" -> "2023-05-07", "June 2023" -> "2023-06").
Some gold answers glue the day to the month ("3June, 2022"): a space is put back first, or the date
would count as the two words "3june" and "2022".
"""

from __future__ import annotations

import calendar
import re
from datetime import date

from simplemem.processors.language.temporal import MONTH_ABBR, find_anchors
from simplemem.processors.language.text import STOPWORDS

_TOKEN = re.compile(r"\d{4}-\d{2}(?:-\d{2})?|[a-z0-9]+")
STOP = STOPWORDS | frozenset({"also", "just", "very"})
_REF = date(2000, 1, 1)  # absolute dates do not depend on it
_GLUED_DAY = re.compile(rf"\b(\d{{1,2}})(?=(?:{'|'.join(MONTH_ABBR)})[a-z]*\b)", re.I)


def iso_dates(text: str) -> str:
    text = _GLUED_DAY.sub(r"\1 ", text)
    out, pos = [], 0
    for a in find_anchors(text, _REF):
        if not a.already_absolute:
            continue
        out.append(text[pos : a.start])
        out.append(f" {a.value} ")
        pos = a.end
    out.append(text[pos:])
    return "".join(out)


def content_tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(iso_dates(text).lower()) if t not in STOP]


def answer_recall(answer: str, context: str) -> float:
    wanted = set(content_tokens(answer))
    if not wanted:
        return 1.0
    have = set(content_tokens(context))
    return len(wanted & have) / len(wanted)


def evidence_recall(gold: list[str], cited: set[str]) -> float:
    if not gold:
        return 1.0
    return sum(1 for g in gold if g in cited) / len(gold)


_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")
_ISO_MONTH = re.compile(r"(\d{4})-(\d{2})")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_ANCHOR = re.compile(r"\s*\((\d{4}-\d{2}(?:-\d{2})?)")
_DAY_HEADER = re.compile(r"^\[\d{4}-\d{2}-\d{2}\]$", re.MULTILINE)  # retrieval.build_context's


def _month_names(month: int) -> str:
    return f"(?:{calendar.month_name[month]}|{calendar.month_abbr[month]}\\.?)"


def date_spellings(iso: str) -> re.Pattern[str]:
    """The ways a context may write a day ("2026-01-11", "January 11", "Jan 11th", "11 January 2026")
    or a month ("2026-07", "July 2026"). Written here, not taken from simplemem.processors.language.temporal: the grader
    is not the code it grades."""
    if month := _ISO_MONTH.fullmatch(iso):
        year, names = month.group(1), _month_names(int(month.group(2)))
        return re.compile(rf"{re.escape(iso)}(?!-\d)|\b{names}\s+(?:of\s+)?{year}\b", re.IGNORECASE)
    day = date.fromisoformat(iso)
    names, d = _month_names(day.month), f"0?{day.day}(?:st|nd|rd|th)?"
    return re.compile(rf"{re.escape(iso)}|\b{names}\s+{d}\b|\b{d}\s+(?:of\s+)?{names}\b", re.IGNORECASE)


def _as_words(expected: str) -> re.Pattern[str]:
    """``expected`` as whole words: "an A" is not in "an assistant", "50" not in "150"; a number
    ends where the digits end ("160" is in "160x230")."""

    def edge(char: str, side: str) -> str:
        if char.isdigit():
            return r"(?<!\d)" if side == "start" else r"(?!\d)"
        if re.match(r"\w", char):
            return r"(?<!\w)" if side == "start" else r"(?!\w)"
        return ""

    return re.compile(
        edge(expected[0], "start") + re.escape(expected) + edge(expected[-1], "end"), re.IGNORECASE
    )


def _anchored_elsewhere(text: str, end: int, iso: str) -> bool:
    """Whether the date written just before ``end`` carries an anchor naming another date ("May 12
    (2025-05-12)" does not say 2026-05-12)."""
    anchor = _ANCHOR.match(text, end)
    return anchor is not None and not anchor.group(1).startswith(iso)


def contains(context: str, expected: str) -> bool:
    """Whole words, case-insensitive; digits grouped in thousands match ungrouped ("1,100" for
    "1100"). An expected ISO day or month matches any spelling of it, outside the context's
    ``[YYYY-MM-DD]`` headers: those say when a memory was stated, which is not the answer to "when
    is..." (and "2026-07" would match every July header)."""
    if _ISO_DAY.fullmatch(expected) or _ISO_MONTH.fullmatch(expected):
        text = _DAY_HEADER.sub("", context)
        return any(
            not _anchored_elsewhere(text, m.end(), expected) for m in date_spellings(expected).finditer(text)
        )
    words = _as_words(expected)
    return bool(words.search(context) or words.search(_THOUSANDS.sub("", context)))
