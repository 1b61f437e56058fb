"""Adaptive retrieval: complexity -> k, hybrid semantic + BM25 scoring, symbolic filters and boosts, context.

- complexity in [0, 1] from length, named things, temporal and aggregation cues maps to k in
  [k_min, k_max] through a square root (the first cues matter most: a short question about a named
  person may find its answer in any session);
- score = w * cosine + (1 - w) * BM25 / max BM25 of the query's candidates;
- persons named in the query that the tenant's memory knows (or whose names they abbreviate:
  "Mel" for "Melanie") favour memories about them: a memory that lists the person or names it in
  its own text gets ``person_boost`` on top of its fused score. A boost, not a filter: NER labels
  are unstable ("Tomas landed at noon" may carry no person tag, "She brought me a bowl" no name), so
  a memory without the name still competes on its semantic score, and BM25 searches only the
  memories about the persons (their names would otherwise dominate its terms);
- a date or range in the query ("last week", "in May 2023", relative to ``as_of``) favours the
  memories whose time (their ``event_time``, else the day they were stated) falls in it by
  ``date_boost``. A boost, not a filter: a date in a question is often approximate or read against another day than
  the speaker meant ("last year" asked a year later), and an event time anchored at ingestion can be
  wrong ("next month" said of a past party), so a memory outside the range still competes when it
  matches much better; with ``date_boost`` 0 the range restricts (unless almost nothing is in it).
  The API's ``since``/``until`` always restrict. Nothing stated after ``as_of`` is ever returned;
- among the memories about a person the query names, those the person said themselves get
  ``speaker_boost`` more: what someone did, plans or likes is mostly said first-hand ("Melanie: we
  went camping"), while others' lines about them are often reactions ("Sounds like Melanie had a
  blast"). A person who never speaks (a third party the user tells about) gets no boost, and loses
  nothing by it;
- a question about time ("When did...", "How long ago...": :data:`TEMPORAL_CUES`) favours the memories
  that carry the time of their event (``event_time``, anchored at ingestion: "yesterday (2023-05-07)")
  by ``event_time_boost``: such a memory says when something happened, the others only when it was
  said;
- recent turns from the lookaside buffer that are not indexed yet compete with the memories;
- the other statements of the chosen memories' messages follow them (up to ``sibling_units``): a
  message's statements are each other's context ("It's a mix of drama and romance!" beside "my
  first screenplay");
- near-duplicates are dropped; the context has one line per memory, grouped under its date.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from functools import cache, lru_cache, partial

import numpy as np

from simplemem.processors.ingest.embedding import Embedder
from simplemem.processors.language.structure import ORDINALS, labelled_place, list_of, without_lead
from simplemem.processors.language.temporal import anchor_text, find_anchors
from simplemem.processors.language.text import STOPWORDS, query_terms
from simplemem.processors.language.tokens import count_tokens
from simplemem.processors.retrieval.budget import Budget, fit
from simplemem.processors.retrieval.buffer import RecentTurnBuffer
from simplemem.processors.retrieval.derived import (
    PLANS,
    Plan,
    Searches,
    aspects,
    gather_derived,
    question_kind,
)
from simplemem.processors.retrieval.fanout import FanOut
from simplemem.processors.retrieval.names import TenantNames
from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import (
    Hit,
    LexicalStore,
    SymbolicFilter,
    VectorStore,
    about_any,
    names_in_text,
)
from simplemem.schemas.events import Role
from simplemem.schemas.memory import DERIVED_KINDS, MemoryKind, MemoryStatus, MemoryUnit
from simplemem.schemas.query import QueryFilters, QueryRequest, QueryResult, RetrievedMemory
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import BufferedTurn

TEMPORAL_CUES = re.compile(
    r"\b(when|before|after|since|during|until|first|last|ago|how long|date|year|month|week|day|time)\b", re.I
)
AGGREGATION_CUES = re.compile(
    r"\b(all|every|how many|list|both|compare|common|together|total|each|why|would|likely|usually|often|"
    r"pattern|relationship|activities|things|kinds?|types?|ways)\b|\band\b",
    re.I,
)
_NAME = re.compile(r"\b[A-Z][\w'’.-]*(?:\s+[A-Z][\w'’.-]*)*")
# Questions that count, list, total or order things ("how many ... did I", "all the", "which ...
# first", "how long since"): their answer is every mention across the sessions, not the best few. Such a
# question gets k_max memories, at most ``gather_units_per_message`` of a message, no siblings,
# each shortened to its matching part, so the budget holds many short mentions, each under its date.
# Limits: a question that counts without these words ("What's the tally of ...") is a lookup; one that
# uses them for one thing ("all the way") spends its budget on more mentions than it needs. "first"
# orders only before an "or" ("Which did I start first, A or B?"; "my first purchase" is a lookup),
# and "list" only as a verb ("List all ...", "can you list"; "the last venue in the list" is a lookup
# of one item).
GATHER_CUES = re.compile(
    r"\b(how many|how much|how often|how long|number of|in total|total|all (?:the|of|my)|every|"
    r"each|which \w+(?: \w+)? (?:first|last|earlier|later|before|after)|in what order|order of|"
    r"first\b[^?.]*\bor|compare|since|ago)\b|(?:^|[.!?]\s+|\b(?:you|please)\s+)list\b",
    re.I,
)
# Questions that ask for the things of a kind someone has or did ("What books has Melanie read?",
# "Which cities has Jon visited?": what/which, a plural noun, an auxiliary): their answer is spread over
# sessions, so they get k_max memories. Unlike the gathering questions above, the memories stay whole,
# several a message, with their siblings: on LoCoMo, gathered (one a message, no siblings) they lost
# answer words (0.731 -> 0.728), with only k_max 0.731 -> 0.733 (docs/benchmarks.md). Limits: English
# forms; a noun that only looks plural ("What news does ...") widens a lookup; a list asked without
# an auxiliary ("Name the books Melanie read") is not one.
LIST_CUES = re.compile(
    r"\b(?:what|which)\s+(?:[\w/+-]+\s+)?\w+?[^s'\W]s\s+(?:has|have|does|do|did|had)\b", re.I
)
# Requests for advice or a recommendation ("Can you suggest a hotel for my trip?", "Any tips?", "What
# should I cook?"): what tailors the answer (what the user has, likes, did) is spread over sessions and
# rarely shares the request's words, so they get k_max memories, as a list question does. On the 60
# LongMemEval questions it is the form of nine of the ten preference questions (and of no other):
# evidence 0.904 -> 0.921 (one more found, none lost) at the same tokens; no LoCoMo or chat-set
# question has it. Limits: English forms; a request without them ("I need a gift idea", "What do you
# think?") is a lookup.
ADVICE_FORMS = (
    r"\b(?:can|could|would) you (?:recommend|suggest)",
    r"\bany (?:tips|ideas|suggestions|recommendations|advice)\b",
    r"\b(?:what (?:should|could|can) i|should i)\b",
)
ADVICE_CUES = re.compile("|".join(ADVICE_FORMS), re.I)
_PAST = re.compile(r"\b(did|was|were|had|went|got|made|ago|last)\b", re.I)
# Whose words a question is about. One that recalls what the assistant said ("remind me", "you
# recommended", "our previous chat") favours the assistant's statements; one in the first person
# ("my", "I did") the user's: the user asks about their own life, and in an assistant history the
# assistant's long answers outnumber what the user said about themselves ten to one. Limits: only
# English forms; a first-person question about what the assistant said without these words
# ("What was that hotel?") favours the user's lines.
ASSISTANT_RECALL = re.compile(
    r"\b(remind me|our (?:previous|last|earlier|past) (?:conversation|chat|discussion|session)|"
    r"you (?:mentioned|said|told|recommended|suggested|provided|gave|listed|shared|described|explained|"
    r"outlined|wrote)|did you (?:say|mention|recommend|suggest)|we (?:discussed|talked|outlined|covered))\b",
    re.I,
)
FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.I)
# The place of a listed thing a question names ("the last venue you recommended", "the third hotel",
# "the 7th item"): a statement taken from a list item carries its place in its label (:func:`label`).
_PLACE = re.compile(
    r"\b(?:the|your|that) (?:(\d{1,3})(?:st|nd|rd|th)|(" + "|".join(ORDINALS) + r"|last))\b"
    r"|(?:\b(?:item|number) |#)(\d{1,3})\b",  # "item 7 of that list", "what was #3 again"
    re.I,
)


def asked_role(query: str) -> Role | None:
    """The role whose statements a question is about (see :data:`ASSISTANT_RECALL`), or None."""
    if ASSISTANT_RECALL.search(query):
        return Role.ASSISTANT
    return Role.USER if FIRST_PERSON.search(query.replace("’", "'")) else None


def asked_places(query: str) -> frozenset[str]:
    """The list places a question names, as an item's number or "last"."""
    places = set()
    for number, word, numbered in _PLACE.findall(query):
        word = word.lower()
        places.add(number or numbered or ("last" if word == "last" else str(ORDINALS.index(word) + 1)))
    return frozenset(places)


def at_place(text: str, places: frozenset[str]) -> bool:
    """Whether a statement's list label puts it at one of ``places``."""
    place = labelled_place(text)
    if place is None:
        return False
    item, items = place
    return str(item) in places or ("last" in places and item == items > 1)


# (weight, saturation) per feature: a feature counts fully at its saturation value. Calibrated on
# the shape of questions to a multi-session memory, not on any one question: an 8-word question
# about a named person already needs a dozen memories, since its answer may sit in any session;
# "What is my favorite color?" stays near k_min.
# Candidates read per memory chosen: room for the near-duplicates and filtered ones skipped, and
# the reach of the selection's boosts (a memory below the head read cannot be lifted: 3 -> 4 took
# LoCoMo's answer recall from 0.728 to 0.731, temporal 0.766 -> 0.776).
SELECT_HEAD_FACTOR = 4
# Added to a statement at the list place a question about the assistant's answer names ("the last
# venue you recommended"): the items of one list score alike, and only their labels tell them apart.
PLACE_BOOST = 0.3
# A message whose other statements are fewer than this is short: they are each other's context and all
# follow a chosen one, in order. Of a longer one (a list, a plan) only those sharing a question word do.
SHORT_MESSAGE_STATEMENTS = 6
TOKEN_SET_CACHE = 8192  # memory texts whose word sets a process keeps (near-duplicate checks)
MAX_UPDATE_HOPS = 5  # a fact changed more often than this within one context keeps its 5th value
LENGTH = (0.4, 8.0)
ENTITIES = (0.2, 1.0)
TEMPORAL = (0.2, 1.0)
AGGREGATION = (0.2, 1.0)


def complexity(query: str, names: int) -> float:
    """Query complexity in [0, 1] from length, named persons, temporal and aggregation cues."""
    features = (
        (LENGTH, len(query.split())),
        (ENTITIES, names),
        (TEMPORAL, len(TEMPORAL_CUES.findall(query))),
        (AGGREGATION, len(AGGREGATION_CUES.findall(query))),
    )
    score = sum(weight * min(value / saturation, 1.0) for (weight, saturation), value in features)
    return round(min(max(score, 0.0), 1.0), 4)


def share(score: float, best: float) -> float:
    """``score`` as its share of this query's ``best`` (0 when nothing scored above 0)."""
    return max(score, 0.0) / best if best > 0 else 0.0


def k_for(score: float, k_min: int, k_max: int) -> int:
    return k_min + math.ceil(math.sqrt(score) * (k_max - k_min))


def name_candidates(query: str) -> list[str]:
    """Capitalised words and runs in the query (possessives stripped), and their single words."""
    found: list[str] = []
    for m in _NAME.finditer(query):
        phrase = re.sub(r"['’]s$", "", m.group(0)).strip(" .")
        words = [w for w in phrase.split() if w.lower() not in STOPWORDS]
        if not words:
            continue
        found.append(" ".join(words))
        found.extend(words)
    return list(dict.fromkeys(found))


def _without(query: str, words: list[str]) -> str:
    if not words:
        return query
    pattern = r"\b(?:" + "|".join(re.escape(w) for w in words) + r")(?:['’]s)?\b"
    return re.sub(pattern, " ", query)


def _about_any(unit: MemoryUnit, names: list[str]) -> bool:
    """Whether ``unit`` is about one of ``names`` (lower-cased): in its persons or named in its text."""
    return bool({p.lower() for p in unit.persons} & set(names)) or names_in_text(unit.text, names)


@lru_cache(maxsize=TOKEN_SET_CACHE)
def _token_set(text: str) -> frozenset[str]:
    """Cached: a query compares each candidate with every memory already chosen."""
    return frozenset(query_terms(text))


def near_duplicate(a: str, b: str, threshold: float) -> bool:
    sa, sb = _token_set(a), _token_set(b)
    if not sa or not sb:
        return a.strip() == b.strip()
    shared = len(sa & sb)  # Jaccard, without building the union: every pair of a query is compared
    return shared / (len(sa) + len(sb) - shared) >= threshold


def with_sources(unit: MemoryUnit, more: list[str]) -> MemoryUnit:
    """``unit`` citing ``more`` messages after its own (its first stays the message it came from)."""
    extra = [s for s in more if s not in unit.source_ids]
    return unit.model_copy(update={"source_ids": [*unit.source_ids, *extra]}) if extra else unit


def context_line(unit: MemoryUnit) -> str:
    if unit.kind == MemoryKind.CODE:
        return f"code shared by {unit.speaker or 'user'}:\n{unit.text}"
    return unit.text


def build_context(units: list[MemoryUnit], notes: dict[str, str] | None = None) -> str:
    """Memories in time order, under one ``[YYYY-MM-DD]`` header per day they were stated; a
    memory with a note (knowledge updates: which one is current) ends with it.

    A header per day rather than per line: dates cost about seven tokens each.
    """
    lines: list[str] = []
    day = None
    named: set[str] = set()  # the lists whose lead a line above names
    placed = [(unit, list_of(unit.text)) for unit in units]
    for unit, place in sorted(placed, key=reading_order):
        if unit.stated_at[:10] != day:
            day = unit.stated_at[:10]
            lines.append(f"[{day}]")
        line = context_line(unit)
        if place is not None:
            line = without_lead(line) if place[0] in named else line
            named.add(place[0])
        note = (notes or {}).get(unit.id)
        lines.append(f"{line} {note}" if note else line)
    return "\n".join(lines)


def reading_order(placed: tuple[MemoryUnit, tuple[str, int] | None]) -> tuple[str, str, int, str]:
    """Time order; a message's statements (one time) with each list's items together, in order, so
    that a list's lead is written once, on its first item shown (a long lead is a tenth of a line).
    ``placed``: a unit and its :func:`list_of`."""
    unit, place = placed
    return (unit.stated_at, place[0] if place else "", place[1] if place else 0, unit.id)


def update_notes(chosen: list[MemoryUnit], replaced: dict[str, MemoryUnit]) -> dict[str, str]:
    """What the context says about changed facts: the older memory is outdated (with the day its
    fact changed), the one that replaced it is current."""
    ids = {u.id for u in chosen}
    notes: dict[str, str] = {}
    for old_id, newer in replaced.items():
        if old_id in ids:
            notes[old_id] = f"(outdated: changed {newer.stated_at[:10]})"
            if newer.id in ids:
                notes[newer.id] = "(current)"
    return notes


def fuse(
    semantic: list[Hit], lexical: list[Hit], words_only: set[str], w: float, words_only_factor: float
) -> dict[str, float]:
    """Weighted sum (``w`` the semantic share) of cosine and BM25, each as its share of the best
    of this query. Both are shares: a raw cosine, low for every memory of a vague question, let the
    BM25 side, whose best is always 1, decide it on the common words the question happened to share
    ("lately", "weekend", "tips"). A memory in ``words_only`` (no vector) is ranked on its words
    alone: the cosine share it cannot have is taken as ``words_only_factor`` of its BM25 share.
    Otherwise the statements of a long answer, which are found by their words, could never outrank
    a memory that merely resembles the question; taken whole, a full BM25 share would count as the
    best meaning too, and an answer's keyword-rich statements would bury what the user said
    ("What book am I currently reading?" under book-tracking apps)."""
    top_bm25 = max((h.score for h in lexical), default=0.0)
    top_cosine = max((h.score for h in semantic), default=0.0)
    scores: dict[str, float] = {}
    for h in semantic:
        scores[h.id] = w * share(h.score, top_cosine)
    for h in lexical:
        norm = share(h.score, top_bm25)
        stand_in = w * norm * words_only_factor if h.id in words_only else 0.0
        scores[h.id] = scores.get(h.id, 0.0) + (1 - w) * norm + stand_in
    return scores


def fusion_weight(asked: Role | None, settings: Settings) -> float:
    """The semantic share of the fused score: ``first_person_semantic_weight`` for a question about
    the user's own life (:func:`asked_role`), which rewords what they said, else ``semantic_weight``."""
    return settings.first_person_semantic_weight if asked == Role.USER else settings.semantic_weight


def favour_within(
    wide: list[tuple[str, float]], within: list[tuple[str, float]], boost: float
) -> list[tuple[str, float]]:
    """One ranking from a search without the query's date (``wide``) and one within it (``within``):
    a memory found within the date gets ``boost`` on top of its better score of the two."""
    best = dict(wide)
    for uid, sc in within:
        best[uid] = max(best.get(uid, 0.0), sc) + boost
    return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))


@dataclass(frozen=True)
class Boosts:
    """What the selection adds to the fused scores of the memories it reads (the head of the
    ranking: one ranked below the head is not lifted into it).

    ``event``: for a question about time, a memory with an ``event_time`` (one anchored wrongly at
    ingestion is favoured all the same); ``speaker``: a memory said by one of ``speakers`` (the
    lower-cased persons the query names); ``role``: a memory said in the role ``asked`` (the one the
    question is about, :func:`asked_role`), in proportion to its score's share of the head's best. Every
    line the user wrote is in their role: added in full, ``role`` lifted their unrelated lines ("account
    number ...") above the assistant's reply that answers the question. Scaled, it reorders memories
    of like relevance: LongMemEval evidence 0.921 -> 0.933, LoCoMo (third-person questions) unchanged;
    scaling ``event`` the same way lost LoCoMo 0.733 -> 0.730."""

    event: float = 0.0
    speakers: frozenset[str] = frozenset()
    speaker: float = 0.0
    asked: Role | None = None
    role: float = 0.0
    places: frozenset[str] = frozenset()

    def of(self, unit: MemoryUnit, relevance: float = 1.0) -> float:
        """The bonus of ``unit``; ``relevance`` (its score's share of the head's best) scales the role's."""
        bonus = self.event if unit.event_time else 0.0
        if unit.speaker and unit.speaker.lower() in self.speakers:
            bonus += self.speaker
        if self.asked is not None and unit.role == self.asked:
            bonus += self.role * relevance
        if self.places and at_place(unit.text, self.places):
            bonus += PLACE_BOOST
        return bonus

    def apply(self, ranked: list[tuple[str, float]], units: dict[str, MemoryUnit]) -> list[tuple[str, float]]:
        if not (self.event or (self.speaker and self.speakers) or (self.role and self.asked) or self.places):
            return ranked
        best = max((sc for _, sc in ranked), default=0.0)
        boosted = [
            (uid, sc + self.of(units[uid], share(sc, best)) if uid in units else sc) for uid, sc in ranked
        ]
        return sorted(boosted, key=lambda kv: (-kv[1], kv[0]))


@dataclass
class Retriever:
    settings: Settings
    lexical: LexicalStore
    vectors: VectorStore
    embedder: Embedder
    buffer: RecentTurnBuffer | None = None
    names: TenantNames | None = None  # a cache of the tenants' person names (services mode)
    fan_out: FanOut = field(default_factory=FanOut)  # independent store requests at once (services)

    def query(self, request: QueryRequest, filters: QueryFilters | None = None) -> QueryResult:
        """The memories and context for ``request``; ``filters`` narrow it further (the API's)."""
        s = self.settings
        filters = filters or QueryFilters()
        if request.include_archived:  # the CLI's flag; the API passes it in the filters
            filters = filters.model_copy(update={"include_archived": True})
        as_of = request.as_of or datetime.now(UTC)
        tenant = request.tenant_id
        candidates = name_candidates(request.query)
        if self.names is not None:
            names = self.names.known(tenant, candidates)
        else:
            names = batched.known_names(self.lexical, tenant, candidates, s.store_expression_terms)
        anchors = find_anchors(request.query, as_of, past=bool(_PAST.search(request.query)), loose=True)
        first_day = min((a.first_day for a in anchors), default=None)
        last_day = max((a.last_day for a in anchors), default=None)
        explicit_range = filters.since is not None or filters.until is not None
        if explicit_range:
            first_day = filters.since or date(s.earliest_year, 1, 1)
            last_day = filters.until or date.max
        names = sorted({*names, *(p.lower() for p in filters.persons if p.strip())})
        named = [c for c in candidates if " " not in c and any(n.startswith(c.lower()) for n in names)]
        score = complexity(request.query, len(named))
        event_boost = s.event_time_boost if TEMPORAL_CUES.search(request.query) else 0.0
        gather = not filters.k and bool(GATHER_CUES.search(request.query))
        widest = gather or bool(LIST_CUES.search(request.query) or ADVICE_CUES.search(request.query))
        k = min(filters.k, s.k_max) if filters.k else (s.k_max if widest else k_for(score, s.k_min, s.k_max))
        flt = SymbolicFilter(
            names=tuple(names),
            first_day=first_day,
            last_day=last_day,
            stated_before=as_of,
            active_only=not filters.include_archived,
            # a date in the question may be when it was said ("I mentioned ... a couple of days
            # ago", "what did I tell you last week"); the API's since/until are event time only
            or_stated=not explicit_range,
        )
        # With a person filter, part of the semantic pool is filtered out afterwards: fetch more.
        pool = max(s.candidate_pool, k * 3) * (2 if names else 1)

        # Unit vectors come from the sentences as said ("I made a bowl"), without the speaker's name;
        # the person filter already holds the names, so the query is embedded without them too.
        stripped = _without(request.query, named)
        # embedded while the BM25 side already searches (services mode)
        qvec = self.fan_out.later(lambda: self.embedder.encode([stripped])[0])
        asked = asked_role(request.query)
        weight = fusion_weight(asked, s)
        fetched: dict[str, MemoryUnit] = {}  # units read while ranking, not read again to select
        wide = (
            replace(flt, first_day=None, last_day=None)
            if first_day is not None and not explicit_range
            else None
        )

        def ranking() -> tuple[list[tuple[str, float]], float]:
            return self._ranking(tenant, stripped, qvec, pool, flt, wide, fetched, weight)

        def buffered() -> list[BufferedTurn]:
            return self._fresh_turns(tenant, as_of) if self.buffer else []

        (ranked, best_cosine), fresh = self.fan_out.both(ranking, buffered)
        recent = self._buffer_hits(tenant, fresh, request.query, qvec(), names, weight, best_cosine)
        if explicit_range or (filters.kinds and MemoryKind.FACT not in filters.kinds):
            recent = {}  # a recent turn has no event time yet, and is a statement (a fact)
        if filters.sessions:
            recent = {uid: hit for uid, hit in recent.items() if hit[0].session_id in filters.sessions}
        if recent:
            ranked = sorted(
                [*ranked, *((uid, sc) for uid, (_, sc) in recent.items())], key=lambda kv: (-kv[1], kv[0])
            )
        replaced: dict[str, MemoryUnit] = {}
        known = {**fetched, **{uid: u for uid, (u, _) in recent.items()}}
        boosts = Boosts(
            event=event_boost,
            speakers=frozenset(names),
            speaker=s.speaker_boost,
            asked=asked,
            role=s.role_boost,
            places=asked_places(request.query) if asked == Role.ASSISTANT else frozenset(),
        )
        per_message = s.gather_units_per_message if gather else s.units_per_message
        chosen = self._select(tenant, ranked, k, known, filters, as_of, replaced, boosts, per_message)
        if not gather:
            chosen += self._siblings(tenant, chosen, filters, request.query)
        plan = None if filters.kinds or explicit_range else PLANS.get(question_kind(request.query))
        derived: list[tuple[MemoryUnit, float]] = []
        if plan is not None:
            parts = aspects(request.query) if any(lv.diverse for lv in plan.levels) else []
            vecs: list[np.ndarray] = list(self.embedder.encode(parts)) if parts else []
            search = Searches(
                self.lexical,
                self.vectors,
                tenant,
                as_of,
                s.store_expression_terms,
                request.query,
                qvec(),
                tuple(zip(parts, vecs, strict=True)),
            )
            derived = gather_derived(search, plan)
        return self._answer(request, score, k, chosen, replaced, gather, derived, plan)

    def _answer(
        self,
        request: QueryRequest,
        score: float,
        k: int,
        chosen: list[tuple[MemoryUnit, float]],
        replaced: dict[str, MemoryUnit],
        gather: bool = False,
        derived: list[tuple[MemoryUnit, float]] | None = None,
        plan: Plan | None = None,
    ) -> QueryResult:
        """The chosen memories that fit the token budget, and their context (a question that gathers
        mentions gets shorter ones: half the per-memory cap)."""
        s = self.settings
        notes = update_notes([u for u, _ in chosen], replaced)
        per_unit = s.context_unit_tokens // 2 if gather else s.context_unit_tokens
        # one count a text per query: a short memory's text is counted to decide whether it is cut, then
        # again as its line (half the counts of a query were repeats)
        budget = Budget(
            s.context_tokens, per_unit, cache(partial(count_tokens, encoding=s.tokenizer_encoding))
        )
        render = partial(build_context, notes=notes)
        lines: list[MemoryUnit] = []
        if derived and plan is not None:  # the derived lines first, within their share
            share = Budget(int(s.context_tokens * plan.share), plan.line_tokens, budget.count)
            lines = fit([u for u, _ in derived], request.query, share, render)
            budget = replace(budget, total=s.context_tokens - budget.count(render(lines)))
        shown = fit([u for u, _ in chosen], request.query, budget, render)
        while shown and budget.count(render([*lines, *shown])) > s.context_tokens:
            shown.pop()  # the headers the two parts share were counted twice; a new one once more
        shown = [*lines, *shown]
        chosen = [*(derived or []), *chosen]
        kept = {u.id for u in shown}
        memories = [
            RetrievedMemory(
                id=u.id,
                text=u.text,
                kind=u.kind,
                event_time=u.event_time,
                stated_at=u.stated_at,
                source_ids=u.source_ids,
                score=round(sc, 4),
            )
            for u, sc in chosen
            if u.id in kept
        ]
        context = render(shown)
        return QueryResult(
            id=request.id,
            query=request.query,
            complexity=score,
            k=k,
            memories=memories,
            context=context,
            context_tokens=budget.count(context) if context else 0,
        )

    def _ranking(
        self,
        tenant: str,
        query: str,
        qvec: Callable[[], np.ndarray],
        pool: int,
        flt: SymbolicFilter,
        wide: SymbolicFilter | None,
        fetched: dict[str, MemoryUnit],
        weight: float,
    ) -> tuple[list[tuple[str, float]], float]:
        """The ranked candidates under ``flt`` and the best cosine among them. ``wide`` is ``flt``
        without the query's date: a date that matches (almost) nothing was misremembered or refers to
        when something was said rather than when it happened, and an answer without the date beats an
        empty one. With ``date_boost`` both searches run (at once) and the date is a boost."""
        s = self.settings

        def within() -> tuple[list[tuple[str, float]], float]:
            return self._search(tenant, query, qvec, pool, flt, fetched, weight)

        def without() -> tuple[list[tuple[str, float]], float]:
            assert wide is not None
            return self._search(tenant, query, qvec, pool, wide, fetched, weight)

        if wide is None:
            return within()
        if s.date_boost:
            (ranked, cosine), (anyday, anyday_cosine) = self.fan_out.both(within, without)
            return favour_within(anyday, ranked, s.date_boost), max(cosine, anyday_cosine)
        ranked, cosine = within()
        if len(ranked) >= s.k_min:
            return ranked, cosine
        anyday, anyday_cosine = without()
        return anyday, max(cosine, anyday_cosine)

    def _search(
        self,
        tenant: str,
        query: str,
        qvec: Callable[[], np.ndarray],
        pool: int,
        flt: SymbolicFilter,
        fetched: dict[str, MemoryUnit],
        weight: float,
    ) -> tuple[list[tuple[str, float]], float]:
        """Candidates from both indexes under the symbolic filter, fused with ``weight`` and ranked
        (every candidate's unit is read on the way, into ``fetched``), and the best cosine among them."""
        size = self.settings.store_expression_terms
        # Both indexes search every memory; those about the question's persons are boosted after.
        # (BM25 used to search only the memories about them: a place taken for a nickname, "the
        # Vatican" for "Caffè Vaticano", then hid every statement found by its words alone.)
        anyone = replace(flt, names=())
        # Fusion needs the units of the lexical hits that the vectors did not find (whether they
        # have a vector); selection later reads the ranked head. Where a read is a round trip
        # (services), every candidate is read now: the BM25 search returns its hits' documents,
        # and the vector hits are read while it still runs. Which are about the question's
        # persons is then decided on them. Embedded, a read is microseconds a unit and only those
        # are read, and the store's name index decides.
        parallel = self.fan_out.parallel

        def semantic_search() -> list[Hit]:
            hits = self.vectors.search(tenant, qvec(), pool, anyone)
            if parallel:
                self._read(tenant, [h.id for h in hits], fetched)
            return hits

        semantic, lexical = self.fan_out.both(
            semantic_search,
            lambda: batched.search(self.lexical, tenant, query, pool, anyone, size, read=parallel),
        )
        fetched.update((h.id, h.unit) for h in lexical if h.unit is not None)
        ids = list(dict.fromkeys([*(h.id for h in semantic), *(h.id for h in lexical)]))
        seen = {h.id for h in semantic}
        if parallel:
            about_ids = {uid for uid in ids if uid in fetched and about_any(fetched[uid], flt.names)}
        else:
            self._read(tenant, [h.id for h in lexical if h.id not in seen], fetched)
            about_ids = (
                batched.ids_with_names(self.lexical, tenant, ids, list(flt.names), size)
                if flt.names
                else set()
            )
        words_only = {
            h.id for h in lexical if h.id not in seen and h.id in fetched and not fetched[h.id].has_vector
        }
        best_cosine = max((h.score for h in semantic), default=0.0)
        fused = fuse(semantic, lexical, words_only, weight, self.settings.words_only_cosine_factor)
        for uid in about_ids & fused.keys():
            fused[uid] += self.settings.person_boost
        return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0])), best_cosine

    def _read(self, tenant: str, ids: list[str], fetched: dict[str, MemoryUnit]) -> None:
        """The units of these ids not read yet, into ``fetched`` (without their message)."""
        unread = [uid for uid in ids if uid not in fetched]
        fetched.update((u.id, u) for u in self.lexical.get(tenant, unread, with_context=False))

    def _fresh_turns(self, tenant: str, as_of: datetime) -> list[BufferedTurn]:
        """The buffered turns said by ``as_of`` that no memory unit comes from yet."""
        assert self.buffer is not None
        turns = [t for t in self.buffer.recent(tenant) if t.vector and t.ts <= as_of]
        if not turns:
            return []
        indexed = self.lexical.sources_with_units(tenant, [t.message_id for t in turns])
        return [t for t in turns if t.message_id not in indexed]

    def _buffer_hits(
        self,
        tenant: str,
        fresh: list[BufferedTurn],
        query: str,
        qvec: np.ndarray,
        names: list[str],
        w: float,
        best_cosine: float,
    ) -> dict[str, tuple[MemoryUnit, float]]:
        """Recent turns not yet indexed, scored like memories: cosine (as its share of the best, the
        memories' ``best_cosine`` included) and the share of the query's terms they hold; a turn
        whose score by its raw cosine is below ``buffer_min_score`` is not a match at all."""
        if not fresh:
            return {}
        terms = set(query_terms(query))
        cosines = [float(np.dot(qvec, np.asarray(t.vector, dtype=np.float32))) for t in fresh]
        top = max([best_cosine, *cosines])
        hits: dict[str, tuple[MemoryUnit, float]] = {}
        for t, cosine in zip(fresh, cosines, strict=True):
            text = f"{t.speaker}: {t.text}"
            overlap = len(terms & set(query_terms(text))) / len(terms) if terms else 0.0
            if w * max(cosine, 0.0) + (1 - w) * overlap >= self.settings.buffer_min_score:
                score = w * share(cosine, top) + (1 - w) * overlap
                if names and names_in_text(text, names):
                    score += self.settings.person_boost
                uid = f"buffer:{t.message_id}"
                # dated like a memory: "yesterday" said a moment ago is a day, not a word
                dated, anchors = anchor_text(text, t.ts, past=bool(_PAST.search(text)))
                unit = MemoryUnit(
                    id=uid,
                    tenant_id=tenant,
                    text=dated,
                    source_ids=[t.message_id],
                    stated_at=t.ts.isoformat(),
                    event_time=anchors[0].value if anchors else None,
                    speaker=t.speaker,
                    role=t.role,
                    session_id=t.session_id,
                )
                hits[uid] = (unit, score)
        return hits

    def _absorbed(self, unit: MemoryUnit, kept: list[tuple[MemoryUnit, float]]) -> bool:
        """Whether ``unit`` nearly repeats a memory already in the context, which then takes its
        messages (replaced in ``kept``): a fact said twice was said in both, and the memory shown
        for it names both as its provenance."""
        for i, (chosen, score) in enumerate(kept):
            if near_duplicate(unit.text, chosen.text, self.settings.dedupe_similarity):
                kept[i] = (with_sources(chosen, unit.source_ids), score)
                return True
        return False

    def _siblings(
        self, tenant: str, chosen: list[tuple[MemoryUnit, float]], filters: QueryFilters, query: str
    ) -> list[tuple[MemoryUnit, float]]:
        """The other active statements of the chosen memories' messages, each with the score of the
        memory that brought it. A short message's statements are each other's context and come in
        their order; of a long one (``SHORT_MESSAGE_STATEMENTS`` others or more: a list, a plan) only those
        sharing a word with the question come, best first: the rest is another topic."""
        limit = self.settings.sibling_units
        if not limit or not chosen:
            return []
        have = {u.id for u, _ in chosen}
        sources = list(dict.fromkeys(u.source_ids[0] for u, _ in chosen))  # a unit's own message
        by_source: dict[str, list[MemoryUnit]] = {}
        for unit in self.lexical.units_from_sources(tenant, sources, with_context=False):
            if unit.id not in have and unit.kind not in DERIVED_KINDS and _allowed(unit, filters):
                by_source.setdefault(unit.source_ids[0], []).append(unit)
        terms = set(query_terms(query))
        added: list[tuple[MemoryUnit, float]] = []
        for parent, score in chosen:
            for unit in _sibling_order(by_source.pop(parent.source_ids[0], []), terms):
                if self._absorbed(unit, chosen) or self._absorbed(unit, added):
                    continue
                added.append((unit, score))
                if len(added) == limit:
                    return added
        return added

    def _current(self, tenant: str, units: dict[str, MemoryUnit], as_of: datetime) -> dict[str, MemoryUnit]:
        """Superseded memory id -> the memory current as of ``as_of`` (the end of its chain of
        updates, each stated by then); memories not superseded by then are left out."""
        known = dict(units)
        current: dict[str, MemoryUnit] = {}
        frontier = {uid: u for uid, u in units.items() if u.superseded_by}
        for _ in range(MAX_UPDATE_HOPS):
            missing = [u.superseded_by for u in frontier.values() if u.superseded_by not in known]
            known.update(
                (u.id, u) for u in self.lexical.get(tenant, [m for m in missing if m], with_context=False)
            )
            step: dict[str, MemoryUnit] = {}
            for old_id, at in frontier.items():
                newer = known.get(at.superseded_by or "")
                if newer is None or newer.status != MemoryStatus.ACTIVE:
                    continue
                if datetime.fromisoformat(newer.stated_at) > as_of:
                    continue  # not changed yet at the time of the question
                current[old_id] = newer
                if newer.superseded_by:
                    step[old_id] = newer
            frontier = step
            if not frontier:
                break
        return current

    def _rank_current_first(
        self,
        tenant: str,
        head: list[tuple[str, float]],
        units: dict[str, MemoryUnit],
        as_of: datetime,
        replaced: dict[str, MemoryUnit],
    ) -> list[tuple[str, float]]:
        """A superseded memory gives its place to the current one and drops to
        ``superseded_weight`` of its score (still there: the history may be the question)."""
        replaced.update(self._current(tenant, units, as_of))
        if not replaced:
            return head
        best: dict[str, float] = {}
        for uid, sc in head:
            newer = replaced.get(uid)
            if newer is not None:
                units.setdefault(newer.id, newer)
                best[newer.id] = max(best.get(newer.id, 0.0), sc)
                sc *= self.settings.superseded_weight
            best[uid] = max(best.get(uid, 0.0), sc)
        return sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))

    def _select(
        self,
        tenant: str,
        ranked: list[tuple[str, float]],
        k: int,
        known: dict[str, MemoryUnit] | None = None,
        filters: QueryFilters | None = None,
        as_of: datetime | None = None,
        replaced: dict[str, MemoryUnit] | None = None,
        boosts: Boosts | None = None,
        per_message: int | None = None,
    ) -> list[tuple[MemoryUnit, float]]:
        """The first ``k`` of the ranked head that pass the filters; ``known`` holds the units this
        query already has (its buffered turns, those read while ranking), not read again."""
        head = ranked[: k * SELECT_HEAD_FACTOR]
        cap = per_message or self.settings.units_per_message
        units = {
            u.id: u
            for u in self.lexical.get(
                tenant, [uid for uid, _ in head if uid not in (known or {})], with_context=False
            )
        }
        units.update(known or {})
        if boosts is not None:
            head = boosts.apply(head, units)
        if as_of is not None and replaced is not None:
            head = self._rank_current_first(tenant, head, units, as_of, replaced)
        chosen: list[tuple[MemoryUnit, float]] = []
        taken: dict[str, int] = {}
        for uid, sc in head:
            unit = units.get(uid)
            if unit is None or (filters is not None and not _allowed(unit, filters)):
                continue
            if self._absorbed(unit, chosen) or _over_message_cap(unit, taken, cap):
                continue
            chosen.append((unit, sc))
            if len(chosen) == k:
                break
        return chosen


def _sibling_order(units: list[MemoryUnit], terms: set[str]) -> list[MemoryUnit]:
    """A short message's statements (fewer than ``SHORT_MESSAGE_STATEMENTS``) in their order; a long
    message's that share a question word, the most shared first."""
    if len(units) < SHORT_MESSAGE_STATEMENTS:
        return sorted(units, key=lambda u: u.id)
    shared = [(len(terms & set(query_terms(u.text))), u.id, u) for u in units]
    return [u for n, _, u in sorted(shared, key=lambda x: (-x[0], x[1])) if n > 0]


def _over_message_cap(unit: MemoryUnit, taken: dict[str, int], cap: int) -> bool:
    """Whether the context already holds ``cap`` memories of this unit's message (a long answer
    would otherwise fill it with its own statements, and crowd out the other sessions)."""
    source = unit.source_ids[0] if unit.source_ids else unit.id
    if taken.get(source, 0) >= cap:
        return True
    taken[source] = taken.get(source, 0) + 1
    return False


def _allowed(unit: MemoryUnit, filters: QueryFilters) -> bool:
    """Whether the filters' kinds, sessions, persons and archive choice admit ``unit``."""
    if filters.kinds and unit.kind not in filters.kinds:
        return False
    if filters.sessions and unit.session_id not in filters.sessions:
        return False
    if filters.persons and not _about_any(unit, [p.lower() for p in filters.persons if p.strip()]):
        return False  # an explicit filter restricts; names found in the question's words only boost
    return filters.include_archived or unit.status == MemoryStatus.ACTIVE
