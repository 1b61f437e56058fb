"""One pass per message: spaCy, PII scrub, code split, sentence embeddings. Shared by every stage."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from spacy.language import Language

from processors.code_blocks import split_code
from processors.decompose import is_informative
from processors.embedding import Embedder
from processors.nlp import doc_entities, doc_sentences, pipe
from processors.pii import PiiScrubber
from schemas.events import ChatEvent
from schemas.window import AnalyzedMessage


class MessageAnalyzer:
    """Turns validated chat events into scrubbed, analysed messages, in batches."""

    def __init__(self, nlp: Language, scrubber: PiiScrubber, embedder: Embedder) -> None:
        self.nlp = nlp
        self.scrubber = scrubber
        self.embedder = embedder

    def analyze(self, events: Sequence[ChatEvent]) -> list[AnalyzedMessage]:
        if not events:
            return []
        raw_docs = pipe(self.nlp, (e.text for e in events))
        scrubbed = [self.scrubber.scrub(e.text, d) for e, d in zip(events, raw_docs, strict=True)]
        splits = [split_code(s.text) for s in scrubbed]
        # Re-analyse only the messages whose prose differs from what spaCy saw (PII or code removed).
        docs = list(raw_docs)
        changed = [i for i, (e, sp) in enumerate(zip(events, splits, strict=True)) if sp.prose != e.text]
        for i, doc in zip(changed, pipe(self.nlp, (splits[i].prose for i in changed)), strict=True):
            docs[i] = doc
        sentences = [
            [s.model_copy(update={"informative": is_informative(s, e.speaker)}) for s in doc_sentences(d)]
            for e, d in zip(events, docs, strict=True)
        ]
        # Only informative sentences are embedded: small talk and questions never become units, and
        # skipping them saves a third of the MiniLM time on chatty conversations.
        vectors = self.embedder.encode([s.text for sents in sentences for s in sents if s.informative])
        out: list[AnalyzedMessage] = []
        row = 0
        for event, scrub, split, doc, sents in zip(events, scrubbed, splits, docs, sentences, strict=True):
            with_vecs = []
            for s in sents:
                if s.informative:
                    s = s.model_copy(update={"embedding": vectors[row].tolist()})
                    row += 1
                with_vecs.append(s)
            sent_vecs = np.asarray([s.embedding for s in with_vecs if s.embedding], dtype=np.float32)
            out.append(
                AnalyzedMessage(
                    tenant_id=event.tenant_id,
                    session_id=event.session_id,
                    message_id=event.message_id,
                    speaker=event.speaker,
                    role=event.role,
                    ts=event.ts,
                    text=scrub.text,
                    pii_types=scrub.pii_types,
                    code_blocks=split.code_blocks,
                    prose=split.prose,
                    sentences=with_vecs,
                    entities=doc_entities(doc),
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
