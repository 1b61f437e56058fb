"""Query words: the one tokenizer and stopword list that lexical search and term overlap share."""

from __future__ import annotations

import re
from functools import lru_cache

STOPWORDS = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being do does did
    what when where who whom which why how that this these those it its i me my we our you your he she him
    her his they them their there here have has had will would can could should may might must about into
    over than then so if not no yes any some all""".split()
)
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)


# texts whose terms are remembered: a query's question is split by each search of it, and the
# memories it ranks recur from query to query (their siblings are ranked by shared terms)
REMEMBERED_TEXTS = 20_000
REMEMBERED_CHARS = 2000  # a longer text (a whole message) is split each time, not kept


def query_terms(text: str) -> list[str]:
    """The distinct words of ``text`` that are not stopwords, in order, lower-cased."""
    return list(_remembered(text) if len(text) <= REMEMBERED_CHARS else _terms(text))


@lru_cache(maxsize=REMEMBERED_TEXTS)
def _remembered(text: str) -> tuple[str, ...]:
    return _terms(text)


def _terms(text: str) -> tuple[str, ...]:
    terms: list[str] = []
    for w in _WORD.findall(text.lower()):
        w = w.strip("'-").removesuffix("'s")
        if w and w not in STOPWORDS and w not in terms:
            terms.append(w)
    return tuple(terms)
