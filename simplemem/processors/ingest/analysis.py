"""One pass per message: spaCy, PII scrub, code split, sentence embeddings. Shared by every stage.

The work has two halves: :class:`NlpPreparer` (spaCy, Presidio, code split, statement flags) gives an
:class:`AnalyzedMessage` without vectors (already scrubbed: it may travel on a topic), and
:meth:`MessageAnalyzer.embed` (MiniLM) fills the vectors in. In a batch run the first half runs on a
helper thread for the next batch while the second embeds the current one (``simplemem ingest``: in
a child process, :mod:`simplemem.processors.ingest.nlp_process`); in the streams they are two
agents.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from spacy.language import Language
from spacy.tokens import Doc

from simplemem.processors.ingest.decompose import is_informative
from simplemem.processors.ingest.embedding import Embedder, unit_mean
from simplemem.processors.language.code_blocks import CodeSplit, split_code
from simplemem.processors.language.lexicon_tags import lexicon_tag
from simplemem.processors.language.nlp import doc_entities, doc_sentences, pipe
from simplemem.processors.language.repetition import compress_repetition
from simplemem.processors.language.structure import plain
from simplemem.processors.pii.scrubber import PiiScrubber
from simplemem.schemas.events import ChatEvent, Role
from simplemem.schemas.window import AnalyzedMessage

# What a long assistant answer is analysed without: the network under the tagger (tags come from
# :func:`lexicon_tag` instead) and the entity recognizer.
LIGHT_COMPONENTS = ("tok2vec", "tagger", "ner")


class NlpPreparer:
    """The NLP half, in-process.

    A long assistant answer (over ``long_answer_chars``, the length from which it has one vector:
    ``assistant_vector_chars``) is analysed without spaCy's network: no entity recognizer (most of
    spaCy's time on such answers) and tags from a lexicon tagger
    (:func:`~simplemem.processors.language.lexicon_tags.lexicon_tag`) instead of the network under
    spaCy's tagger, which was most of what remained. Long answers are most of an assistant history's
    characters, so this is most of ingestion's time and memory, for the same recall. What NER would add there goes unused or
    nearly: those statements are found by their words, the PII recognizers are patterns and cue
    words, and the tags still mark proper nouns (entity novelty counts them). The user's messages
    and short answers keep the whole pipeline: persons, places and named things of what the user
    says are what the person filter and pronouns build on. Limits: a person the assistant names in
    a long answer is not in that statement's persons; about one word in six gets another tag than
    spaCy's would give it (keywords and verb agreement may differ, the words do not)."""

    def __init__(self, nlp: Language, scrubber: PiiScrubber, long_answer_chars: int = 0) -> None:
        self.nlp = nlp
        self.scrubber = scrubber
        self.long_answer_chars = long_answer_chars

    def _analyse(self, texts: Sequence[str], roles: Sequence[Role]) -> list[Doc]:
        """spaCy over ``texts``: the long answers among them without the entity recognizer."""
        limit = self.long_answer_chars
        long = [
            bool(limit) and r == Role.ASSISTANT and len(t) > limit for t, r in zip(texts, roles, strict=True)
        ]
        docs: list[Doc | None] = [None] * len(texts)
        for light in (False, True):
            rows = [i for i, is_long in enumerate(long) if is_long == light]
            exclude = LIGHT_COMPONENTS if light else ()
            for i, doc in zip(rows, pipe(self.nlp, (texts[i] for i in rows), disable=exclude), strict=True):
                docs[i] = lexicon_tag(doc) if light else doc
        return [d for d in docs if d is not None]

    def prepare(self, events: Sequence[ChatEvent]) -> list[AnalyzedMessage]:
        """Scrubbed and analysed messages, without vectors; the raw text goes no further."""
        compressed = [compress_repetition(e.text) for e in events]
        texts = [_plain_unless_code(c.text) for c in compressed]
        raw_docs = self._analyse(texts, [e.role for e in events])
        scrubbed = [self.scrubber.scrub(t, d) for t, d in zip(texts, raw_docs, strict=True)]
        # A speaker may be named by an e-mail address or phone number; it travels with every
        # statement, the names table and the query context, so it is scrubbed too (once per name).
        speakers = {name: self.scrubber.scrub_speaker(name) for name in {e.speaker for e in events}}
        splits = [_plain_prose(split_code(s.text)) for s in scrubbed]
        # Re-analyse only the messages whose prose differs from what spaCy saw (PII or code removed).
        docs = list(raw_docs)
        changed = [i for i, (t, sp) in enumerate(zip(texts, splits, strict=True)) if sp.prose != t]
        again = self._analyse([splits[i].prose for i in changed], [events[i].role for i in changed])
        for i, doc in zip(changed, again, strict=True):
            docs[i] = doc
        prepared = []
        for event, scrub, split, doc, squeezed in zip(
            events, scrubbed, splits, docs, compressed, strict=True
        ):
            speaker = speakers[event.speaker]
            sentences = doc_sentences(doc)
            for s in sentences:
                s.informative = is_informative(s, speaker.text, event.role)
            prepared.append(
                AnalyzedMessage(
                    tenant_id=event.tenant_id,
                    session_id=event.session_id,
                    message_id=event.message_id,
                    speaker=speaker.text,
                    role=event.role,
                    ts=event.ts,
                    text=scrub.text,
                    pii_types=sorted({*scrub.pii_types, *speaker.pii_types}),
                    code_blocks=split.code_blocks,
                    prose=split.prose,
                    repetition_dropped=squeezed.dropped_chars,
                    sentences=sentences,
                    entities=doc_entities(doc),
                    ends_session=event.ends_session,
                    ends_exchange=event.ends_exchange,
                )
            )
        return prepared


def _plain_unless_code(text: str) -> str:
    """Markup removed before the first spaCy pass, so that a message whose only change is its markup
    is parsed once (half of an assistant history's characters); a message with code keeps its text
    (code is verbatim) and has its prose cleaned after the split, for the second pass it needs anyway."""
    return text if split_code(text).code_blocks else plain(text)


def _plain_prose(split: CodeSplit) -> CodeSplit:
    """The prose without markup that carries no words (bold, heading marks, table rules)."""
    return CodeSplit(split.code_blocks, plain(split.prose))


class AsyncPreparer(Protocol):
    def submit(self, events: list[ChatEvent]) -> Future[list[AnalyzedMessage]]: ...

    def close(self) -> None: ...


class ThreadPreparer:
    """Runs an in-process preparer on a helper thread (tests, single-core deployments)."""

    def __init__(self, preparer: NlpPreparer) -> None:
        self.preparer = preparer
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="nlp")

    def submit(self, events: list[ChatEvent]) -> Future[list[AnalyzedMessage]]:
        return self._pool.submit(self.preparer.prepare, events)

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class MessageAnalyzer:
    """Turns validated chat events into scrubbed, analysed messages, in batches."""

    def __init__(self, preparer: AsyncPreparer, embedder: Embedder, assistant_vector_chars: int = 0) -> None:
        self.preparer = preparer
        self.embedder = embedder
        self.assistant_vector_chars = assistant_vector_chars

    def analyze(self, events: Sequence[ChatEvent]) -> list[AnalyzedMessage]:
        return self.embed(self.preparer.submit(list(events)).result())

    def embed(self, prepared: Sequence[AnalyzedMessage]) -> list[AnalyzedMessage]:
        """The MiniLM half: one batch over all messages (filled in place). A message is embedded
        sentence by sentence, its informative ones (small talk and questions never become units:
        skipping them saves a third of the MiniLM time), or, a long assistant answer, once by its head
        (:func:`answer_head`)."""
        heads = [answer_head(p, self.assistant_vector_chars) for p in prepared]
        texts: list[str] = []
        for p, head in zip(prepared, heads, strict=True):
            texts += [head] if head else [s.text for s in p.sentences if s.informative]
        vectors = self.embedder.encode(texts)
        row = 0
        for p, head in zip(prepared, heads, strict=True):
            if head:
                p.embedding = vectors[row].tolist()
                row += 1
                continue
            for s in p.sentences:
                if s.informative:
                    s.embedding = vectors[row].tolist()
                    row += 1
            mean = unit_mean([s.embedding for s in p.sentences])
            p.embedding = mean.tolist() if mean is not None else []
        return list(prepared)


def answer_head(message: AnalyzedMessage, limit: int) -> str | None:
    """What stands for a long assistant answer in vector search: its first informative sentences, up
    to ``limit`` characters (whole sentences, at least one). None for a user's message, a short answer
    or ``limit`` 0: those are embedded statement by statement. Most of an assistant history's text is
    the assistant's and what is asked of it later
    names its words ("the hotel you recommended in Tokyo"): its statements are found by BM25, its topic
    by this one vector, at a fraction of the embedding work."""
    if not limit or message.role != Role.ASSISTANT or len(message.prose) <= limit:
        return None
    head: list[str] = []
    size = 0
    for s in message.sentences:
        if not s.informative:
            continue
        if head and size + len(s.text) > limit:
            break
        head.append(s.text.strip())
        size += len(s.text) + 1
    return " ".join(head) or None
