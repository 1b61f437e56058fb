"""Which way a year-less date points: the tense of the clause that holds it, not of the whole sentence.

"The doctor said no coffee until July", said in May 2026, means July 2026: "said" dates the saying,
not the coffee. The rule, on the tagger's fine tags (no parser):
- the nearest finite verb before the expression decides (a past form -> past; "have/has" + past
  participle -> past; a modal or a present form -> not past); a past participle right after a noun or
  pronoun counts as a past form (the small tagger reads "the app shipped on Friday" so; "Noted, ..."
  is no verb of the clause), unless a verb that takes an object and a participle ("want", "need",
  "have", "get", "expect") comes right before that noun's phrase: then that verb decides ("Alicia
  wants the billing service migrated by April" is a deadline). Reporting verbs ("said", "told",
  "asked"...) end the search: what follows them is reported content with its own time;
- no finite verb before it (in the reported clause or the sentence): the nearest one after it
  decides ("In March, we moved");
- still none: a forward-facing word just before the expression ("until", "till", "by", "next")
  points forward; otherwise a reporting verb's own tense decides ("told me about it in July"), and
  a sentence with no verb at all is not past.
"next" always points forward, whatever the tense.
Limits: one clause is approximated by "between the nearest verbs"; a past verb of another clause
between the reporting verb and the date wins ("she said I missed it, so no coffee until July" reads
July as past).
"""

from __future__ import annotations

from simplemem.schemas.window import Token

REPORTING = frozenset(
    """say says said tell tells told ask asks asked mention mentions mentioned write writes wrote explain
    explains explained warn warns warned advise advises advised recommend recommends recommended suggest
    suggests suggested promise promises promised remind reminds reminded insist insists insisted""".split()
)
FORWARD_WORDS = frozenset({"until", "till", "til", "untill", "by", "next"})
ALWAYS_FORWARD = frozenset({"next"})
FINITE_TAGS = frozenset({"VBD", "VBZ", "VBP", "MD"})
SUBJECT_TAGS = frozenset({"NN", "NNS", "NNP", "NNPS", "PRP"})
# Verbs whose object a past participle completes ("wants the service migrated", "need it done",
# "had the car fixed"): the participle after that object is no past form.
COMPLEMENT_VERBS = frozenset(
    "want wants wanted need needs needed have has had get gets got expect expects expected".split()
)
NOUN_PHRASE_TAGS = SUBJECT_TAGS | {"DT", "PDT", "JJ", "JJR", "JJS", "PRP$", "POS", "CD"}
PERFECT_AUX = frozenset({"have", "has", "'ve", "’ve"})  # not "'s": "it's done" is passive


def _offsets(tokens: list[Token]) -> list[int]:
    starts, pos = [], 0
    for text, ws, *_ in tokens:
        starts.append(pos)
        pos += len(text) + len(ws)
    return starts


def _verb_is_past(tokens: list[Token], i: int) -> bool:
    text, _ws, _pos, tag, _ent = tokens[i]
    if tag == "VBD":
        return True
    if text.lower() in PERFECT_AUX:
        for nxt in tokens[i + 1 : i + 4]:
            if nxt.tag == "VBN":
                return True
            if nxt.tag not in ("RB", "RBR", "PRP"):
                break
    return False


# A particle follows only a verb ("kicks in", "runs out"): a noun tag before one is the small
# tagger's misreading of a present-tense phrasal verb ("the new pricing kicks in on june 1").
PARTICLE_VERB_TAGS = {"NNS": "VBZ", "NN": "VBP"}


def _tags(tokens: list[Token]) -> list[str]:
    """The tokens' fine tags, a noun before a particle (RP) read as the present verb it is."""
    tags = [t.tag for t in tokens]
    for i in range(len(tags) - 1):
        if tags[i + 1] == "RP" and tags[i] in PARTICLE_VERB_TAGS:
            tags[i] = PARTICLE_VERB_TAGS[tags[i]]
    return tags


def _complement_verb(words: list[str], tags: list[str], noun: int) -> int | None:
    """The index of a :data:`COMPLEMENT_VERBS` verb right before the noun phrase that ends at
    ``noun``, if there is one."""
    i = noun
    while i >= 0 and tags[i] in NOUN_PHRASE_TAGS:
        i -= 1
    return i if i >= 0 and words[i] in COMPLEMENT_VERBS else None


def past_at(tokens: list[Token], start: int) -> bool:
    """Whether a time expression starting at character ``start`` of the tokens' text (each token's
    text and trailing whitespace joined) is read in the past. See the module docstring."""
    starts = _offsets(tokens)
    first = next((i for i, s in enumerate(starts) if s >= start), len(tokens))
    words = [t.text.lower() for t in tokens]
    tags = _tags(tokens)
    if words[first : first + 1] and words[first] in ALWAYS_FORWARD:
        return False
    reporting: int | None = None
    for i in range(first - 1, -1, -1):
        if tags[i] not in FINITE_TAGS and tags[i] != "VBN":
            continue
        if words[i] in REPORTING:
            reporting = i
            break
        if tags[i] in FINITE_TAGS:
            return _verb_is_past(tokens, i)
        if i > 0 and tags[i - 1] in SUBJECT_TAGS:
            verb = _complement_verb(words, tags, i - 1)
            # "the app shipped": a simple past the tagger read as a participle
            return True if verb is None else _verb_is_past(tokens, verb)
    for i in range(first, len(tokens)):
        if tags[i] in FINITE_TAGS and words[i] not in REPORTING:
            return _verb_is_past(tokens, i)
    before = words[first - 1] if first > 0 else ""
    if before in FORWARD_WORDS or (first < len(words) and words[first] in FORWARD_WORDS):
        return False
    return reporting is not None and _verb_is_past(tokens, reporting)
