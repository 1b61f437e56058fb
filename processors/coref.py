"""Third-person coreference across the messages of a window: "he", "she" and their forms become the
most recent compatible person (or pet) named before them.

"My sister Ines is coming over" ... "Ines got here last night." / "She brought me a bowl" is stored
as "Ines brought Sam a bowl". The rule, on tags and entities the analysis pass already produced:
- who is named: the NER model's persons (but for one right after "the", "in", "at"...: "in
  Rotterdam", "the Kunsthal" are places the small model tags as persons); a capitalised word or proper noun right after a relation
  word ("my cousin Tomas", "Mrs. Chen") or a pet word ("our dog Biscuit"), which the small NER model
  often misses; and any word equal to a name already seen in the window (NER labels change from one
  sentence to the next: "Tomas landed at noon" is about the Tomas of "my cousin Tomas");
- gender is known only from a relation or title word next to the name ("my sister Ines", "Mr. Ruiz";
  "sister"/"mother"/"Mrs."..., "brother"/"father"/"Mr."...), never guessed from the name itself;
- "she/her/hers/herself" resolve to the most recent person named before the pronoun (earlier in the
  window, which starts with the previous window's tail, or earlier in the sentence) whose gender is
  female or unknown, "he/him/his/himself" likewise; the speaker and the addressee are never the
  referent ("I" and "you" already name them);
- ambiguity leaves the pronoun as written: when the most recent sentence naming a compatible person
  names several ("Tom and Jerry went out. He came back.") and not exactly one of them has the
  pronoun's known gender.
Limits: no syntax (a subject is not preferred over an object); a gender stated only through a
pronoun is not learned; lower-case names are recognised only when the tagger marks them as proper
nouns or they were seen before; "they" is never resolved (plural or unknown).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from schemas.window import Token

FEMALE_WORDS = frozenset(
    """sister sis mother mom mum mommy mama wife daughter aunt auntie niece girlfriend grandma granny
    grandmother granddaughter stepmother stepsister stepdaughter fiancee fiancée bride wifey lady woman
    girl mrs mrs. ms ms. miss madam queen""".split()
)
MALE_WORDS = frozenset(
    """brother bro father dad daddy papa husband son uncle nephew boyfriend grandpa grandad granddad
    grandfather grandson stepfather stepbrother stepson fiance groom gentleman man guy boy mr mr. sir
    king""".split()
)
RELATION_WORDS = frozenset(
    """cousin friend boss colleague coworker co-worker neighbor neighbour partner manager teacher doctor
    dr dr. dentist roommate flatmate buddy mate kid child baby landlord landlady client therapist coach
    tutor nurse mentor classmate teammate assistant spouse sibling parent""".split()
)
PET_WORDS = frozenset("dog puppy pup cat kitten horse pony parrot bird hamster rabbit bunny".split())
FEMALE_PRONOUNS = frozenset({"she", "her", "hers", "herself"})
MALE_PRONOUNS = frozenset({"he", "him", "his", "himself"})
NAME_TAGS = frozenset({"NNP", "NNPS"})
# A "person" right after these is a place or a thing the NER model mislabelled ("in Rotterdam",
# "the Kunsthal").
NOT_BEFORE_A_PERSON = frozenset({"the", "in", "at", "near", "inside", "into"})
MIN_NAME_PART = 3  # a shorter part of a name ("de" in "de Vries") is no name on its own


def pronoun_gender(word: str) -> str | None:
    low = word.lower()
    return "female" if low in FEMALE_PRONOUNS else "male" if low in MALE_PRONOUNS else None


def _cue_gender(word: str) -> str | None:
    low = word.lower()
    return "female" if low in FEMALE_WORDS else "male" if low in MALE_WORDS else None


def _is_cue(word: str) -> bool:
    low = word.lower()
    return low in FEMALE_WORDS or low in MALE_WORDS or low in RELATION_WORDS or low in PET_WORDS


def _looks_like_name(token: Token) -> bool:
    text = token[0]
    return (text[:1].isupper() or token[3] in NAME_TAGS) and text.isalpha() and len(text) > 1


def ner_persons(tokens: list[Token]) -> list[tuple[int, str]]:
    """Person spans the NER model tagged, as (first token index, name without a possessive)."""
    spans: list[tuple[int, str]] = []
    start = -1
    current: list[str] = []
    for i, (text, ws, _pos, _tag, ent) in enumerate(tokens):
        if ent.endswith("-PERSON"):
            if ent.startswith("B-") and current:
                spans.append((start, "".join(current).strip()))
                current = []
            if not current:
                start = i
            current.append(text + ws)
        elif current:
            spans.append((start, "".join(current).strip()))
            current = []
    if current:
        spans.append((start, "".join(current).strip()))
    return [(i, re.sub(r"['’]s$", "", n).strip()) for i, n in spans if n]


@dataclass
class Mention:
    sentence: int
    token: int
    name: str
    person: bool = True


@dataclass
class PeopleTracker:
    """The persons (and pets) named so far in a window, in order, with the genders stated for them."""

    mentions: list[Mention] = field(default_factory=list)
    genders: dict[str, str] = field(default_factory=dict)
    sentences: int = 0

    def known(self) -> dict[str, str]:
        """Each known name's words (lower-cased) -> the full name they stand for."""
        words: dict[str, str] = {}
        for m in self.mentions:
            for part in m.name.split():
                if len(part) >= MIN_NAME_PART:
                    words.setdefault(part.lower(), m.name)
            words.setdefault(m.name.lower(), m.name)
        return words

    def observe(self, tokens: list[Token]) -> tuple[int, list[Mention]]:
        """Record the names of one sentence; return its number and its mentions."""
        number = self.sentences
        self.sentences += 1
        found: dict[int, Mention] = {
            i: Mention(number, i, name)
            for i, name in ner_persons(tokens)
            if i == 0 or tokens[i - 1][0].lower() not in NOT_BEFORE_A_PERSON
        }
        known = self.known()
        covered = {i + k for i, m in found.items() for k in range(len(m.name.split()))}
        for i, token in enumerate(tokens):
            if i in covered or not _looks_like_name(token):
                continue
            previous = tokens[i - 1][0] if i > 0 else ""
            if token[0].lower() in known and (token[0][:1].isupper() or token[3] in NAME_TAGS):
                found[i] = Mention(number, i, known[token[0].lower()])
            elif previous and _is_cue(previous) and token[3] in NAME_TAGS | {"NN"}:
                found[i] = Mention(number, i, token[0], person=previous.lower() not in PET_WORDS)
        for i, mention in found.items():
            cue = tokens[i - 1][0] if i > 0 else ""
            gender = _cue_gender(cue)
            if gender:
                self.genders.setdefault(mention.name, gender)
        ordered = [found[i] for i in sorted(found)]
        self.mentions.extend(ordered)
        return number, ordered

    def referent(self, gender: str, sentence: int, token: int, exclude: set[str]) -> str | None:
        """The most recent compatible name before (sentence, token); None when there is none or it is
        ambiguous (see the module docstring)."""
        excluded = {e.lower() for e in exclude if e} | {e.split()[0].lower() for e in exclude if e}
        compatible = [
            m
            for m in self.mentions
            if (m.sentence, m.token) < (sentence, token)
            and m.name.lower() not in excluded
            and m.name.split()[0].lower() not in excluded
            and self.genders.get(m.name, gender) == gender
        ]
        if not compatible:
            return None
        last = compatible[-1].sentence
        names = list(dict.fromkeys(m.name for m in compatible if m.sentence == last))
        if len(names) == 1:
            return names[0]
        sure = [n for n in names if self.genders.get(n) == gender]
        return sure[0] if len(sure) == 1 else None
