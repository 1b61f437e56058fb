"""A question's form and what it asks for, read from its words: general English rules, each with its
limits. :mod:`.derived` says what each form reads of the derived memory.
"""

from __future__ import annotations

import re
from enum import StrEnum

from simplemem.processors.language.text import query_terms


class QuestionForm(StrEnum):
    LOOKUP = "lookup"
    LIST = "list"
    ORDER = "order"
    DURATION = "duration"
    SUMMARY = "summary"
    ADVICE = "advice"
    RECALL = "recall"
    HISTORY = "history"


_ORDER = re.compile(
    r"\b(?:in (?:what|which|the) order|order (?:in which|of)|in order\b|chronolog\w*|"
    r"which (?:\w+ )?(?:came|happened|did I \w+) first|what (?:came|happened) (?:first|next|after|before)|"
    r"step by step history)",
    re.IGNORECASE,
)
# Nouns that name an order ("the timeline", "the sequence of ..."): they ask for one in a question that
# asks for nothing else, but in a request for a summary they are part of its subject ("a summary of how
# my project timeline and tasks have changed" wants the summary). Limits: a verb or a noun of another
# sense is caught too ("how can I best sequence my resume updates", "balance my budget and timeline")
_ORDER_NOUNS = re.compile(r"\b(?:sequence|timeline|progression)\b", re.IGNORECASE)
_SUMMARY = re.compile(
    r"\b(?:summar\w+|overview|recap|brief me|sum up|comprehensive (?:summary|overview|account)|"
    r"how (?:has|have|did) (?:my|our|the) [\w\s-]{1,40}? (?:progress|evolve|develop|go)\w*|"
    r"what (?:have|did) (?:we|I) (?:done|do|cover|covered|discuss|discussed|achieve|achieved) so far)\b",
    re.IGNORECASE,
)
_DURATION = re.compile(
    r"\bhow (?:long|many (?:days|weeks|months|years|hours))\b|\b(?:days|weeks|months) (?:between|from|since)\b",
    re.IGNORECASE,
)
# "list" only as a verb ("List the ...", "can you list"): "my reading list" names a thing, and "Can
# you suggest books for my reading list?" asks for advice
_LIST = re.compile(
    r"\bhow (?:many|much|often)\b|(?:^|[.!?]\s+|\b(?:you|please)\s+)list\b|\ball (?:the|of|my)\b"
    r"|\bwhich \w+(?: \w+)? (?:have|did) I\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(
    r"^(?:(?:hey|hi|ok(?:ay)?|so|now|also|and)[,\s]+)*(?:can|could|would|will) you\b"
    r"|\bhow (?:do|can|should|would|could) I\b|\bwhat (?:would|do) you (?:suggest|recommend)\b"
    r"|\b(?:do|would) you think (?:I|we) should\b|\bshould (?:I|we)\b"
    r"|\b(?:suggest|recommend|advise|help me|show me|walk me through|best way|any tips)\b"
    r"|^(?:please\s+)?(?:write|create|implement|show|give|explain|help|build|design|set up|add|make|refactor)\b",
    re.IGNORECASE,
)


# the assistant's past words asked about: "did you", "had you", "you suggested", "you told me"
_RECALL = re.compile(
    r"\b(?:did|had) you\b|\byou (?:recommended|suggested|advised|proposed|told me|said|mentioned|"
    r"explained|showed me|gave me|walked me through|helped me)\b",
    re.IGNORECASE,
)
_HISTORY = re.compile(
    r"^(?:(?:so|and|also|ok(?:ay)?)[,\s]+)*(?:have|had|did|was|were) (?:I|we)\b(?: (?:ever|already|ever actually))?",
    re.IGNORECASE,
)


def question_form(query: str) -> QuestionForm:
    """The question's form (see the module for the limits); the first rule that holds."""
    for kind, rule in (
        (QuestionForm.ORDER, _ORDER),
        (QuestionForm.SUMMARY, _SUMMARY),
        (QuestionForm.ORDER, _ORDER_NOUNS),
        (QuestionForm.DURATION, _DURATION),
        (QuestionForm.LIST, _LIST),
        (QuestionForm.RECALL, _RECALL),
        (QuestionForm.ADVICE, _ADVICE),
        (QuestionForm.HISTORY, _HISTORY),
    ):
        if rule.search(query):
            return kind
    return QuestionForm.LOOKUP


# Where a question lists what it asks about: "the key features, the timeline, security enhancements and
# documentation" asks about four things, each of which a timeline line must match on its own.
_ASPECT_SPLIT = re.compile(r",|;|\band\b|\bas well as\b|\bincluding\b|\bthen\b", re.IGNORECASE)
MIN_ASPECT_TERMS = 2
MAX_ASPECTS = 5


def aspects(query: str) -> list[str]:
    """The parts of a question that enumerates (at least two, each with ``MIN_ASPECT_TERMS`` content
    words); [] for one that does not. Limits: an enumeration of single words ("dogs, cats and birds")
    is one aspect (its parts are too short to search alone), and "and" inside a name splits it."""
    parts = [p.strip() for p in _ASPECT_SPLIT.split(query)]
    found = [p for p in parts if len(query_terms(p)) >= MIN_ASPECT_TERMS]
    return found[:MAX_ASPECTS] if len(found) >= 2 else []


# What a question asks for, in the words an instruction about answers of that kind uses: "When is my
# meeting?" names no date, but "Always format dates as MM/DD/YYYY when I ask about scheduling" governs
# its answer. Limits: only dates, times and amounts; a question that asks for two gets both.
_ANSWER_KINDS = (
    (
        re.compile(
            r"^\W*when\b|\bwhen (?:is|was|are|were|did|does|do|will)\b|\b(?:what|which) (?:date|day)\b",
            re.IGNORECASE,
        ),
        "date dates",
    ),
    (re.compile(r"\bwhat time\b|\bat what time\b", re.IGNORECASE), "time times"),
    (re.compile(r"\bhow much\b|\bwhat (?:did|does|will) \w+ cost\b", re.IGNORECASE), "cost costs amount"),
)


def answer_kind(query: str) -> str:
    """The words that name what ``query`` asks for (see :data:`_ANSWER_KINDS`); "" if none applies."""
    return " ".join(words for rule, words in _ANSWER_KINDS if rule.search(query))
