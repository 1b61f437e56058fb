"""Derived memory: the short lines a long history needs beside its statements.

A question about the order of things, a project's course, or how the user wants to be answered is
not held by any one statement; ranking a flat pool of statements finds the few that match best and
misses the rest. So each user message of a kept window also leaves, at once and in both modes (the
same step that decomposes it, so replays rebuild the same lines and ids):

- a **timeline** line: what the user brought up and what the answer said first, one line for the
  exchange (at most ``REQUEST_WORDS`` and ``REPLY_WORDS`` words), dated by the request; between people,
  each message's first sentences; the lines of one topic, in date order, are its timeline;
- **instruction** lines: a sentence that tells the assistant how to answer from now on ("Always
  include version numbers when I ask about libraries", "from now on, ...", "never ...");
- **preference** lines: a sentence in which the user states what they prefer, like or avoid;
- **profile** lines: a sentence in which the user says who they are, what they work on or with, or a
  constraint they keep ("I'm a data analyst", "I'm using Flask 2.3.1", "my deadline is April 15").

Each line cites only the messages whose words it holds, so forgetting the message removes it with its
statements (the usual cascade), and its id is deterministic (kind, message, text).

Limits: the rules read English sentence forms. A preference or instruction stated without those forms
("use tabs, not spaces" without "always") is a statement like any other; a sentence that only reports
("my colleague always ...") is not taken, since its subject is not the speaker; a sentence longer than
``LINE_WORDS`` words keeps its words from the cue on, cut there.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache
from itertools import islice

from simplemem.processors.ingest.decompose import DraftUnit
from simplemem.processors.ingest.embedding import embed_text
from simplemem.processors.language.text import STOPWORDS
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.window import AnalyzedMessage, Sentence, Window

GIST_WORDS = 40
LINE_WORDS = 40
REQUEST_WORDS = 18  # of a request, in its exchange's timeline line
REPLY_WORDS = 12  # of the answer, in the same line (a line is shown whole: it cites both messages)
REPLY_MARK = " — "  # between a timeline line's request and its answer
COURTESY_WORDS = 6  # an answer's opening sentence shorter than this is a courtesy, not its content
COMPACTED_TEXTS = 50_000  # the cut texts of timeline lines remembered (:func:`compact`; about 10 MB)
COMPACTED_LINES = 10_000  # the cut lines remembered by the line they cut (:func:`compact`; 12-40 MB)

# "Always format code...", "Never use...", "From now on, reply...", "Please always...", "Make sure to
# always..."; a sentence about someone else ("my boss always") is left out by its first word.
_INSTRUCTION = re.compile(
    r"^(?:(?:please|and|also|so|ok(?:ay)?|remember(?: to)?)[,\s]+)*(?:always|never|from now on|going forward)\b"
    r"|\b(?:from now on|going forward|in (?:all )?future (?:answers|responses|replies))\b"
    r"|\b(?:I want|I'd like|I would like|I need) you to (?:always|never)\b"
    r"|\b(?:make sure|be sure) (?:to|you) (?:always|never)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\bI (?:really |strongly |generally |usually |much |definitely |also |still |kind of |kinda )?"
    r"(?:prefer|like to|love to|tend to|favou?r|"
    r"dislike|hate|avoid|don't like|do not like|don't want|do not want)\b"
    r"|\bI(?:'d| would) (?:much |really )?(?:prefer|rather)\b"
    r"|\bmy (?:preference|preferred|favou?rite)\b"
    r"|\bI'm (?:not )?(?:a (?:big )?fan of|more comfortable with|partial to)\b",
    re.IGNORECASE,
)
_PROFILE = re.compile(
    r"\b(?:I'm|I am) (?:a|an|the) (?!bit\b|little\b|lot\b|few\b)\w+"
    r"|\bI (?:work|worked) (?:as|at|for|on|in|with)\b"
    r"|\bI(?:'m| am) (?:working on|building|developing|using|running|targeting|based in|living in|studying)\b"
    r"|\bI(?:'ve| have) been (?:working|using|coding|building|developing|studying)\b"
    r"|\bI (?:use|live|study|teach|manage|lead|own|run)\b"
    r"|\bI have (?:a|an|\d+)\s+(?:\w+\s+)?(?:deadline|budget|team|years?|months?|limit|constraint)\b"
    r"|\bmy (?:name|role|job|title|team|company|manager|boss|background|experience|deadline|budget|stack|"
    r"project|goal|setup|environment)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\S+")


def _words(text: str, limit: int) -> str:
    words = _WORD.findall(text)
    return " ".join(words[:limit]) + (" ..." if len(words) > limit else "")


def _from_cue(sentence: str, cue: re.Match[str]) -> str:
    """A long sentence from its cue on (the words that say it), at most ``LINE_WORDS`` words."""
    if len(_WORD.findall(sentence)) <= LINE_WORDS:
        return sentence.strip()
    start = sentence.rfind(" ", 0, max(cue.start(), 0)) + 1 if cue.start() > 0 else 0
    return _words(sentence[start:], LINE_WORDS)


def gist(message: AnalyzedMessage) -> str:
    """The first sentences of a message's prose, at most ``GIST_WORDS`` words."""
    text = " ".join(s.text.strip() for s in message.sentences) or message.prose or message.text
    return _words(text, GIST_WORDS)


def _unit(message: AnalyzedMessage, kind: MemoryKind, text: str, cited: list[str]) -> MemoryUnit:
    """A derived line stated by ``message`` (its time, speaker, session), citing ``cited``."""
    return MemoryUnit.build(
        tenant_id=message.tenant_id,
        text=text,
        kind=kind,
        source_ids=cited,
        stated_at=message.ts.isoformat(),
        speaker=message.speaker,
        role=message.role,
        session_id=message.session_id,
        persons=[message.speaker],
    )


def _line(message: AnalyzedMessage, kind: MemoryKind, text: str, sentence: Sentence | None) -> DraftUnit:
    """A line with its sentence's vector, unless its vector comes from other words than its text
    (``embed_text``: an instruction with a condition, by whose subject the questions it governs find
    it): the indexer embeds those."""
    unit = _unit(message, kind, f"{message.speaker}: {text}", [message.message_id])
    if embed_text(unit) != unit.text:
        return DraftUnit(unit, None)
    vector = sentence.embedding if sentence is not None and sentence.embedding else message.embedding
    return DraftUnit(unit, list(vector) if vector else None)


def _sentence_lines(message: AnalyzedMessage) -> Iterator[DraftUnit]:
    """The instruction, preference and profile lines of one message: one a sentence, the first rule
    that matches deciding its kind."""
    rules = (
        (MemoryKind.INSTRUCTION, _INSTRUCTION),
        (MemoryKind.PREFERENCE, _PREFERENCE),
        (MemoryKind.PROFILE, _PROFILE),
    )
    for sentence in message.sentences:
        for kind, rule in rules:
            if cue := rule.search(sentence.text):
                yield _line(message, kind, _from_cue(sentence.text, cue), sentence)
                break


def reply_gist(message: AnalyzedMessage) -> str:
    """What an answer says first, without its opening courtesies ("Certainly!", "Great question.")."""
    sentences = [s.text.strip() for s in message.sentences]
    while len(sentences) > 1 and len(_WORD.findall(sentences[0])) < COURTESY_WORDS:
        sentences.pop(0)
    return _words(" ".join(sentences) or message.prose or message.text, REPLY_WORDS)


def _exchange(request: AnalyzedMessage, reply: AnalyzedMessage) -> DraftUnit:
    """One timeline line for a request and its answer, citing both (it states both), dated by the
    request: when the user brought the subject up."""
    text = f"{request.speaker}: {_words(gist(request), REQUEST_WORDS)}{REPLY_MARK}{reply.speaker}: {reply_gist(reply)}"
    unit = _unit(request, MemoryKind.TIMELINE, text, [request.message_id, reply.message_id])
    return DraftUnit(unit, None)  # embedded by the indexer: the line's own words, both sides


def _has_words(message: AnalyzedMessage) -> bool:
    return bool(message.sentences or message.prose.strip())


def timeline_line(messages: list[AnalyzedMessage], idx: int) -> DraftUnit | None:
    """The timeline line a message completes: an assistant's answer completes its user's request (one
    line for both); in a conversation between people, a user's message stands alone. A request that no
    answer follows leaves no line."""
    message = messages[idx]
    before = messages[idx - 1] if idx > 0 else None
    if not _has_words(message) or before is None or not _has_words(before):
        return None
    if message.role == Role.ASSISTANT and before.role == Role.USER:
        return _exchange(before, message)
    if message.role == Role.USER and before.role == Role.USER and before.speaker != message.speaker:
        return _line(message, MemoryKind.TIMELINE, gist(message), None)
    return None


def derive_window(window: Window) -> list[DraftUnit]:
    """The derived lines of a window's new messages (the window's earlier messages are their context)."""
    out: list[DraftUnit] = []
    for idx in range(window.new_from, len(window.messages)):
        if (line := timeline_line(window.messages, idx)) is not None:
            out.append(line)
        if window.messages[idx].role == Role.USER:
            out += _sentence_lines(window.messages[idx])
    return out


def is_exchange(line: MemoryUnit) -> bool:
    """Whether a derived line is a timeline line of a request and its answer (:func:`_exchange`)."""
    return line.kind == MemoryKind.TIMELINE and REPLY_MARK in line.text


def compact(
    line: MemoryUnit, request_words: int, reply_words: int = 0, *, digest: bool = False
) -> MemoryUnit:
    """A timeline line in fewer words: its request's first ``request_words`` and its answer's first
    ``reply_words``; with none of the answer's, it cites only the request (what an order question needs
    of each exchange: when the user brought what up). A line cites only what it still shows. A
    ``digest`` counts only the words that carry the subject (:func:`subject_words`): a summary reads
    twice the moments in the same tokens."""
    return _compacted_line(_Line(line), request_words, reply_words, digest)


class _Line:
    """A line as a key: the same object (the embedded store keeps the lines it has read, so a query
    that shows a line its subject's last query showed passes it again) or an equal one (every field
    the same: a store that reads it anew), so that a cut line is made once."""

    __slots__ = ("line",)

    def __init__(self, line: MemoryUnit) -> None:
        self.line = line

    def __hash__(self) -> int:
        return hash((self.line.id, self.line.text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Line) and (other.line is self.line or other.line == self.line)


@lru_cache(maxsize=COMPACTED_LINES)
def _compacted_line(key: _Line, request_words: int, reply_words: int, digest: bool) -> MemoryUnit:
    """:func:`compact`, remembered."""
    line = key.line
    if not is_exchange(line):
        return line
    head = _compacted(line.text, request_words, reply_words, digest)
    cited = line.source_ids if reply_words else line.source_ids[:1]
    if digest:
        # the fields as they are (a shown line of a query's dozens: no validation, no copy of each),
        # and the line's own set of the fields it was given (a set of its own was half a cut line's size)
        return DigestLine.model_construct(
            line.__pydantic_fields_set__, **{**line.__dict__, "text": head, "source_ids": cited}
        )
    return line.model_copy(update={"text": head, "source_ids": cited})


@lru_cache(maxsize=COMPACTED_TEXTS)
def _compacted(text: str, request_words: int, reply_words: int, digest: bool) -> str:
    """The text of :func:`compact`, remembered: an order or a summary question cuts a hundred lines of
    its subject's sessions, and the next one about it cuts the same."""
    cut = subject_words if digest else _words
    head, tail = text.split(REPLY_MARK, 1)
    speaker, _, request = head.partition(": ")
    head = f"{speaker}: {cut(request, request_words)}"
    if reply_words:
        replier, _, answer = tail.partition(": ")
        head = f"{head}{REPLY_MARK}{replier}: {cut(answer, reply_words)}"
    return head


class DigestLine(MemoryUnit):
    """A timeline line shown as a digest (:func:`compact`): an item of its day's one line
    (:func:`digest_parts`), never stored."""


DIGEST_JOIN = "; "  # between the digests of one day written on one line
DIGEST_ARROW = " → "  # between a digest's request and its answer on that line


def digest_parts(line: MemoryUnit) -> tuple[str, str]:
    """A digest line (:func:`compact`) as the head of its day's line (who asked, and who answered)
    and its item there: "user: set up schema — assistant: table per entity" is ("user → assistant: ",
    "set up schema → table per entity"). A day's digests read as one line, head written once: the
    head and line break cost a third of a digest's tokens, and a summary reads that many more moments."""
    head, mark, tail = line.text.partition(REPLY_MARK)
    speaker, _, request = head.partition(": ")
    if not mark:
        return f"{speaker}: ", request
    replier, _, answer = tail.partition(": ")
    return f"{speaker}{DIGEST_ARROW}{replier}: ", f"{request}{DIGEST_ARROW}{answer}"


# Words of a conversational request that say how it is asked, not what about ("I'm kinda trying to
# figure out how I can ..."). English only.
_ASKING = frozenset(
    """i'm im i've i'd i'll you're you've let's it's that's there's what's how's
    kinda really just also actually basically trying try tried want wanted wanting need needed wondering
    wonder figure thinking think thought know hmm ok okay yeah yes hey hi so well like sure please thanks
    thank help helping explain show tell give make get got going go maybe still bit little lot something out
    anything way ways things thing stuff right now here specifically particularly especially
    looking considering planning worried concerned curious interested struggling stuck confused unsure
    excited feeling hoping""".split()
)
# Words an answer opens with that say how it is received, not what it says ("Great choice!", "Given
# your budget, ...", "Absolutely, ...").
_RECEIVING = frozenset(
    """great given absolutely certainly sounds understandable glad happy welcome fantastic excellent
    wonderful good nice awesome definitely course totally indeed""".split()
)


# A negation is kept (a stopword elsewhere): "I'm not using Redis" is no digest "using Redis", and
# whether something happened is what a contradiction turns on.
_NEGATIONS = frozenset(
    "not no never without nothing none can't don't doesn't didn't won't isn't wasn't".split()
)


def subject_words(text: str, limit: int) -> str:
    """The first ``limit`` words of ``text`` that carry its subject: neither a stopword nor a word of
    asking (:data:`_ASKING`), negations kept (:data:`_NEGATIONS`); numbers and names kept, in order."""
    # the text's words (``str.split``: the runs ``_WORD`` finds) only as far as they are needed
    kept = islice((w for w in text.split() if _carries(_bare(w))), limit)
    return " ".join(kept).rstrip(",;:")


_NO_SUBJECT = STOPWORDS | _ASKING | _RECEIVING  # what a word of no subject is, looked up once per word


def _carries(word: str) -> bool:
    return word in _NEGATIONS or word not in _NO_SUBJECT


def _bare(word: str) -> str:
    return word.strip(".,;:!?()[]\"'“”‘’").lower().replace("’", "'")
