"""The derived memory a question gets before its statements (coarse to fine).

A question's form decides which derived lines it reads (``processors/lifecycle/derived.py`` says how
they are made) and what share of the context's budget they may take; the statements fill the rest.

- **order** ("in what order did I ...", "what came first", "the sequence of ...") and **summary**
  ("summarize ...", "give me an overview", "how has my project progressed") read the timeline: the
  dated lines of what the user brought up that match the question, from the sessions that hold the
  subject, each as a digest (the words that carry its subject), shown in date order; a noun that names
  an order ("timeline", "sequence") asks for one only outside a request for a summary ("a summary of
  how my project timeline changed" is a summary: the noun is part of its subject);
- **list** ("how many ...", "list all ...", "which ... have I") reads a digest of the moments on its
  subject (a count is spread over many messages; in a conversation with an assistant) beside the
  statements that hold the details; **lookup** reads, asked in the first person, the profile lines
  close to it: the statements hold its answer (a timeline line repeats one and costs its tokens);
- **advice** (a request for help, code or a recommendation: "can you show me how to ...", "what would
  you suggest", "how should I ...") reads the user's standing instructions, the preferences close to
  the task and what the user asked before on the subject (a dozen requests, as digests), so the answer
  follows them;
- **recall** ("how did you recommend ...", "what did you suggest for ...", "what steps did you give me
  ...": what the assistant said before) reads the closest exchanges as digests, each citing the request
  and the answer it recalls; asked in the past tense, it is not a request for new advice;
- **history** ("have I ever ...", "did we ...": whether something came up) reads a dozen timeline lines
  as digests (negations kept): the answer is in what the user brought up, and a contradiction shows
  as two such lines;
- **duration** reads only the standing instructions close to the question in meaning (every form
  does: "always format dates as ... when I ask about deadlines" governs "when is it due?").

Limits: the kinds are read from English question forms; a question that orders or summarises without
them ("what did we do on the budget app?") is a lookup. An instruction that matches the task in
neither words nor meaning (a formatting rule asked for by a question about something else) is not
shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from itertools import zip_longest

import numpy as np

from simplemem.processors.lifecycle.derived import compact, is_exchange
from simplemem.processors.retrieval.forms import QuestionForm, answer_kind
from simplemem.processors.retrieval.threads import NO_THREADS, Threads, focused_sessions
from simplemem.processors.stores import batched
from simplemem.processors.stores.protocols import Hit, LexicalStore, SymbolicFilter, VectorStore
from simplemem.schemas.memory import MemoryKind, MemoryUnit

# "..., the tomatoes or the marigolds?": a question that weighs alternatives names two subjects, which
# may lie in two threads
_ALTERNATIVES = re.compile(r"\bor\b", re.IGNORECASE)


def reads_one_subject(query: str, plan: DerivedPlan) -> bool:
    """Whether ``query`` reads one thread (:mod:`.threads`): it reads a subject's whole span (an order,
    a summary) and weighs no alternatives."""
    return any(level.whole_sessions for level in plan.levels) and not _ALTERNATIVES.search(query)


@dataclass(frozen=True)
class Level:
    """What a question form reads of the derived memory: which kinds, at most how many lines, each
    cut to ``line_tokens``; ``min_cosine``: how close in meaning a line must be to be shown (0: found
    by its words is enough); ``diverse``: lines unlike the ones already taken are preferred (a
    timeline should cover the subject, not repeat its most-matching moment)."""

    kinds: tuple[MemoryKind, ...]
    lines: int
    line_tokens: int
    min_cosine: float = 0.0
    diverse: bool = False
    request_words: int = 0  # >0: a timeline line is shown shorter: this many words of its request,
    reply_words: int = 0  # and this many of its answer (none: the request alone, citing only it)
    first_person: bool = False  # only for a question in the first person (about the user's own life)
    digest: bool = False  # the request and answer words counted are those that carry the subject
    # only the lines of a request and its answer: between people a timeline line is one message's
    # first words, which its statements already hold
    exchanges_only: bool = False
    # of lines that say the same thing in other values ("I use Flask 2.3" then "I use Flask 3.0"),
    # only the latest stated: a profile shows what holds now
    latest_only: bool = False
    # >0: only the best ranked this many lines get ``request_words`` and ``reply_words``; the others
    # are shorter (``tail_words``: of the request, and of the answer): the moments closest to the
    # question are read, the rest only located, and a long span fits
    head_lines: int = 0
    tail_words: tuple[int, int] = (0, 0)
    # with ``diverse``: every line of the sessions the subject was talked about is a candidate, not
    # only those the search found (an order or a summary is as good as the span it covers), when
    # they are at most three times ``lines``
    whole_sessions: bool = False
    # the words of what the question asks for join its words in the lexical search (:func:`answer_kind`)
    answer_kind: bool = False


@dataclass(frozen=True)
class DerivedPlan:
    """The levels a question reads, and the share of the context's tokens they may take together."""

    levels: tuple[Level, ...]
    share: float

    @property
    def line_tokens(self) -> int:
        return max(level.line_tokens for level in self.levels)


# A timeline line is shown whole (it cites its request and its answer: cut, it would cite what it no
# longer shows), so its token cap is above any line's length.
_TIMELINE = Level((MemoryKind.TIMELINE,), 20, 96, diverse=True)
# A standing instruction governs any question it matches ("Always format dates as ... when I ask about
# deadlines" answers "When is the submission due?"), whatever the question's form: every plan reads
# the few closest in meaning.
_INSTRUCTIONS = Level((MemoryKind.INSTRUCTION,), 2, 48, min_cosine=0.3, answer_kind=True)
# A lookup or a duration reads little else of the derived memory, and its answer is often a date, an
# amount or a name whose form an instruction sets in other words than the question's ("Always format
# dates as MM/DD/YYYY when I ask about scheduling details" governs "When is my meeting at the
# studio?"): it reads one more instruction, matching in meaning more loosely.
_LOOSE_INSTRUCTIONS = replace(_INSTRUCTIONS, lines=3, min_cosine=0.2)
_ADVICE_LEVELS = (
    replace(_INSTRUCTIONS, lines=3, min_cosine=0.0),
    Level((MemoryKind.PREFERENCE,), 2, 48, min_cosine=0.3),
    # what the user asked before on the subject tailors advice as much as what they said they like; a
    # request that weighs several things ("considering my deadlines, the call and my interview notes")
    # draws on many of them: a dozen as digests of their request cite them in the tokens three whole
    # lines took (between people a line is one message's first words, which its statements hold)
    replace(
        _TIMELINE, lines=12, request_words=6, min_cosine=0.4, diverse=False, digest=True, exchanges_only=True
    ),
)
# A count or a list is spread over many messages: a digest of the moments on its subject cites them
# in a few tokens each (a statement costs dozens), so they may take most of the context, beside the
# statements that hold the details.
_LIST_TIMELINE = replace(_TIMELINE, lines=60, request_words=4, digest=True, exchanges_only=True)
# An order or a summary reads a subject's whole span: digests, every line of its thread's sessions
_SPAN = replace(_TIMELINE, digest=True, whole_sessions=True)
PLANS: dict[QuestionForm, DerivedPlan] = {
    # an order or a summary is as good as the span it covers: many short lines, not a few whole ones
    # (in digests: the words that carry each moment's subject, not how it was asked); the moments
    # closest to the question in more words, the others only located, in two words each (of the request;
    # a summary's with one of the answer, and only its ten closest in more: its answer is the whole
    # course, not the moments that match the question best): a subject's whole span, every moment the
    # user brought it up, fits the budget, where three words each left a third of it out
    QuestionForm.ORDER: DerivedPlan(
        (
            _INSTRUCTIONS,
            replace(_SPAN, lines=140, request_words=5, head_lines=20, tail_words=(2, 0)),
        ),
        0.95,
    ),
    QuestionForm.SUMMARY: DerivedPlan(
        (
            _INSTRUCTIONS,
            replace(_SPAN, lines=120, request_words=4, reply_words=3, head_lines=10, tail_words=(2, 1)),
        ),
        0.95,
    ),
    # whether something came up (and a contradiction: two lines that disagree): a dozen moments on the
    # subject as digests, negations kept, rather than six whole lines
    QuestionForm.HISTORY: DerivedPlan(
        (_INSTRUCTIONS, replace(_TIMELINE, lines=12, request_words=10, reply_words=4, digest=True)), 0.5
    ),
    # the exchanges that hold what was said, closest in meaning first (not spread over the subject)
    QuestionForm.RECALL: DerivedPlan(
        (
            _INSTRUCTIONS,
            replace(
                _TIMELINE,
                lines=8,
                min_cosine=0.3,
                diverse=False,
                request_words=10,
                reply_words=8,
                digest=True,
            ),
        ),
        0.4,
    ),
    # a count or a list: the standing instructions close to it and the moments on its subject, in most
    # of the budget (above); a lookup is answered by statements: of the derived memory it reads the
    # standing instructions close to it and, asked in the first person, what the user said of themself
    QuestionForm.LIST: DerivedPlan((_INSTRUCTIONS, _LIST_TIMELINE), 0.6),
    QuestionForm.ADVICE: DerivedPlan(_ADVICE_LEVELS, 0.5),
    QuestionForm.LOOKUP: DerivedPlan(
        (
            _LOOSE_INSTRUCTIONS,
            Level((MemoryKind.PROFILE,), 2, 48, min_cosine=0.35, first_person=True, latest_only=True),
        ),
        0.25,
    ),
    QuestionForm.DURATION: DerivedPlan((_LOOSE_INSTRUCTIONS,), 0.15),
}
POOL = 40  # candidates each index returns before fusion
DIVERSE_POOL = 80  # the same for a diverse level (an order or a summary shows dozens of moments)
RANK_CONSTANT = 60  # reciprocal-rank fusion's constant
DIVERSITY = 0.5  # with ``diverse``: the weight of a candidate's likeness to the lines already taken


def _fused(semantic: list[Hit], words: list[Hit]) -> dict[str, float]:
    """Reciprocal-rank fusion of the two indexes' hits."""
    fused: dict[str, float] = {}
    for hits in (semantic, words):
        for rank, hit in enumerate(hits):
            fused[hit.id] = fused.get(hit.id, 0.0) + 1.0 / (RANK_CONSTANT + rank)
    return fused


def diverse_order(
    ranked: list[str], relevance: dict[str, float], vectors: dict[str, np.ndarray], n: int
) -> list[str]:
    """``n`` of ``ranked`` by maximal marginal relevance: each next one the most relevant (scaled to
    [0, 1]) less ``DIVERSITY`` times its highest cosine to those already taken (ties: the earlier
    ranked)."""
    ids = [uid for uid in ranked if uid in vectors]
    if not ids:
        return []
    top = max(relevance.values(), default=0.0) or 1.0
    matrix = np.stack([np.asarray(vectors[uid], dtype=np.float32) for uid in ids])
    # each pair's likeness already weighed (the same numbers: a positive weight keeps their order)
    likeness = (matrix @ matrix.T).astype(np.float64) * DIVERSITY
    gain = np.array([relevance[uid] / top for uid in ids], dtype=np.float64)
    closest = np.zeros(len(ids))  # each candidate's highest weighed likeness to the ones taken
    taken_mark = np.zeros(len(ids))  # +inf once taken: taken away from its score
    scores = gain.copy()  # gain less the closest likeness, -inf once taken (updated in place)
    taken: list[int] = []
    for _ in range(min(n, len(ids))):
        best = int(np.argmax(scores))
        taken.append(best)
        taken_mark[best] = np.inf
        np.maximum(closest, likeness[best], out=closest)
        np.subtract(gain, closest, out=scores)
        np.subtract(scores, taken_mark, out=scores)
    return [ids[i] for i in taken]


Aspect = tuple[str, np.ndarray]  # an aspect of the question and its vector


@dataclass(frozen=True)
class Searches:
    """Where the derived lines are searched, and the question as searched: whole, and its aspects."""

    lexical: LexicalStore
    vectors: VectorStore
    tenant: str
    as_of: datetime
    expression_terms: int
    query: str
    qvec: np.ndarray
    # the question's aspects, each with its vector, or what gives them once they are embedded: the
    # searches of the question whole run first, while its aspects may still be being embedded
    parts: Sequence[Aspect] | Callable[[], Sequence[Aspect]] = ()
    threads: Threads = NO_THREADS  # the tenant's sessions by subject (:mod:`.threads`)

    def aspects(self) -> Sequence[Aspect]:
        """The question's aspects with their vectors (waiting for them if they are being embedded)."""
        return self.parts() if callable(self.parts) else self.parts


def _ranked(
    search: Searches, text: str, vec: np.ndarray, flt: SymbolicFilter, level: Level
) -> tuple[list[str], dict[str, float]]:
    words, governs = _words(search, text, flt, level)
    semantic = search.vectors.search(search.tenant, vec, _pool(level), flt)
    fused = _fused(semantic, words)
    cosine = {h.id: h.score for h in semantic}
    ranked = sorted(fused, key=lambda uid: (-fused[uid], uid))
    if level.min_cosine:
        ranked = [uid for uid in ranked if cosine.get(uid, 0.0) >= level.min_cosine or uid in governs]
    return ranked, fused


def _words(search: Searches, text: str, flt: SymbolicFilter, level: Level) -> tuple[list[Hit], set[str]]:
    """The level's BM25 hits for ``text`` (with the words of the kind of answer asked for, if the level
    reads them: :func:`answer_kind`), and, for a level with a floor of meaning, the lines that name
    that kind (:func:`_governing`)."""
    pool = _pool(level)
    kind = answer_kind(search.query) if level.answer_kind else ""
    words = batched.search(
        search.lexical, search.tenant, f"{text} {kind}".strip(), pool, flt, search.expression_terms
    )
    return words, _governing(search, kind, pool, flt) if level.min_cosine else set()


def _pool(level: Level) -> int:
    """The candidates each index returns for ``level`` before fusion."""
    return DIVERSE_POOL if level.diverse else POOL


def _level_filter(search: Searches, level: Level) -> SymbolicFilter:
    return SymbolicFilter(stated_before=search.as_of, derived=tuple(k.value for k in level.kinds))


def search_words(search: Searches, plan: DerivedPlan, first_person: bool, aspects: Sequence[str]) -> None:
    """Every BM25 search :func:`gather_derived` makes for ``plan`` (its diverse levels by each of
    ``aspects`` too), made now: a query whose vectors are being embedded on another core makes them
    meanwhile, and the lexical store answers them again from what they found (its ``one_query``)."""
    for level in _levels(plan, first_person):
        flt = _level_filter(search, level)
        for text in (search.query, *(aspects if level.diverse else ())):
            _words(search, text, flt, level)


def _governing(search: Searches, kind: str, pool: int, flt: SymbolicFilter) -> set[str]:
    """The lines that name the kind of answer asked for (``kind``, :func:`answer_kind`): they govern
    the answer whatever its subject, so no floor in meaning keeps them out."""
    if not kind:
        return set()
    return {
        h.id for h in batched.search(search.lexical, search.tenant, kind, pool, flt, search.expression_terms)
    }


def _round_robin(rankings: list[list[str]]) -> list[str]:
    """The rankings' heads in turn (each aspect's best, then each one's second, ...), without repeats."""
    out: dict[str, None] = {}  # ordered, and a line two rankings hold at the same rank taken once
    for row in zip_longest(*rankings):
        out.update((uid, None) for uid in row if uid is not None)
    return list(out)


SAME_FACT = 0.8  # cosine above which two profile lines state the same thing (its value may differ)


def latest(ranked: list[str], units: dict[str, MemoryUnit], vectors: dict[str, np.ndarray]) -> list[str]:
    """``ranked`` without a line that a later-stated line like it (:data:`SAME_FACT`) replaces; the
    later one takes the place of the best ranked of them."""
    kept: list[str] = []
    for uid in ranked:
        vec = vectors.get(uid)
        same = [
            i
            for i, k in enumerate(kept)
            if vec is not None and k in vectors and float(vec @ vectors[k]) >= SAME_FACT
        ]
        if not same:
            kept.append(uid)
        elif units[uid].stated_at > units[kept[same[0]]].stated_at:
            kept[same[0]] = uid
    return kept


def gather_level(search: Searches, level: Level) -> list[tuple[MemoryUnit, float]]:
    """The derived lines of ``level``'s kinds that match the question best (BM25 and the vectors,
    fused), at most ``level.lines``, best first; for a diverse level of a question with aspects, each
    aspect's best lines in turn."""
    lexical, vectors, tenant = search.lexical, search.vectors, search.tenant
    flt = _level_filter(search, level)
    ranked, fused = _ranked(search, search.query, search.qvec, flt, level)
    if level.diverse and (parts := search.aspects()):
        rankings = [_ranked(search, text, vec, flt, level) for text, vec in parts]
        for _, scores in rankings:
            for uid, score in scores.items():
                fused[uid] = max(fused.get(uid, 0.0), score)
        ranked = _round_robin([ranked, *(r for r, _ in rankings)])
    pool = ranked[: 3 * level.lines]
    units = {
        u.id: u
        for u in lexical.get(tenant, pool, with_context=False)
        if is_exchange(u) or not level.exchanges_only
    }
    pool = [uid for uid in pool if uid in units]
    if level.diverse:
        # a thread decides only what reads a subject's whole span (an order, a summary): a count
        # or a history may gather moments from several subjects
        threads = search.threads if level.whole_sessions else NO_THREADS
        sessions = focused_sessions(pool, fused, units, threads, search.qvec)
        pool = [uid for uid in pool if units[uid].session_id in sessions]
        if level.whole_sessions:
            pool += session_lines(search, level, sessions, fused, units)
        top = diverse_order(pool, fused, vectors.vectors(tenant, pool), level.lines)
    elif level.latest_only:
        top = latest(pool, units, vectors.vectors(tenant, pool))[: level.lines]
    else:
        top = pool[: level.lines]
    shown = [(units[uid], fused[uid]) for uid in top]
    if not level.request_words:
        return shown
    return [
        (compact(u, *words_of(level, rank), digest=level.digest), sc) for rank, (u, sc) in enumerate(shown)
    ]


def session_lines(
    search: Searches,
    level: Level,
    sessions: set[str | None],
    fused: dict[str, float],
    units: dict[str, MemoryUnit],
) -> list[str]:
    """The lines of ``sessions`` the search did not find, when all their lines are at most three times
    ``level.lines`` (else none): each joins ``units`` and ``fused``, where its relevance is its cosine
    to the question times the least relevance found, so that the lines found keep their lead."""
    ids = [uid for s in sorted(x for x in sessions if x) for uid in search.threads.lines_of.get(s, ())]
    if len(ids) > 3 * level.lines:
        return []
    least = min(fused.values(), default=1.0)
    read = [
        u
        for u in search.lexical.get(
            search.tenant, [uid for uid in ids if uid not in units], with_context=False
        )
        if datetime.fromisoformat(u.stated_at) <= search.as_of
        and (is_exchange(u) or not level.exchanges_only)
    ]
    vectors = search.vectors.vectors(search.tenant, [u.id for u in read])
    added = [u for u in read if u.id in vectors]
    for u in added:
        units[u.id] = u
        fused[u.id] = least * max(float(vectors[u.id] @ search.qvec), 0.0)
    return [u.id for u in added]


def words_of(level: Level, rank: int) -> tuple[int, int]:
    """How many words of its request and of its answer the ``rank``-th line of ``level`` shows."""
    if level.head_lines and rank >= level.head_lines:
        return level.tail_words
    return level.request_words, level.reply_words


def gather_derived(search: Searches, plan: DerivedPlan, first_person: bool) -> list[tuple[MemoryUnit, float]]:
    """Every level of ``plan`` in order (:func:`_levels`)."""
    return [found for level in _levels(plan, first_person) for found in gather_level(search, level)]


def _levels(plan: DerivedPlan, first_person: bool) -> list[Level]:
    """The levels of ``plan`` a question reads: those for a first-person question only if it is one."""
    return [level for level in plan.levels if first_person or not level.first_person]
