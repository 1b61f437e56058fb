"""Fine part-of-speech tags from a lexicon and rules, for text where spaCy's tagger costs too much.

spaCy's small model tags a word from a convolutional network over its neighbours (``tok2vec``): on
long assistant answers, which are most of an assistant history's words, that network was most
of the ingestion's NLP time. :func:`lexicon_tag` gives the same Penn Treebank tags from the
Brill-style tagger that TextBlob ships (Pattern's lexicon of 94,000 words with their usual tag,
suffix rules for unknown words and contextual rules), far cheaper, then writes them
in spaCy's conventions (punctuation classes, list markers, "'s") so that the stages that read tags
need no second path.

It agrees with spaCy's tagger on most tokens of assistant answers (``tests/test_lexicon_tags.py``
checks the cases it must get right). Where they differ, mostly a verb in its base form read as a
noun ("use", "share") and a capitalised heading word read as a common noun: a statement keeps its
words either way (BM25 finds it by them); its keywords and its verb agreement after a rewritten
"I"/"you" can differ.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from spacy.tokens import Doc, Token

# The tags spaCy's English tagger gives: anything else Pattern writes is mapped onto one of them.
SPACY_TAGS = frozenset(
    """$ '' , -LRB- -RRB- . : ADD AFX CC CD DT EX FW HYPH IN JJ JJR JJS LS MD NFP NN NNP NNPS NNS PDT POS
    PRP PRP$ RB RBR RBS RP SYM TO UH VB VBD VBG VBN VBP VBZ WDT WP WP$ WRB XX _SP ``""".split()
)
CURRENCY = frozenset("$£€¥₹")
# Pattern's punctuation tags in spaCy's names (spaCy splits brackets and quotes by side).
PUNCT_TAGS = {"(": "-LRB-", ")": "-RRB-", '"': "''", "SYM": "NFP"}
OPENING = frozenset("([{")
CLOSING = frozenset(")]}")
OPEN_QUOTES = frozenset('"“')
# Words after which "'s" is "is" or "has" (spaCy: VBZ), not a possessive (POS).
VERB_S_AFTER = frozenset("it he she that there here what who where how let".split())
# Subjects after which a verb's base form is present tense ("I recommend": VBP; Pattern says VB).
PLURAL_SUBJECTS = frozenset("i you we they".split())
Tagger = Callable[[list[str]], list[list[str]]]


@lru_cache(maxsize=1)
def _pattern_tagger() -> tuple[Tagger, Callable[[str], bool]]:
    """Pattern's tagger, and whether its lexicon knows a word."""
    from textblob.en import parser  # imported on first use: it loads a 94,000-word lexicon

    def find_tags(words: list[str]) -> list[list[str]]:
        return parser.find_tags(words)

    def known(word: str) -> bool:
        return parser.lexicon.get(word) is not None

    return find_tags, known


def _sentence_words(words: list[str], known: Callable[[str], bool]) -> list[str]:
    """The words as the tagger should read them: the sentence's first word lower-cased when the
    lexicon knows it so (a list item's "Book the shuttle" is a verb; Pattern only lower-cases a
    sentence's very first token, which is often a bullet)."""
    first = next((i for i, w in enumerate(words) if w[:1].isalpha()), None)
    if first is not None and words[first].istitle() and known(words[first].lower()):
        words = [*words[:first], words[first].lower(), *words[first + 1 :]]
    return words


def _spacy_tag(token: Token, tag: str, before: Token | None) -> str:
    """A Pattern tag in spaCy's convention for this token."""
    text = token.text
    if text in OPENING:
        return "-LRB-"
    if text in CLOSING:
        return "-RRB-"
    if text in OPEN_QUOTES:
        return "``" if before is None or before.whitespace_ or before.is_space else "''"
    if text == "-":
        return "HYPH" if before is not None and not before.whitespace_ else ":"
    if text.isdigit():
        return "LS" if _list_marker(token) else "CD"
    tag = tag.split("|")[0]  # an ambiguous lexicon entry ("NN|JJ"): its first reading
    if tag == "VB" and before is not None and before.lower_ in PLURAL_SUBJECTS:
        return "VBP"
    if tag == "POS" and text.lower() in ("'s", "’s") and before is not None:
        return "VBZ" if before.lower_ in VERB_S_AFTER else "POS"
    tag = PUNCT_TAGS.get(tag, tag)
    if tag in SPACY_TAGS:
        return tag
    if text in CURRENCY:
        return "$"
    return "NN" if any(c.isalnum() for c in text) else "NFP"


def _list_marker(token: Token) -> bool:
    """ "1" in "1. Book early" or "2)": the number that opens a line of a list."""
    doc = token.doc
    # spaCy keeps a line break in a whitespace token of its own
    at_line_start = token.i == 0 or (doc[token.i - 1].is_space and "\n" in doc[token.i - 1].text)
    after = doc[token.i + 1] if token.i + 1 < len(doc) else None
    return at_line_start and after is not None and after.text in (".", ")")


def lexicon_tag(doc: Doc) -> Doc:
    """Tag ``doc`` sentence by sentence (the contextual rules read a sentence from its start)."""
    find_tags, known = _pattern_tagger()
    for sent in doc.sents:
        words = [t for t in sent if not t.is_space]
        before: Token | None = None
        tagged = find_tags(_sentence_words([t.text for t in words], known))
        for token, (_word, tag) in zip(words, tagged, strict=True):
            token.tag_ = _spacy_tag(token, tag, before)
            before = token
        for token in sent:
            if token.is_space:
                token.tag_ = "_SP"
    return doc
