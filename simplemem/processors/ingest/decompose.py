"""Atomic decomposition, offline and deterministic: each informative statement becomes one memory unit.

A statement is an informative sentence with the sentences that continue it ("... a necklace from my
grandma. It stands for love, faith and strength.").

Operations, on the tokens the analysis pass already produced (no second NLP pass):
- statement extraction: questions and small talk ("ok thanks", "sounds good") yield nothing;
- coreference: "I/me/my" become the speaker's name, "you/your" the addressee (the other speaker of the
  window), "he/she/his/her" the most recent compatible person named before them (see
  :mod:`simplemem.processors.language.coref` for the rule and its limits); the verb right after a rewritten subject is
  put in the third person ("I have" -> "Jordan has"), and a contraction on a rewritten pronoun is
  spelled out ("I'd book" -> "Alicia would book", "she'll" -> "Ines will", "I've" -> "Sam has");
  "'d" before a past participle is "had" ("I'd gone"), otherwise "would";
- temporal anchoring: relative expressions get their absolute ISO date (see :mod:`simplemem.processors.language.temporal`),
  read in the tense of their own clause (:mod:`simplemem.processors.language.tense`);
- symbolic fields: persons, entities, keywords, topic, location.
Code blocks bypass all of this and are stored verbatim as ``kind=code``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from simplemem.processors.ingest.embedding import unit_mean
from simplemem.processors.ingest.pronouns import ReferentAt, rewrite_pronouns, unique_names
from simplemem.processors.language.coref import PeopleTracker, ner_persons, taken_persons
from simplemem.processors.language.structure import item_marker, label_lead
from simplemem.processors.language.temporal import Anchor, find_anchors
from simplemem.processors.language.tense import past_at
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from simplemem.schemas.window import AnalyzedMessage, Sentence, Token, Window

# "we", "us", "our": whose group depends on the speaker, so a memory saying them names its speaker
# ("sam_k: we're moving to render, priti got a better deal"), whoever else it names.
FIRST_PLURAL = re.compile(r"\b(we|us|our|ours|ourselves)\b", re.I)  # "we're": the apostrophe ends the word
PHATIC = frozenset(
    """ok okay k kk sure cool great nice awesome amazing wow lol haha hahaha hehe yes yeah yep yup no nope
    thanks thank thx ty you u so much very really good got it sounds noted will do of course right exactly
    totally agreed same me too glad to hear that that's thats is was i i'm i'll im ill am happy for welcome
    you're youre hi hey hello bye goodbye see later soon take care talk morning night evening and the a
    remember telling know what's up how are doing been well fine oh ah hmm um yay congrats congratulations
    definitely absolutely perfect sweet lovely wonderful fantastic incredible true indeed alright all
    s 're 'm 'll 'd n't do does did too also just this sounds like fun interesting woohoo omg aww awww ooh
    sorry man dude cute stunning gorgeous beautiful pic pics proud btw cheers hugs long time chat chatting
    catch catching from news agree 100 yours truly keep going up there wish luck best""".split()
)
CONTENT_POS = {"NOUN", "PROPN", "VERB", "ADJ", "NUM"}
KEYWORD_POS = {"NOUN", "PROPN"}
MAX_KEYWORDS = 8  # the symbolic layer's keywords per unit: the nouns beyond these add only noise
STOP_KEYWORDS = {"thing", "things", "lot", "time", "way", "day", "kind", "stuff", "bit", "one"}


@dataclass
class DraftUnit:
    """A unit with the vector it can be indexed with (None: the indexer embeds its text)."""

    unit: MemoryUnit
    vector: list[float] | None = None


@dataclass
class Decomposition:
    units: list[DraftUnit] = field(default_factory=list)
    units_per_message: dict[str, int] = field(default_factory=dict)
    fallbacks: int = 0


def is_small_talk(sentence: Sentence, names: set[str]) -> bool:
    words = re.findall(r"[a-z']+", sentence.text.lower().replace("’", "'"))
    words = [w for w in words if w not in names]
    return all(w in PHATIC for w in words)


INTERROGATIVE_OPENERS = frozenset(
    """what what's whats when where who whom whose why how which do does did are is was were have has had
    can could would will should shall may might am any anything got""".split()
)


def is_question(sentence: Sentence) -> bool:
    """A question in interrogative form ("What did you paint?", "Have you been?").

    A statement with a tag ("Sunflowers mean warmth, right?") or an elliptic one ("For walking or
    running?") still carries content and is kept.
    """
    if not sentence.text.rstrip().endswith("?"):
        return False
    words = [t.text.lower() for t in sentence.tokens if t.text.strip() and t.pos not in ("PUNCT", "INTJ")]
    return not words or words[0] in INTERROGATIVE_OPENERS or (len(words) > 1 and words[1] in ("you", "u"))


PLACEHOLDER = re.compile(r"<[A-Z_]+>")


def has_content(sentence: Sentence) -> bool:
    """Two content words, or a named entity, or a scrubbed value (the fact that one was shared); in a
    list item, one noun is enough: an item may be a bare name ("5. Holocene"), what the list enumerates."""
    content = [t for t in sentence.tokens if t.pos in CONTENT_POS and t.text.lower() not in PHATIC]
    if sentence.part is not None and any(t.pos in KEYWORD_POS for t in content):
        return True
    return len(content) >= 2 or any(t.ent for t in sentence.tokens) or bool(PLACEHOLDER.search(sentence.text))


# An assistant's courtesy lines carry no fact about the user or the answer ("Let me know if you'd
# like more options!", "I hope this helps."): whole sentences opening so, from an assistant only.
ASSISTANT_COURTESY = re.compile(
    r"^(?:let me know|i hope (?:this|that|these) helps?|hope (?:this|that) helps|feel free to|"
    r"if you have any (?:other |more |further )?questions|i'?m happy to help|happy to help|"
    r"(?:sure|certainly|of course|absolutely|great question)[!,.]*$|you'?re welcome|enjoy your|good luck)",
    re.I,
)


def is_informative(sentence: Sentence, speaker: str, role: str = "user") -> bool:
    """Statement extraction: a sentence becomes a memory unless it is a question, small talk or empty
    (or, from an assistant, a courtesy line)."""
    if role == "assistant" and ASSISTANT_COURTESY.match(sentence.text.strip()):
        return False
    names = {speaker.lower(), *(p.lower() for _, p in ner_persons(sentence.tokens))}
    names.update(part for n in list(names) for part in n.split())
    return not (is_question(sentence) or is_small_talk(sentence, names) or not has_content(sentence))


def _entity_spans(
    tokens: list[Token], skip: tuple[str, ...] = ("PERSON", "CARDINAL", "ORDINAL")
) -> list[tuple[str, str]]:
    spans: list[tuple[str, str]] = []
    current: list[str] = []
    label = ""
    for text, ws, _pos, _tag, ent in [*tokens, ("", "", "", "", "")]:
        if ent and ent.startswith("I-") and current:
            current.append(text + ws)
            continue
        if current:
            spans.append(("".join(current).strip(), label))
            current = []
        if ent and ent.startswith("B-") and ent[2:] not in skip:
            label = ent[2:]
            current = [text + ws]
    return spans


class OfflineDecomposer:
    """Deterministic decomposition of a window's new messages into units."""

    def decompose(self, window: Window) -> Decomposition:
        result = Decomposition()
        speakers = [m.speaker for m in window.messages]
        people = PeopleTracker(tenant_names=frozenset(window.known_names))
        for idx, message in enumerate(window.messages):
            is_new = idx >= window.new_from
            addressee = _addressee(speakers, idx)
            asked = _question_before(window.messages, idx)
            numbers = {id(s): people.observe(s.tokens) for s in message.sentences}
            if not is_new:
                continue
            count = 0
            request = _request_to_assistant(window.messages, idx, addressee)
            if request is not None:
                result.units.append(DraftUnit(self._request_unit(message, addressee or "", request)))
                count += 1
            for code in message.code_blocks:
                result.units.append(code_draft(self._code_unit(message, code), message))
                count += 1
            statements = []
            long_answer = _embedded_by_head(message)
            groups = statement_groups(message.sentences, by_place=long_answer)
            for group in _without_carried_leads(message, groups) if long_answer else groups:
                mentioned = [m.name for s in group for m in numbers[id(s)][1] if m.listed]
                refer = _Referents(people, {message.speaker, addressee or ""})
                statements.append(
                    self._statement_unit(
                        message, group, addressee, [numbers[id(s)][0] for s in group], refer, mentioned, asked
                    )
                )
            result.units += _one_vector_per_answer(message, statements)
            count += len(statements)
            result.units_per_message[message.message_id] = count
        return result

    def _code_unit(self, message: AnalyzedMessage, code: str) -> MemoryUnit:
        return MemoryUnit.build(
            text=code,
            kind=MemoryKind.CODE,
            persons=[message.speaker],
            context=f"{message.speaker}: {message.prose}" if message.prose else None,
            keywords=["code"],
            **_said_in(message),
        )

    def _request_unit(
        self, message: AnalyzedMessage, assistant: str, questions: list[Sentence]
    ) -> MemoryUnit:
        """What a user asked an assistant for: in an assistant history the user's requests are most of
        what they say about their interests ("Do you have recipes for yogurt in a slow cooker?"), and a
        later "any advice on my slow cooker?" should find them. Kept as asked, under the speaker's name."""
        return MemoryUnit.build(
            text=f"{message.speaker} asked {assistant}: {' '.join(q.text.strip() for q in questions)}",
            kind=MemoryKind.FACT,
            persons=[message.speaker],
            keywords=_keywords([t for q in questions for t in q.tokens]),
            **_said_in(message),
        )

    def _statement_unit(
        self,
        message: AnalyzedMessage,
        group: list[Sentence],
        addressee: str | None,
        numbers: list[int],
        refer: _Referents,
        mentioned: list[str],
        asked: tuple[str, str] | None = None,
    ) -> DraftUnit:
        tokens = [t for sentence in group for t in sentence.tokens]
        own_people = unique_names([*(name for _, name in taken_persons(tokens)), *mentioned])
        parts, used_names, anchors = [], [], []
        for sentence, number in zip(group, numbers, strict=True):
            anchored, found = anchor_tokens(sentence.tokens, message.ts)
            text, used = rewrite_pronouns(
                anchored, sentence.text, message.speaker, addressee, refer.at(number)
            )
            parts.append(text)
            used_names += used
            anchors += found
        text = " ".join(parts)
        persons = unique_names([message.speaker, *used_names, *own_people])
        where = group[-1].part
        if where is not None:  # "assistant, item 3 (third) of 5 of 'Hotels near the slopes': ..."
            text = f"{message.speaker}, {where}: {' '.join(item_marker(p) for p in parts)}"
        elif not any(p in text for p in persons) or (
            message.speaker not in text and FIRST_PLURAL.search(text)
        ):
            text = f"{message.speaker}: {text}"
        spans = _entity_spans(tokens)
        location = next((s for s, label in spans if label in ("GPE", "LOC", "FAC")), None)
        keywords = _keywords(tokens)
        unit = MemoryUnit.build(
            text=text,
            kind=MemoryKind.FACT,
            event_time=anchors[0].value if anchors else None,
            persons=persons,
            entities=unique_names([s for s, _ in spans]),
            keywords=keywords,
            topic=keywords[0] if keywords else None,
            location=location,
            **_said_in(message),
            context="\n".join(
                c
                for c in (asked and asked[0], message.prose if len(group) < len(message.sentences) else None)
                if c
            )
            or None,
            context_ids=[asked[1]] if asked else [],
        )
        vector = unit_mean([s.embedding for s in group])
        return DraftUnit(unit, vector.tolist() if vector is not None else None)


def code_draft(unit: MemoryUnit, message: AnalyzedMessage) -> DraftUnit:
    """A code block with its message's vector: what a code unit is found by is the prose around it
    (its embedded text is that prose first, then the code, cut at 256 word pieces). Embedding that
    again for every block was a quarter of an assistant history's MiniLM work; a message with no
    vector (code alone) has its block embedded by the indexer."""
    return DraftUnit(unit, list(message.embedding) if message.embedding else None)


def _one_vector_per_answer(message: AnalyzedMessage, statements: list[DraftUnit]) -> list[DraftUnit]:
    """A message embedded once by its head (a long answer: ``analysis.answer_head``) has that vector
    on its first statement; the others are searched by their words."""
    if not _embedded_by_head(message) or not statements:
        return statements
    first, rest = statements[0], statements[1:]
    return [
        DraftUnit(first.unit, list(message.embedding)),
        *(DraftUnit(d.unit.model_copy(update={"has_vector": False})) for d in rest),
    ]


def _embedded_by_head(message: AnalyzedMessage) -> bool:
    """A long answer: one vector for the message (``analysis.answer_head``), none per sentence."""
    return bool(message.embedding) and not any(s.embedding for s in message.sentences)


def _without_carried_leads(message: AnalyzedMessage, groups: list[list[Sentence]]) -> list[list[Sentence]]:
    """A long answer's statements but the lines that only introduce a list ("Here are some hotels in
    Aspen:") whose items carry them whole in their labels ("item 2 of 3 of 'Here are some hotels in
    Aspen'"): each would be a memory of its own, mostly words of no use alone ("Other Recommendations:"). The lead stays in the message's text (the context) and
    in its vector, which is of the message's head."""
    following = dict(zip(map(id, message.sentences), message.sentences[1:], strict=False))
    return [g for g in groups if not (len(g) == 1 and _lead_carried(g[0], following.get(id(g[0]))))]


def _lead_carried(sentence: Sentence, following: Sentence | None) -> bool:
    """Whether ``sentence`` only introduces the list ``following`` opens, whose label quotes it whole."""
    if sentence.part is not None or following is None or following.part is None:
        return False
    lead = sentence.text.strip()
    return lead.endswith(":") and label_lead(following.part) == lead.rstrip(":").strip()


@dataclass
class _Referents:
    """Third-person referents for the sentences of one statement (see :mod:`simplemem.processors.language.coref`)."""

    people: PeopleTracker
    exclude: set[str]

    def at(self, sentence: int) -> ReferentAt:
        def referent(gender: str, token: int) -> str | None:
            return self.people.referent(gender, sentence, token, self.exclude)

        return referent


def anchor_tokens(tokens: list[Token], ref: datetime) -> tuple[list[Token], list[Anchor]]:
    """Temporal anchoring on a sentence's tokens, each expression read in its own clause's tense: the
    absolute date follows the expression's last token ("until July (2026-07)")."""
    text = "".join(t.text + t.ws for t in tokens)
    anchors = find_anchors(text, ref, past=lambda start: past_at(tokens, start))
    if not anchors:
        return tokens, []
    out = list(tokens)
    starts, pos = [], 0
    for t in tokens:
        starts.append(pos)
        pos += len(t.text) + len(t.ws)
    for a in anchors:
        if a.iso in a.phrase:
            continue
        last = max(i for i, start in enumerate(starts) if start < a.end)
        out[last] = out[last]._replace(ws=f" ({a.iso})" + out[last].ws)
    return out, anchors


CONTINUATION = frozenset(
    "it it's its this that that's these those they they're them there so and but also which plus he she his her".split()
)


def _changes_list_place(sentence: Sentence, before: Sentence) -> bool:
    """A list item is a statement of its own, whatever the line before it ends with; and the line after
    a list ("These venues have a reputation ...") does not continue its last item."""
    return sentence.line != before.line and sentence.part != before.part


def _numeric_fragment(sentence: Sentence) -> bool:
    """A verbless fragment holding a number ("2:04:37.", "3.6 kg."): a terse answer whose meaning is
    in the sentence after it."""
    tokens = sentence.tokens
    return any(t.tag == "CD" and any(c.isdigit() for c in t.text) for t in tokens) and not any(
        t.tag.startswith("VB") or t.tag == "MD" for t in tokens
    )


# A long answer's list item is one statement up to this many characters (its sentences): what the
# assistant enumerated is recalled by item ("the second hotel"), with fewer memories than one a
# sentence. A paragraph's sentences join up to a shorter length: longer statements crowd a user's
# statement out of a context's budget.
ITEM_STATEMENT_CHARS = 400
PARAGRAPH_STATEMENT_CHARS = 200


def _same_place(sentence: Sentence, group: list[Sentence]) -> bool:
    """Whether ``sentence`` goes on the statement ``group`` of a long answer: the same list item, or
    the same paragraph, with room left for it."""
    last = group[-1]
    size = sum(len(s.text) for s in group) + len(sentence.text)
    if sentence.part is None:
        return last.part is None and sentence.line == last.line and size <= PARAGRAPH_STATEMENT_CHARS
    return sentence.part == last.part and size <= ITEM_STATEMENT_CHARS


def statement_groups(sentences: list[Sentence], by_place: bool = False) -> list[list[Sentence]]:
    """Informative sentences, each with the ones that continue it ("It stands for love...").

    A sentence that opens with an anaphoric or connective word, or follows one ending in a colon,
    belongs to the statement before it: alone it would not be self-contained. A verbless fragment
    with a number that is no statement on its own ("2:04:37. no knee pain, walked the water
    stations") opens the statement that follows it in the message. With ``by_place`` (a long
    answer) the sentences of one list item are one statement, up to :data:`ITEM_STATEMENT_CHARS`, and
    those of one paragraph up to :data:`PARAGRAPH_STATEMENT_CHARS`.
    """
    groups: list[list[Sentence]] = []
    previous_kept = False
    fragment: Sentence | None = None
    for sentence in sentences:
        if not sentence.informative:
            previous_kept = False
            fragment = sentence if _numeric_fragment(sentence) else None
            continue
        first = sentence.tokens[0][0].lower() if sentence.tokens else ""
        before = groups[-1] if previous_kept and groups else None
        continues = before is not None and (
            (
                (first in CONTINUATION or before[-1].text.endswith(":"))
                and not _changes_list_place(sentence, before[-1])
            )
            or (by_place and _same_place(sentence, before))
        )
        if continues:
            groups[-1].append(sentence)
        else:
            opener = (
                fragment if fragment is not None and not _changes_list_place(sentence, fragment) else None
            )
            groups.append([opener, sentence] if opener is not None else [sentence])
        previous_kept, fragment = True, None
    return groups


def _question_before(messages: list[AnalyzedMessage], idx: int) -> tuple[str, str] | None:
    """The question another speaker asked just before this message ("What genre is it?"), which its
    answer ("A mix of drama and romance!") rarely repeats: searched with the answer, never shown.
    Returned with the asking message's id (forgetting that message strips the quote)."""
    if idx == 0 or messages[idx - 1].speaker == messages[idx].speaker:
        return None
    prev = messages[idx - 1]
    questions = [s.text for s in _content_questions(prev)]
    return (f"{prev.speaker}: {' '.join(questions)}", prev.message_id) if questions else None


def _content_questions(message: AnalyzedMessage) -> list[Sentence]:
    """The message's questions that ask about something ("What genre is it?", not "How are you?")."""
    return [s for s in message.sentences if is_question(s) and has_content(s)]


def _said_in(message: AnalyzedMessage) -> dict[str, Any]:
    """The fields every unit takes from the one message it came from."""
    return {
        "tenant_id": message.tenant_id,
        "source_ids": [message.message_id],
        "stated_at": message.ts.isoformat(),
        "speaker": message.speaker,
        "role": message.role,
        "session_id": message.session_id,
    }


def _keywords(tokens: list[Token]) -> list[str]:
    return unique_names(
        [t.text.lower() for t in tokens if t.pos in KEYWORD_POS and t.text.lower() not in STOP_KEYWORDS]
    )[:MAX_KEYWORDS]


def _request_to_assistant(
    messages: list[AnalyzedMessage], idx: int, addressee: str | None
) -> list[Sentence] | None:
    """A user's questions with content to an assistant (the window's addressee speaks as one); None
    for other messages. Questions between people ("What did you paint?") stay out: they ask about
    the other's life, which the answer states."""
    message = messages[idx]
    if message.role != Role.USER or addressee is None:
        return None
    if not any(m.speaker == addressee and m.role == Role.ASSISTANT for m in messages):
        return None
    return _content_questions(message) or None


def _addressee(speakers: list[str], idx: int) -> str | None:
    """The nearest other speaker in the window, looking back first, then ahead."""
    me = speakers[idx]
    for j in list(range(idx - 1, -1, -1)) + list(range(idx + 1, len(speakers))):
        if speakers[j] != me:
            return speakers[j]
    return None
