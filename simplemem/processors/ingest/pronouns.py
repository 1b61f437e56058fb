"""Pronouns rewritten as names, for a memory read alone: "I" is the speaker, "you" the addressee, "he"/"she"
the person the statement's referent rule finds (:mod:`simplemem.processors.language.coref`); the verb after
a rewritten subject agrees with it ("I have" -> "Jordan has") and a contraction on it is spelled out."""

from __future__ import annotations

import re
from collections.abc import Callable

from simplemem.processors.language.coref import pronoun_gender
from simplemem.schemas.window import Token

FIRST_PERSON = {"i", "me", "myself"}
FIRST_POSSESSIVE = {"my", "mine"}
SECOND_PERSON = {"you", "yourself"}
SECOND_POSSESSIVE = {"your", "yours"}
THIRD_SUBJECT = {"he", "she", "him", "himself", "herself"}
THIRD_POSSESSIVE = {"his", "hers"}
# "you" in these fixed phrases is not the addressee.
GENERIC_YOU = re.compile(
    r"\b(you know|thank you|see you|you too|you never know|if you ask me|mind you)\b", re.I
)
# A contraction on a rewritten pronoun, spelled out for a third-person singular name.
CONTRACTIONS = {"'m": "is", "'ve": "has", "'re": "is", "'ll": "will", "'s": "is"}
PERFECT_AFTER_S = frozenset({"been", "got", "gotten", "had"})  # "she's been": "has", not "is"
IRREGULAR_3RD = {"am": "is", "are": "is", "have": "has", "do": "does", "'m": "is", "'re": "is", "'ve": "has"}


# a referent rule: (gender, token index) -> the name a third-person pronoun there stands for
ReferentAt = Callable[[str, int], str | None]


def third_person(verb: str) -> str:
    """English present-tense agreement for a verb after a rewritten "I"/"you" subject."""
    low = verb.lower()
    if low in IRREGULAR_3RD:
        return IRREGULAR_3RD[low]
    if low.endswith(("s", "sh", "ch", "x", "z", "o")):
        return verb + "es"
    if len(low) > 1 and low.endswith("y") and low[-2] not in "aeiou":
        return verb[:-1] + "ies"
    return verb + "s"


def _spelled_out(clitic: str, following: Token | None) -> str:
    """A contraction after a name: "'d" is "had" before a past participle, else "would"."""
    if clitic == "'d":
        return "had" if following is not None and following[3] == "VBN" else "would"
    if clitic == "'s" and following is not None and following[0].lower() in PERFECT_AFTER_S:
        return "has"
    return CONTRACTIONS[clitic]


def _possessive_mine(tokens: list[Token], i: int) -> bool:
    """Whether "mine" tagged as a noun is the pronoun ("The blue car is mine."; the lexicon tags
    every "mine" a noun), not the noun ("an abandoned mine shaft", "a gold mine")."""
    if tokens[i][0].lower() != "mine":
        return False
    before = tokens[i - 1][3] if i else ""
    after = tokens[i + 1][3] if i + 1 < len(tokens) else ""
    noun_phrase = ("DT", "JJ", "NN", "PRP$", "VBN", "CD")
    return not before.startswith(noun_phrase) and not after.startswith(("NN", "JJ"))


# Verbs whose object is followed by a bare infinitive ("help you organize", "let you know").
OBJECT_THEN_BARE_VERB = frozenset(
    "help helps helped helping let lets letting make makes made making watch watches hear hears".split()
)


def rewrite_pronouns(
    tokens: list[Token],
    text: str,
    speaker: str,
    addressee: str | None,
    referent: ReferentAt | None = None,
) -> tuple[str, list[str]]:
    """Replace first/second/third person pronouns with names; return the text and the names used."""
    generic_you = bool(GENERIC_YOU.search(text))
    out: list[str] = []
    used: list[str] = []
    agree_next = False
    replaced_before = False
    for i, (word, ws, _pos, tag, _ent) in enumerate(tokens):
        low = word.lower().replace("’", "'")
        if replaced_before and (low in CONTRACTIONS or low == "'d"):
            following = next((t for t in tokens[i + 1 :] if t.tag not in ("RB", "RBR", "RBS")), None)
            out[-1] = out[-1].rstrip() + " "
            out.append(_spelled_out(low, following) + ws)
            agree_next = replaced_before = False
            continue
        replacement: str | None = None
        subject = False
        gender = pronoun_gender(low)
        if tag in ("PRP", "PRP$") or low == "my" or _possessive_mine(tokens, i):
            if low in FIRST_PERSON:
                replacement, subject = speaker, low == "i"
            elif low in FIRST_POSSESSIVE:
                replacement = f"{speaker}'s"
            elif addressee and not generic_you and low in SECOND_PERSON:
                nxt = tokens[i + 1][3] if i + 1 < len(tokens) else ""
                # after "help", "let"... or a modal, "you" is no subject the next verb agrees with
                # ("can help you organize", "Could you please tell"): nothing to conjugate then
                before = tokens[i - 1] if i else None
                bare_verb_next = before is not None and (
                    before[3] == "MD" or before[0].lower() in OBJECT_THEN_BARE_VERB
                )
                subject = (nxt in ("VBP", "MD", "RB") or (low == "you" and i == 0)) and not bare_verb_next
                replacement = addressee
            elif addressee and not generic_you and low in SECOND_POSSESSIVE:
                replacement = f"{addressee}'s"
            elif gender and referent is not None:
                name = referent(gender, i)
                if name and (low in THIRD_SUBJECT or (low == "her" and tag == "PRP")):
                    replacement = name
                elif name and (low in THIRD_POSSESSIVE or (low == "her" and tag == "PRP$")):
                    replacement = f"{name}'s"
        replaced_before = replacement is not None
        if replacement is not None:
            used.append(replacement.removesuffix("'s"))
            out.append(replacement + ws)
            agree_next = subject
            continue
        if agree_next:
            if tag == "VBP":
                out.append(third_person(word) + ws)
                agree_next = False
                continue
            if tag not in ("RB",):
                agree_next = False
        out.append(word + ws)
    rewritten = "".join(out).strip()
    return rewritten, unique_names(used)


def unique_names(items: list[str]) -> list[str]:
    """The non-empty items once each, case-insensitively, in their first order."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.lower()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out
