"""Degenerate repetition, compressed before anything else reads a message.

A model's answer sometimes ends in a loop: the same line thousands of times, a table cell or a run of
spaces repeated until the output limit. Such a message holds a useful first part and then bytes that
say nothing; rejecting it whole loses the first part, and analysing it whole costs minutes of NLP.
Two rules, applied in order:

- a short unit (1 to ``UNIT_CHARS`` characters) repeated more than ``MAX_RUN`` times in a row within
  a line keeps ``MAX_RUN`` copies ("| --- | --- | ..." and runs of spaces or dashes);
- a non-blank line seen more than ``MAX_LINE_REPEATS`` times in the message keeps its first
  ``MAX_LINE_REPEATS`` occurrences; blank lines in a row beyond two are dropped.

What was dropped is counted (the ingestion accounting reports it). Limits: a loop whose repeated unit
is longer than ``UNIT_CHARS`` within one line (a long sentence said again and again on one line) is
kept; legitimate repetition above the bounds (a table with 40 identical rows) is shortened too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

UNIT_CHARS = 8
MAX_RUN = 32
MAX_LINE_REPEATS = 8
MAX_BLANK_LINES = 2

_RUN = re.compile(rf"(.{{1,{UNIT_CHARS}}}?)\1{{{MAX_RUN},}}", re.DOTALL)


@dataclass(frozen=True)
class Compressed:
    text: str
    dropped_chars: int


def _shorten_runs(line: str) -> str:
    return _RUN.sub(lambda m: m.group(1) * MAX_RUN, line)


def compress_repetition(text: str) -> Compressed:
    """``text`` without its degenerate repetition (see the module), and how many characters went."""
    out: list[str] = []
    seen: dict[str, int] = {}
    blanks = 0
    for raw in text.split("\n"):
        line = _shorten_runs(raw) if len(raw) > MAX_RUN else raw
        key = line.strip()
        if not key:
            blanks += 1
            if blanks > MAX_BLANK_LINES:
                continue
            out.append(line)
            continue
        blanks = 0
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > MAX_LINE_REPEATS:
            continue
        out.append(line)
    kept = "\n".join(out)
    return Compressed(kept, len(text) - len(kept))
