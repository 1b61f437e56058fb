"""Query words: the one tokenizer and stopword list that lexical search and term overlap share."""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """a an the and or but of to in on at for with by from as is are was were be been being do does did
    what when where who whom which why how that this these those it its i me my we our you your he she him
    her his they them their there here have has had will would can could should may might must about into
    over than then so if not no yes any some all""".split()
)
_WORD = re.compile(r"[\w][\w'-]*", re.UNICODE)


def query_terms(text: str) -> list[str]:
    terms = []
    for w in _WORD.findall(text.lower()):
        w = w.strip("'-").removesuffix("'s")
        if w and w not in STOPWORDS and w not in terms:
            terms.append(w)
    return terms
