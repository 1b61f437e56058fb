"""A speaker denying something of themself: "I've never used Redis", "I don't eat meat", "I haven't
met Michael". Sentence vectors barely tell such a sentence from its affirmative twin ("I've used
Redis"), so measured by its vector alone it looks redundant exactly when it matters: when it
contradicts or corrects what was said before.

Limits: English first-person forms only; a denial in the third person ("she never called") or
without "I" ("never had one") is not recognised, and a hedge about the conversation ("I'm not sure",
"I don't know", "I don't think") is not a denial.
"""

from __future__ import annotations

import re

# what follows "I'm not" or "I don't" in a hedge about the conversation, not a fact about the speaker
_HEDGE = r"(?! (?:quite |really |entirely |totally )?(?:sure|certain|clear|know|understand|think|get|see|figure|mind)\b)"
_SELF_DENIAL = re.compile(
    r"\bI(?:'ve| have| had|'d| would| do| did|'m| am| was| will|'ll| can| could)?(?: really| actually| ever)?"
    rf" (?:never|not|no longer)\b{_HEDGE}"
    rf"|\bI (?:haven't|hadn't|don't|didn't|can't|cannot|won't|wasn't|wouldn't|couldn't|never)\b{_HEDGE}",
    re.IGNORECASE,
)


def denies_of_self(sentence: str) -> bool:
    """Whether ``sentence`` has its speaker deny something of themself."""
    return _SELF_DENIAL.search(sentence.replace("’", "'")) is not None
