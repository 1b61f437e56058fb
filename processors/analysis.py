"""One pass per message: spaCy, PII scrub, code split, sentence embeddings. Shared by every stage."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from spacy.language import Language

from processors.code_blocks import split_code
from processors.decompose import is_informative
from processors.embedding import Embedder
from processors.nlp import doc_entities, doc_sentences, pipe
from processors.pii import PiiScrubber
from schemas.events import ChatEvent
from schemas.window import AnalyzedMessage, Sentence


@dataclass
class PreparedMessage:
    event: ChatEvent
    text: str
    pii_types: list[str]
    code_blocks: list[str]
    prose: str
    sentences: list[Sentence]
    entities: list[str]


class MessageAnalyzer:
    """Turns validated chat events into scrubbed, analysed messages, in batches."""

    def __init__(self, nlp: Language, scrubber: PiiScrubber, embedder: Embedder) -> None:
        self.nlp = nlp
        self.scrubber = scrubber
        self.embedder = embedder

    def analyze(self, events: Sequence[ChatEvent]) -> list[AnalyzedMessage]:
        return self.embed(self.prepare(events))

    def prepare(self, events: Sequence[ChatEvent]) -> list[PreparedMessage]:
        """The NLP half (spaCy, PII, code split, statement flags): runs beside :meth:`embed`."""
        raw_docs = pipe(self.nlp, (e.text for e in events))
        scrubbed = [self.scrubber.scrub(e.text, d) for e, d in zip(events, raw_docs, strict=True)]
        splits = [split_code(s.text) for s in scrubbed]
        # Re-analyse only the messages whose prose differs from what spaCy saw (PII or code removed).
        docs = list(raw_docs)
        changed = [i for i, (e, sp) in enumerate(zip(events, splits, strict=True)) if sp.prose != e.text]
        for i, doc in zip(changed, pipe(self.nlp, (splits[i].prose for i in changed)), strict=True):
            docs[i] = doc
        prepared = []
        for event, scrub, split, doc in zip(events, scrubbed, splits, docs, strict=True):
            sentences = [
                s.model_copy(update={"informative": is_informative(s, event.speaker)})
                for s in doc_sentences(doc)
            ]
            prepared.append(
                PreparedMessage(
                    event,
                    scrub.text,
                    scrub.pii_types,
                    split.code_blocks,
                    split.prose,
                    sentences,
                    doc_entities(doc),
                )
            )
        return prepared

    def embed(self, prepared: Sequence[PreparedMessage]) -> list[AnalyzedMessage]:
        """The MiniLM half: one batch over the informative sentences of all messages."""
        # Small talk and questions never become units: skipping them saves a third of the MiniLM time.
        vectors = self.embedder.encode([s.text for p in prepared for s in p.sentences if s.informative])
        out: list[AnalyzedMessage] = []
        row = 0
        for p in prepared:
            with_vecs = []
            for s in p.sentences:
                if s.informative:
                    s.embedding = vectors[row].tolist()
                    row += 1
                with_vecs.append(s)
            sent_vecs = np.asarray([s.embedding for s in with_vecs if s.embedding], dtype=np.float32)
            e = p.event
            out.append(
                AnalyzedMessage(
                    tenant_id=e.tenant_id,
                    session_id=e.session_id,
                    message_id=e.message_id,
                    speaker=e.speaker,
                    role=e.role,
                    ts=e.ts,
                    text=p.text,
                    pii_types=p.pii_types,
                    code_blocks=p.code_blocks,
                    prose=p.prose,
                    sentences=with_vecs,
                    entities=p.entities,
                    embedding=_mean(sent_vecs),
                )
            )
        return out


def _mean(vectors: np.ndarray) -> list[float]:
    if len(vectors) == 0:
        return []
    m = vectors.mean(axis=0)
    norm = float(np.linalg.norm(m))
    return (m / norm).tolist() if norm else m.tolist()
