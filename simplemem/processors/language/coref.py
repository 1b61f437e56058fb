"""Third-person coreference across the messages of a window: "he", "she" and their forms become the
most recent compatible person (or pet) named before them.

"My sister Ines is coming over" ... "Ines got here last night." / "She brought me a bowl" is stored
as "Ines brought Sam a bowl". The rule, on tags and entities the analysis pass already produced:
- who is named: the NER model's persons (but for one right after "the", "in", "at"...: "in
  Rotterdam", "the Kunsthal" are places the small model tags as persons; and but for capitalised
  words the tagger still reads as common nouns: "Lisinopril 10 mg"); a capitalised word or proper
  noun right after a relation word ("my cousin Tomas", "Mrs. Chen", "dr. okafor") or a pet word
  ("our dog Biscuit"), or after one and a linking verb ("our babysitter is kayla"), which the small
  NER model often misses; a lower-case proper noun opening a clause before its verb ("priti set up
  the db", "pepper is thrilled": chat is often written in lower case, and the model then misses the
  name or calls it an organisation); and any word equal to a name already seen in the window (NER
  labels change from one sentence to the next: "Tomas landed at noon" is about the Tomas of "my
  cousin Tomas"); and a lower-case word that the tenant's memory holds as a person's name ("we owe
  kenji a dinner", weeks after "my friend Kenji": ``tenant_names``, read by the pipeline). A
  relation word is never the name ("physio changed too");
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
pronoun is not learned; lower-case names are recognised only as a clause's proper-noun subject,
after a relation word, when seen before in the window or when the tenant's memory holds them; a
lower-case town or company opening a clause ("reno loves it") counts as a name unless the NER model
called it a place; a lower-case noun right after a pet word is no name ("my cat biscuit", as "my cat
tree"), and pets are not among a memory's persons, so the memory does not know them later; "they"
is never resolved (plural or unknown).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from simplemem.schemas.window import Sentence, Token

FEMALE_WORDS = frozenset(
    """sister sis mother mom mum mommy mama wife daughter aunt auntie niece girlfriend grandma granny
    grandmother granddaughter nana stepmother stepsister stepdaughter fiancee fiancée bride wifey lady woman
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
    tutor nurse mentor classmate teammate assistant spouse sibling parent physio physiotherapist gp vet
    surgeon pharmacist babysitter nanny sitter""".split()
)
PET_WORDS = frozenset("dog puppy pup cat kitten horse pony parrot bird hamster rabbit bunny".split())
FEMALE_PRONOUNS = frozenset({"she", "her", "hers", "herself"})
MALE_PRONOUNS = frozenset({"he", "him", "his", "himself"})
NAME_TAGS = frozenset({"NNP", "NNPS"})
# A "person" right after these is a place or a thing the NER model mislabelled ("in Rotterdam",
# "the Kunsthal").
NOT_BEFORE_A_PERSON = frozenset({"the", "in", "at", "near", "inside", "into"})
MIN_NAME_PART = 3  # a shorter part of a name ("de" in "de Vries") is no name on its own
COMMON_NOUN_TAGS = frozenset({"NN", "NNS"})
# Tags the small tagger gives a lower-case name it does not know: a noun, an adjective, a foreign
# word, even a pronoun ("take kenji/PRP out"); never a verb, modal or function word, so "will" and
# "may" as verbs stay words even in a tenant with a Will or a May.
UNKNOWN_WORD_TAGS = NAME_TAGS | COMMON_NOUN_TAGS | {"JJ", "FW", "PRP"}
PERSONAL_PRONOUNS = frozenset(
    "i me you he him she her it we us they them myself yourself himself herself itself ourselves themselves".split()
)
DETERMINER_TAGS = frozenset({"DT", "PRP$", "WP$", "PDT"})
LINKING_VERBS = frozenset({"is", "was", "'s", "’s"})
# Tags of the token before a clause's subject: the sentence start, punctuation, a conjunction, an
# adverb or an interjection ("yeah. priti set up the db", "also pepper is thrilled").
CLAUSE_OPENER_TAGS = frozenset({".", ",", ":", "CC", "RB", "UH"})
# What a relation word's name may be tagged ("my cousin Tomas", "our babysitter is kayla").
CUED_NAME_TAGS = NAME_TAGS | {"NN"}


def pronoun_gender(word: str) -> str | None:
    low = word.lower()
    return "female" if low in FEMALE_PRONOUNS else "male" if low in MALE_PRONOUNS else None


def _cue_gender(word: str) -> str | None:
    low = word.lower()
    return "female" if low in FEMALE_WORDS else "male" if low in MALE_WORDS else None


def _is_cue(word: str) -> bool:
    low = word.lower()
    return low in FEMALE_WORDS or low in MALE_WORDS or low in RELATION_WORDS or low in PET_WORDS


def cue_before(tokens: list[Token], i: int) -> str | None:
    """The relation, title or pet word that introduces the name at ``i``: right before it ("my
    cousin Tomas", "Mrs. Chen", "dr. okafor" split at its dot) or before a linking verb ("our
    babysitter is kayla"; then a lower-case noun counts as the name, since a role word is rarely
    equated with a common noun)."""
    if i > 0 and _is_cue(tokens[i - 1][0]):
        return tokens[i - 1][0]
    if i > 1 and tokens[i - 1][0] == "." and _is_cue(tokens[i - 2][0] + "."):  # "dr. okafor", split
        return tokens[i - 2][0] + "."
    if i > 1 and tokens[i - 1][0].lower() in LINKING_VERBS and _is_cue(tokens[i - 2][0]):
        return tokens[i - 2][0]
    return None


def _looks_like_name(token: Token) -> bool:
    text = token.text
    return (text[:1].isupper() or token.tag in NAME_TAGS) and text.isalpha() and len(text) > 1


def _capitalised_common_noun(tokens: list[Token], start: int, name: str) -> bool:
    """A "person" span whose capitalised words the tagger still reads as common nouns or verbs: the
    tagger saw the capital and decided against a name ("Lisinopril 10 mg once daily", a list item's
    "Captures the power of nature", which otherwise became the "her" of the next answer). A
    lower-case name tagged as a noun stays a person (chat is often written in lower case)."""
    span = tokens[start : start + len(name.split())]
    return all(t.text[:1].isupper() and (t.tag in COMMON_NOUN_TAGS or t.tag.startswith("VB")) for t in span)


def bare_subject(tokens: list[Token], i: int) -> bool:
    """A lower-case proper noun that opens a clause right before its verb ("pepper is thrilled",
    "priti set up the db"): a name written in lower case, which the NER model misses or labels an
    organisation. Not a date, place or other entity the model named, nor a role word ("physio
    changed too": the caller skips those). A capitalised word is left to the NER model, which had
    the capital to go on ("Lumacore provides the map tiles")."""
    text, _ws, _pos, tag, ent = tokens[i]
    if tag not in NAME_TAGS or not text.islower() or len(text) < MIN_NAME_PART or i + 1 >= len(tokens):
        return False
    if ent[2:] not in ("", "PERSON", "ORG"):
        return False
    verb = tokens[i + 1][3]
    if not (verb.startswith("VB") or verb == "MD"):
        return False
    return i == 0 or tokens[i - 1][3] in CLAUSE_OPENER_TAGS


def _unknown_name_word(token: Token) -> bool:
    """A lower-case word the tagger may have given a name it does not know: letters only, as long
    as a name part, tagged as a noun, adjective, foreign word or pronoun but no personal pronoun."""
    text, tag = token.text, token.tag
    return (
        tag in UNKNOWN_WORD_TAGS
        and text.isalpha()
        and text.islower()
        and len(text) >= MIN_NAME_PART
        and text not in PERSONAL_PRONOUNS
    )


def tenant_name(tokens: list[Token], i: int, names: frozenset[str]) -> bool:
    """A lower-case noun or proper noun that the tenant's memory holds as a name ("kenji", named in
    an earlier session), not after a determiner ("the support team"). A capitalised word is left to
    the NER model, as in :func:`bare_subject` (and the memory's names hold its mistakes: "Aww")."""
    return (
        _unknown_name_word(tokens[i])
        and tokens[i][0] in names
        and (i == 0 or tokens[i - 1][3] not in DETERMINER_TAGS)
    )


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


def taken_persons(tokens: list[Token]) -> list[tuple[int, str]]:
    """The NER model's person spans (:func:`ner_persons`) that are taken as persons: not after a
    word that puts a place or thing there ("the", "in"), not capitalised words the tagger reads as
    common nouns or verbs."""
    return [
        (i, name)
        for i, name in ner_persons(tokens)
        if (i == 0 or tokens[i - 1][0].lower() not in NOT_BEFORE_A_PERSON)
        and not _capitalised_common_noun(tokens, i, name)
    ]


def name_words(sentences: Iterable[Iterable[Sentence]]) -> set[str]:
    """Words of the messages' sentences that could be a name the tenant's memory holds: what
    :func:`tenant_name` asks the memory about."""
    return {
        t.text
        for message in sentences
        for sentence in message
        for t in sentence.tokens
        if _unknown_name_word(t)
    }


@dataclass
class Mention:
    """A name at (sentence, token). ``listed``: whether the statement lists it among its persons: not
    a pet, nor a word taken for a name only because the tenant's memory holds it (a greeting's
    "hey caroline" is no person the statement is about; it still counts as a referent)."""

    sentence: int
    token: int
    name: str
    listed: bool = True


@dataclass
class PeopleTracker:
    """The persons (and pets) named so far in a window, in order, with the genders stated for them."""

    mentions: list[Mention] = field(default_factory=list)
    genders: dict[str, str] = field(default_factory=dict)
    sentences: int = 0
    tenant_names: frozenset[str] = frozenset()  # lower-cased names the tenant's memory holds

    _known: dict[str, str] = field(default_factory=dict, init=False)  # known(), kept as mentions come

    def __post_init__(self) -> None:
        given, self.mentions = self.mentions, []
        self._remember(given)

    def known(self) -> dict[str, str]:
        """Each known name's words (lower-cased) -> the full name they stand for (the first name
        mentioned that has the word)."""
        return self._known

    def _remember(self, mentions: list[Mention]) -> None:
        self.mentions.extend(mentions)
        for m in mentions:
            for part in m.name.split():
                if len(part) >= MIN_NAME_PART:
                    self._known.setdefault(part.lower(), m.name)
            self._known.setdefault(m.name.lower(), m.name)

    def observe(self, tokens: list[Token]) -> tuple[int, list[Mention]]:
        """Record the names of one sentence; return its number and its mentions."""
        number = self.sentences
        self.sentences += 1
        found: dict[int, Mention] = {i: Mention(number, i, name) for i, name in taken_persons(tokens)}
        known = self.known()
        covered = {i + k for i, m in found.items() for k in range(len(m.name.split()))}
        for i, token in enumerate(tokens):
            if i in covered:
                continue
            if _looks_like_name(token) and token.text.lower() in known:
                found[i] = Mention(number, i, known[token.text.lower()])
            elif _is_cue(token.text):
                continue  # "my gp is dr. halvorsen": the title is not the name
            elif (
                token.tag in CUED_NAME_TAGS
                and (cue := cue_before(tokens, i))
                and (_looks_like_name(token) or cue != tokens[i - 1][0])
            ):
                found[i] = Mention(number, i, token.text, listed=cue.lower() not in PET_WORDS)
            elif _looks_like_name(token) and bare_subject(tokens, i):
                found[i] = Mention(number, i, token.text)
            elif tenant_name(tokens, i, self.tenant_names):
                found[i] = Mention(number, i, token.text, listed=False)
        for i, mention in found.items():
            gender = _cue_gender(cue_before(tokens, i) or "")
            if gender:
                self.genders.setdefault(mention.name, gender)
        ordered = [found[i] for i in sorted(found)]
        self._remember(ordered)
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
