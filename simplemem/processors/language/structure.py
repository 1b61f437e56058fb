"""The structure of a long message: lines, list items and the line that introduces a list.

Assistants answer with markdown: paragraphs, numbered and bulleted lists, headings, tables. A
statement taken from a list item keeps where it stood ("item 3 (third) of 5 of 'Hotels near the
slopes'", the final one "item 5 (fifth, last) of 5 ..."), so "the third hotel you suggested" and "the
last one" still find it, and its number and name survive.

- :func:`plain` removes markup that carries no words (``**bold**``, ``__x__``, heading ``#``s, table
  rules ``|---|``) and turns table cells into a comma-separated line;
- :func:`outline` labels each line: a list item (``1.``, ``2)``, ``-``, ``*``, ``•``, or a table row)
  gets its number among the items of its list and the list's lead: the nearest line before the list
  that ends with a colon or is a heading, else none.
Limits: a list is a run of item lines, blank lines allowed between them; nested items count in the
outer list; an item's continuation lines (indented prose) belong to the item.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_EMPHASIS = re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
_TABLE_RULE = re.compile(r"[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*")
# a list item's number or bullet, as a line opens with it after its indentation
ITEM_MARKER = r"(?:\d{1,3}[.)]|[-*•+])"
_ITEM = re.compile(r"^\s*" + ITEM_MARKER + r"\s+(?=\S)")
_ROW = re.compile(r"^\s*\|(?P<cells>.*)\|\s*$")
ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth".split()
MAX_LEAD_WORDS = 12


@dataclass(frozen=True)
class Line:
    start: int  # character offsets in the plain text
    end: int
    item: int | None = None  # 1-based number among its list's items
    items: int | None = None  # how many items the list has
    lead: str | None = None  # the line that introduces the list


def plain(text: str) -> str:
    """``text`` without markup that carries no words; table rows become "| a, b, c" and a table's
    header row the lead of its rows ("Hotel, Price:")."""
    if not any(mark in text for mark in ("**", "__", "#", "|")):
        return text
    text = _HEADING.sub("", text)
    text = _EMPHASIS.sub(r"\2", text)
    out: list[str] = []
    for line in text.split("\n"):
        if _TABLE_RULE.fullmatch(line):
            if out and out[-1].startswith("| "):
                out[-1] = out[-1].removeprefix("| ") + ":"  # the header row leads the table
            continue
        out.append(_row_as_line(line))
    return "\n".join(out)


def _row_as_line(line: str) -> str:
    m = _ROW.match(line)
    if m is None:
        return line
    cells = [c.strip() for c in m.group("cells").split("|")]
    return "| " + ", ".join(c for c in cells if c)


def _is_item(line: str) -> bool:
    return bool(_ITEM.match(line) or _ROW.match(line) or line.startswith("| "))


def _lead_of(line: str) -> str | None:
    """The lead's last sentence ("Sure! Here are some hotels:" -> "Here are some hotels"), shortened."""
    words = re.split(r"(?<=[.!?])\s+", line.strip().rstrip(":"))[-1].split()
    if not words:
        return None
    return " ".join(words[:MAX_LEAD_WORDS]) + ("…" if len(words) > MAX_LEAD_WORDS else "")


def outline(text: str) -> list[Line]:
    """Each line of ``text`` with its place in a list, if it is an item. An item indented deeper than
    its list's first is part of the item above it ("2. Local groups:" then "   - Meetup"), as its
    other indented lines are: "the second option" is the second of the outer list."""
    spans, pos = [], 0
    for raw in text.split("\n"):
        spans.append((pos, pos + len(raw), raw))
        pos += len(raw) + 1
    lines: list[Line] = []
    run: list[int] = []  # indexes in ``lines`` of the current list's lines
    starts: list[int] = []  # those that start one of its items
    lead: str | None = None
    last_prose: str | None = None
    base = 0  # the indentation of the list's first item
    for start, end, raw in spans:
        if not raw.strip():
            lines.append(Line(start, end))
            continue
        if _is_item(raw) and not (run and _indent(raw) > base):
            if not run:
                lead = _lead_of(last_prose) if last_prose and last_prose.rstrip().endswith(":") else None
                base = _indent(raw)
            starts.append(len(lines))
            run.append(len(lines))
            lines.append(Line(start, end))
            continue
        if raw[:1].isspace() and run:  # an indented continuation, or sub-item, of the item
            run.append(len(lines))
            lines.append(Line(start, end))
            continue
        _number(lines, run, starts, lead)
        run, starts, last_prose = [], [], raw
        lines.append(Line(start, end))
    _number(lines, run, starts, lead)
    return lines


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _number(lines: list[Line], run: list[int], starts: list[int], lead: str | None) -> None:
    """Give the items of a finished list their numbers (their other lines take their item's)."""
    for n, first in enumerate(starts, 1):
        nxt = starts[n] if n < len(starts) else run[-1] + 1
        for i in [j for j in run if first <= j < nxt]:
            lines[i] = Line(lines[i].start, lines[i].end, n, len(starts), lead)


def label(line: Line) -> str | None:
    """How a statement from this line says where it stood, or None outside a list."""
    if line.item is None:
        return None
    words = [ORDINALS[line.item - 1]] if line.item <= len(ORDINALS) else []
    if line.items is not None and line.item == line.items > 1:
        words.append("last")  # "the last venue you listed"
    ordinal = f" ({', '.join(words)})" if words else ""
    where = f" of '{line.lead}'" if line.lead else ""
    return f"item {line.item}{ordinal} of {line.items}{where}"


# A statement's text as the decomposer writes it for a list item: its speaker, then :func:`label`,
# then ": ". An item past the twelfth has no ordinal word: no parentheses, unless it is the last. The
# lead is quoted; an apostrophe inside it is never followed by ": ".
_LABELLED = re.compile(
    r"^(?P<head>\w+, item (?P<item>\d+)(?: \([^)]*\))? of (?P<items>\d+))(?: of '(?P<lead>.+?)')?: "
)
# :func:`label` alone (a sentence's ``part``), for the lead it quotes
_LABEL_LEAD = re.compile(r"^item \d+(?: \([^)]*\))? of \d+ of '(?P<lead>.*)'$")


def labelled_place(text: str) -> tuple[int, int] | None:
    """The (item, items) a statement's :func:`label` gives, or None for a statement outside a list."""
    found = _LABELLED.match(text)
    return (int(found["item"]), int(found["items"])) if found else None


def label_lead(part: str) -> str | None:
    """The lead a :func:`label` quotes, or None."""
    found = _LABEL_LEAD.match(part)
    return found["lead"] if found else None


def list_of(text: str) -> tuple[str, int] | None:
    """The list a statement's label names (its speaker, size and lead) and its item there, or None."""
    found = _LABELLED.match(text)
    if found is None or found["lead"] is None:
        return None
    speaker = text.split(",", 1)[0]
    return f"{speaker}\x00{found['items']}\x00{found['lead']}", int(found["item"])


def without_lead(text: str) -> str:
    """A list statement without its list's lead ("assistant, item 4 (fourth) of 5: ..."): how it
    reads under another statement of the same list, which names it."""
    found = _LABELLED.match(text)
    return text if found is None or found["lead"] is None else f"{found['head']}: {text[found.end() :]}"


def item_marker(text: str) -> str:
    """The text of an item line without its bullet or number (the label carries the number)."""
    return _ITEM.sub("", text, count=1).removeprefix("| ")
