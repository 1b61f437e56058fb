"""PII scrubbing with Presidio, before anything is embedded, stored or logged.

Contact and account identifiers (phones, e-mails, cards, IBANs, national ids, IPs...), secrets
(keys, tokens, passwords, PINs) and numbers a cue word names ("policy number ...") become typed
placeholders such as ``<PHONE_NUMBER>``, ``<SECRET>``, ``<ID_NUMBER>``. Person names and places are
kept on purpose: memory needs them. Presidio reuses the spaCy analysis the pipeline already made (no
second NLP pass). The recognizers are listed in :mod:`simplemem.processors.pii.recognizers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from presidio_analyzer import AnalyzerEngine, RecognizerRegistry, RecognizerResult
from presidio_analyzer.context_aware_enhancers import LemmaContextAwareEnhancer
from presidio_analyzer.nlp_engine import NlpArtifacts, SpacyNlpEngine
from presidio_anonymizer import AnonymizerEngine
from presidio_anonymizer.entities import OperatorConfig
from spacy.language import Language
from spacy.tokens import Doc

from simplemem.processors.pii.recognizers import REPLACED, chat_recognizers, possible_entities

# Characters without which a speaker name cannot be an e-mail address or a phone number.
CONTACT_MARKS = frozenset("@0123456789")


@dataclass(frozen=True)
class Scrubbed:
    text: str
    pii_types: list[str]


class PiiScrubber:
    def __init__(self, nlp: Language, entities: Sequence[str], score_threshold: float) -> None:
        engine = SpacyNlpEngine(models=[{"lang_code": "en", "model_name": nlp.meta.get("name", "en")}])
        engine.nlp = {"en": nlp}  # type: ignore[assignment]  # reuse the loaded pipeline
        self._engine = engine
        self._nlp = nlp
        registry = RecognizerRegistry(supported_languages=["en"])
        registry.load_predefined_recognizers(languages=["en"], nlp_engine=engine)
        for name in REPLACED:
            registry.remove_recognizer(name)
        for recognizer in chat_recognizers():
            registry.add_recognizer(recognizer)
        # Whole words: as substrings, the passport context word "us" would be found in "just".
        enhancer = LemmaContextAwareEnhancer(context_matching_mode="whole_word")
        self._analyzer = AnalyzerEngine(
            registry=registry, nlp_engine=engine, supported_languages=["en"], context_aware_enhancer=enhancer
        )
        self._anonymizer = AnonymizerEngine()
        self._entities = list(entities)
        self._threshold = score_threshold
        self._operators = {"DEFAULT": OperatorConfig("replace")}

    def scrub(self, text: str, doc: Doc | None = None) -> Scrubbed:
        """Replace every detected identifier in ``text``; ``doc`` is the spaCy analysis of ``text``."""
        if not text.strip():
            return Scrubbed(text, [])
        results = self._analyzer.analyze(
            text=text,
            language="en",
            entities=possible_entities(self._entities, text),
            score_threshold=self._threshold,
            nlp_artifacts=self._artifacts(doc if doc is not None else self._nlp(text)),
        )
        results = strongest_first(text, results)
        if not results:
            return Scrubbed(text, [])
        anonymized = self._anonymizer.anonymize(
            text=text,
            analyzer_results=results,  # type: ignore[arg-type]  # the two packages' result types are twins
            operators=self._operators,
        )
        return Scrubbed(anonymized.text, sorted({r.entity_type for r in results}))

    def scrub_speaker(self, speaker: str) -> Scrubbed:
        """A speaker named by an e-mail address or phone number becomes its placeholder; names stay."""
        if CONTACT_MARKS.isdisjoint(speaker):
            return Scrubbed(speaker, [])
        return self.scrub(speaker)

    def _artifacts(self, doc: Doc) -> NlpArtifacts:
        return LazyArtifacts(doc, self._engine)


class LazyArtifacts(NlpArtifacts):
    """Presidio's view of a spaCy doc, each part computed when a recognizer or the context enhancer
    first reads it. Most texts hold no candidate, and then nothing but the doc is read: building
    the lemmas, offsets and keywords of every token of every message was a tenth of the NLP thread.
    The pipeline runs without a lemmatizer: lower-cased words serve as lemmas for the context words
    ("passport", "card"), and the keywords the context search reads are built from them."""

    def __init__(self, doc: Doc, engine: SpacyNlpEngine) -> None:  # no super(): nothing eager
        self.tokens = doc
        self.nlp_engine = engine

    @cached_property
    def lemmas(self) -> list[str]:  # type: ignore[override]
        return [t.lower_ for t in self.tokens]

    @cached_property
    def tokens_indices(self) -> list[int]:  # type: ignore[override]
        return [t.idx for t in self.tokens]

    @cached_property
    def keywords(self) -> list[str]:  # type: ignore[override]
        return self.set_keywords(self.nlp_engine, self.lemmas, "en")

    @cached_property
    def _entities_and_scores(self) -> tuple[list[Any], list[float]]:
        engine = self.nlp_engine
        found = engine._get_entities(self.tokens)
        entities, scores = engine._get_updated_entities(found, engine._get_scores_for_entities(self.tokens))
        return entities, scores

    @property
    def entities(self) -> list[Any]:  # type: ignore[override]
        return self._entities_and_scores[0]

    @property
    def scores(self) -> list[float]:  # type: ignore[override]
        return self._entities_and_scores[1]


def strongest_first(text: str, results: Sequence[RecognizerResult]) -> list[RecognizerResult]:
    """Overlapping detections resolved by score, then length, so that the reported types are the
    placeholders written: "order number 1234567890" is an <ID_NUMBER> (its cue's reading, 0.85) and
    no <PHONE_NUMBER> (0.4 + context). Presidio's anonymizer would let a weaker detection that
    contains a stronger one win ("login: <SECRET>"); here what the weaker one covers beyond the
    stronger is replaced as a remnant ("login: <EMAIL_ADDRESS> / <SECRET>"), so nothing leaks."""
    kept: list[RecognizerResult] = []
    for r in sorted(results, key=lambda r: (-r.score, r.start - r.end, r.start)):
        pieces = _uncovered(r.start, r.end, kept)
        if pieces == [(r.start, r.end)]:
            kept.append(r)
            continue
        for start, end in pieces:  # a remnant, without the separators around it (" / ")
            while start < end and not text[start].isalnum():
                start += 1
            while end > start and not text[end - 1].isalnum():
                end -= 1
            if start < end:
                kept.append(RecognizerResult(r.entity_type, start, end, r.score))
    return sorted(kept, key=lambda r: r.start)


def _uncovered(start: int, end: int, kept: Sequence[RecognizerResult]) -> list[tuple[int, int]]:
    pieces = [(start, end)]
    for k in kept:
        pieces = [
            part
            for s, e in pieces
            for part in ((s, min(e, k.start)), (max(s, k.end), e))
            if part[0] < part[1]
        ]
    return pieces
