"""What a question asks, read from its words: general English rules, each with its known limits.

These are surface rules (regular expressions over the question), chosen for being cheap, predictable
and explainable; none understands the question. Each says below what it catches and what it misses.
The plan (:mod:`simplemem.processors.retrieval.plan`) turns their answers into a query's settings.
"""

from __future__ import annotations

import math
import re
from enum import StrEnum

from simplemem.processors.language.structure import ORDINALS, labelled_place
from simplemem.processors.language.text import STOPWORDS
from simplemem.processors.retrieval.config import ComplexityWeights
from simplemem.schemas.events import Role

# Words that ask about time: "when", "how long", "last", "year"... Limits: a question that dates
# without them ("Was it before or after the move?" is caught; "Which came first?" is too, through
# "first", and so is the ordinal "my first car") and one that uses them for something else ("the
# last slice") both count as temporal.
TEMPORAL_CUES = re.compile(
    r"\b(when|before|after|since|during|until|first|last|ago|how long|date|year|month|week|day|time)\b", re.I
)

# Words that combine, count or compare: the answer draws on several memories. Limits: "and" counts
# wherever it appears (also inside a name, "Tom and Jerry"); a combining question without these
# words ("What else?") is not seen.
AGGREGATION_CUES = re.compile(
    r"\b(all|every|how many|list|both|compare|common|together|total|each|why|would|likely|usually|often|"
    r"pattern|relationship|activities|things|kinds?|types?|ways)\b|\band\b",
    re.I,
)

# Questions that count, list, total or order things: their answer is every mention across the
# sessions, not the best few. Limits: a count without these words ("What's the tally of ...") is a
# lookup; one that uses them for one thing ("all the way") gathers more mentions than it needs.
# "first" orders only before an "or" ("Which did I start first, A or B?"; "my first purchase" is a
# lookup), "which ... earlier/first/..." only with at most two words between ("Which concert did I
# attend earlier?" is a lookup), and "list" only as a verb ("List all ...", "can you list"; "the
# last venue in the list" is a lookup of one item).
GATHER_CUES = re.compile(
    r"\b(how many|how much|how often|how long|number of|in total|total|all (?:the|of|my)|every|"
    r"each|which \w+(?: \w+)? (?:first|last|earlier|later|before|after)|in what order|order of|"
    r"first\b[^?.]*\bor|compare|since|ago)\b|(?:^|[.!?]\s+|\b(?:you|please)\s+)list\b",
    re.I,
)

# Questions that ask for the things of a kind someone has or did ("What books has Melanie read?",
# "Which cities has Jon visited?": what/which, a plural noun, an auxiliary): their answer is spread
# over sessions. Limits: English forms; a noun that only looks plural ("What news does ...") widens
# a lookup; a list asked without an auxiliary ("Name the books Melanie read") is not one.
LIST_CUES = re.compile(
    r"\b(?:what|which)\s+(?:[\w/+-]+\s+)?\w+?[^s'\W]s\s+(?:has|have|does|do|did|had)\b", re.I
)

# Requests for advice or a recommendation ("Can you suggest a hotel for my trip?", "Any tips?",
# "What should I cook?"): what tailors the answer (what the user has, likes, did) is spread over
# sessions and rarely shares the request's words. Limits: English forms; a request without them ("I
# need a gift idea", "What do you think?") is a lookup.
ADVICE_FORMS = (
    r"\b(?:can|could|would) you (?:recommend|suggest)",
    r"\bany (?:tips|ideas|suggestions|recommendations|advice)\b",
    r"\b(?:what (?:should|could|can) i|should i)\b",
)
ADVICE_CUES = re.compile("|".join(ADVICE_FORMS), re.I)

# A past tense or a look back: relative dates in the text ("on Friday") then point backwards.
# Limits: a handful of common verbs; "I go on Friday" reads forwards, "I saw it Friday" is not seen.
PAST = re.compile(r"\b(did|was|were|had|went|got|made|ago|last)\b", re.I)

# Whose words a question is about. One that recalls what the assistant said ("remind me", "you
# recommended", "our previous chat") is about the assistant's statements; one in the first person
# ("my", "I did") about the user's own life. Limits: English forms only; a first-person question
# about what the assistant said without these words ("What was that hotel?") counts as the user's.
ASSISTANT_RECALL = re.compile(
    r"\b(remind me|our (?:previous|last|earlier|past) (?:conversation|chat|discussion|session)|"
    r"you (?:mentioned|said|told|recommended|suggested|provided|gave|listed|shared|described|explained|"
    r"outlined|wrote)|did you (?:say|mention|recommend|suggest)|we (?:discussed|talked|outlined|covered))\b",
    re.I,
)
FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.I)

# The place of a listed thing a question names ("the last venue you recommended", "the third hotel",
# "item 7", "#3"): a statement taken from a list item carries its place in its label. Limits: an
# ordinal after "the/your/that" only ("my second choice" is not a place).
PLACE = re.compile(
    r"\b(?:the|your|that) (?:(\d{1,3})(?:st|nd|rd|th)|(" + "|".join(ORDINALS) + r"|last))\b"
    r"|(?:\b(?:item|number) |#)(\d{1,3})\b",
    re.I,
)

# Capitalised words and runs: the candidates for person names. Limits: a sentence's first word is a
# candidate too (the tenant's known names decide), and a name written in lower case is not one.
NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*")


class QuestionKind(StrEnum):
    """How widely a question's answer is spread, which decides k and how memories are shown."""

    LOOKUP = "lookup"  # one fact or a few: k from the question's complexity
    SPREAD = "spread"  # things of a kind, advice: k_max memories, whole, with their siblings
    GATHER = "gather"  # counting or ordering mentions: k_max short mentions, a few a message


def question_kind(query: str) -> QuestionKind:
    """:data:`GATHER_CUES` first, then :data:`LIST_CUES` or :data:`ADVICE_CUES`, else a lookup."""
    if GATHER_CUES.search(query):
        return QuestionKind.GATHER
    if LIST_CUES.search(query) or ADVICE_CUES.search(query):
        return QuestionKind.SPREAD
    return QuestionKind.LOOKUP


def is_temporal(query: str) -> bool:
    """Whether the question asks about time (:data:`TEMPORAL_CUES`)."""
    return bool(TEMPORAL_CUES.search(query))


def is_past(text: str) -> bool:
    """Whether relative dates in ``text`` point backwards (:data:`PAST`)."""
    return bool(PAST.search(text))


def asked_role(query: str) -> Role | None:
    """The role whose statements a question is about (see :data:`ASSISTANT_RECALL`), or None."""
    if ASSISTANT_RECALL.search(query):
        return Role.ASSISTANT
    return Role.USER if FIRST_PERSON.search(query.replace("’", "'")) else None


def asked_places(query: str) -> frozenset[str]:
    """The list places a question names (:data:`PLACE`), as an item's number or "last"."""
    places = set()
    for number, word, numbered in PLACE.findall(query):
        word = word.lower()
        places.add(number or numbered or ("last" if word == "last" else str(ORDINALS.index(word) + 1)))
    return frozenset(places)


def at_place(text: str, places: frozenset[str]) -> bool:
    """Whether a statement's list label puts it at one of ``places``."""
    place = labelled_place(text)
    if place is None:
        return False
    item, items = place
    return str(item) in places or ("last" in places and item == items > 1)


def name_candidates(query: str) -> list[str]:
    """Capitalised words and runs in the query (possessives stripped), and their single words."""
    found: list[str] = []
    for m in NAME.finditer(query):
        phrase = re.sub(r"['’]s$", "", m.group(0)).strip(" .")
        words = [w for w in phrase.split() if w.lower() not in STOPWORDS]
        if not words:
            continue
        found.append(" ".join(words))
        found.extend(words)
    return list(dict.fromkeys(found))


def without_words(query: str, words: list[str]) -> str:
    """``query`` with ``words`` (and their possessives) blanked out."""
    if not words:
        return query
    pattern = r"\b(?:" + "|".join(re.escape(w) for w in words) + r")(?:['’]s)?\b"
    return re.sub(pattern, " ", query)


def complexity(query: str, names: int, weights: ComplexityWeights | None = None) -> float:
    """Query complexity in [0, 1] from length, named persons, temporal and aggregation cues."""
    w = weights or ComplexityWeights()
    features = (
        (w.length, len(query.split())),
        (w.entities, names),
        (w.temporal, len(TEMPORAL_CUES.findall(query))),
        (w.aggregation, len(AGGREGATION_CUES.findall(query))),
    )
    score = sum(f.weight * min(value / f.at, 1.0) for f, value in features)
    return round(min(max(score, 0.0), 1.0), 4)


def k_for(score: float, k_min: int, k_max: int) -> int:
    """k in [k_min, k_max] through a square root: the first cues of complexity matter most."""
    return k_min + math.ceil(math.sqrt(score) * (k_max - k_min))
