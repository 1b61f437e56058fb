"""When a standing instruction applies: the subject it names ("Always format dates as MM/DD/YYYY when
I ask about scheduling details" applies to questions about scheduling, not to date formats).

An instruction is found by the question it governs, and that question shares the condition's subject,
seldom the words of what to do ("When is my meeting at the studio?" is about scheduling; it says
nothing of date formats). So an instruction with a condition is searched by the condition's subject.

Limits: English conditions that open with "when", "whenever", "if", "each/every/any time" and the
user asking, discussing or working on something ("when I ask about X", "whenever we discuss X", "if
I'm working on X"), "when it comes to X" and "for questions about X"; any other instruction is
searched by its whole text.
"""

from __future__ import annotations

import re

from simplemem.processors.language.text import query_terms

_CONDITION = re.compile(
    r"\b(?:(?:when(?:ever)?|if|each time|every time|any ?time)\s+(?:I|we)(?:'m|'re| am| are)?\s+"
    r"(?:ask|talk|inquire|request|discuss|mention|work|write|need|want|look|plan|prepare|chat)\w*"
    r"(?:\s+(?:you|me|for|about|on|over|regarding|with|into|at))*"
    r"|when it comes to|for (?:any |all )?(?:questions|requests|anything|help) (?:about|on|regarding|with))"
    r"\s+(?P<subject>[^.!?;,]+)",
    re.IGNORECASE,
)


def condition_subject(instruction: str) -> str | None:
    """The subject of ``instruction``'s condition ("scheduling details"), or None when it states
    none (or one without a content word)."""
    found = _CONDITION.search(instruction)
    if found is None:
        return None
    subject = found.group("subject").strip(" ,:\"'")
    return subject if query_terms(subject) else None
