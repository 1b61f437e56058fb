"""Evidence recall and answer recall, the LoCoMo measures of ``bench/locomo.py``.

Answer recall: the share of the gold answer's content tokens present in the context, after absolute
dates in both are rewritten in ISO form ("7 May 2023" -> "2023-05-07", "June 2023" -> "2023-06").
Some gold answers glue the day to the month ("3June, 2022"): a space is put back first, or the date
would count as the two words "3june" and "2022".
"""

from __future__ import annotations

import re
from datetime import date

from processors.temporal import MONTH_ABBR, find_anchors
from processors.text import STOPWORDS

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
