"""Knowledge updates: a newer memory that changes an attribute of the same subject supersedes the
older one (kept, with a pointer to the newer one); retrieval ranks the current one first and the
context says which is current.

The offline rule (deterministic, no model): a memory *claims* a value for (subject, attribute) when
its text matches one of the patterns below, written for the statements the decomposer produces
(pronouns already replaced by names: "Riley moved to Berlin", "Riley's new phone number is
<PHONE_NUMBER>"). Per tenant and (subject, attribute), in the order they were stated, a claim whose
value differs from the one before supersedes it.

Attributes: home (lives in, moved to, based in), job (works as/at, new job as/at, joined, hired at),
phone (phone/cell/mobile number), partner (girlfriend, boyfriend, wife, husband, partner, dating,
married, engaged; a break-up ends it) and preferences ("favourite X is", diets).

Its limits, measured by ``python -m bench.updates``:
- only these phrasings: "I packed up and went to Berlin" or "the new flat in Berlin" claims nothing;
- the subject is a name at the start of the statement or a possessive ("Riley's"): a fact about an
  unnamed person ("my boss moved to Rome") is not tracked;
- values are compared as written: "NYC" after "New York" is a change;
- phone numbers are scrubbed to ``<PHONE_NUMBER>`` before anything is stored, so every later phone
  statement supersedes the one before, even one restating the same number;
- one value per attribute: two homes at once, or "also works as", supersede each other.
The LLM decomposer, when configured, states facts in the same plain form, which this rule reads.

With ``SIMPLEMEM_UPDATE_JUDGE=llm`` a model judges the rule's candidate pairs instead of the value
comparison (simplemem.processors.lifecycle.llm_updates): the candidates are the same (consecutive claims on one
subject and attribute), so the first limit stays; the value limits ("NYC" after "New York", "also
works as") are the model's to get right. At most ``update_judge_max_pairs`` pairs per tenant run
(the newest); the rest, and any pair the model gives no valid verdict for (counted), are decided by
the value comparison. The pointers are written the same way whichever decides.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from itertools import pairwise
from typing import Protocol

from simplemem.processors.stores.protocols import LexicalStore
from simplemem.schemas.memory import MemoryKind, MemoryStatus, MemoryUnit

NAME = r"(?P<subj>[A-Z][\w'’-]*(?: [A-Z][\w'’-]*)?)"
POSSESSIVE = NAME + r"(?:'s|’s)"
PLACE = r"(?P<val>[A-Z][\w'’.-]*(?:(?:,? | de | do | da | of )[A-Z][\w'’.-]*)*)"
WORDS = r"(?P<val>[\w'’ -]+?)"
END = r"(?=[.,;!?)]|\s+(?:at|for|in|with|since|now|and|but|because|after|last|this|next)\b|$)"
NOW = r"(?:(?:now|just|finally|recently|officially|also)\s+)?"

# (attribute, pattern): the pattern names the subject (``subj``) and the value (``val``).
PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (a, re.compile(p))
    for a, p in [
        (
            "home",
            NAME
            + r" (?:is |has been )?"
            + NOW
            + r"(?i:lives?|living|settled|resides?) "
            + NOW
            + r"in "
            + PLACE,
        ),
        (
            "home",
            NAME
            + r" (?:has |had |is )?"
            + NOW
            + r"(?i:moved|moving|relocated|relocating) (?:back |over |out )?(?i:to) "
            + PLACE,
        ),
        ("home", NAME + r" (?:is |was )?" + NOW + r"(?i:based) (?:out )?(?i:in) " + PLACE),
        ("home", POSSESSIVE + r" (?i:new )?(?i:home|place|apartment|flat|house) (?i:is )?(?i:in) " + PLACE),
        ("job", NAME + r" (?:is |has been )?" + NOW + r"(?i:works?|working) (?i:as) (?:an? )?" + WORDS + END),
        ("job", NAME + r" (?:is |has been )?" + NOW + r"(?i:works?|working) (?i:at|for) " + PLACE),
        (
            "job",
            NAME
            + r" (?:is |has been )?"
            + NOW
            + r"(?i:works?|working) (?i:at|for) (?i:an? |the )"
            + WORDS
            + END,
        ),
        (
            "job",
            NAME
            + r" (?:has )?"
            + NOW
            + r"(?i:started|got|landed|accepted|took|began) (?i:a |an |the )?(?i:new )?(?i:job|position|role|gig) (?i:as an?|as|at|with) "
            + WORDS
            + END,
        ),
        (
            "job",
            NAME
            + r" (?:has )?"
            + NOW
            + r"(?i:joined|got hired at|was hired at|was hired by|is employed at) "
            + PLACE,
        ),
        ("job", POSSESSIVE + r" (?i:new )?(?i:job|position|role) (?i:is )?(?i:as an?|as|at) " + WORDS + END),
        (
            "phone",
            POSSESSIVE
            + r" (?i:new )?(?i:(?:phone|cell|mobile)(?: phone)?(?: number)?|number) (?i:is|changed to) (?P<val>\S+)",
        ),
        ("phone", NAME + r" (?:has |got )?(?i:a )?(?i:new )(?i:phone |cell |mobile )?(?i:number)(?P<val>)"),
        (
            "phone",
            r"(?i:reach|call|text|ring) " + NAME + r" (?i:on|at) (?P<val><PHONE_NUMBER>|[+\d][\d ()-]{5,})",
        ),
        (
            "partner",
            POSSESSIVE
            + r" (?i:new )?(?i:girlfriend|boyfriend|wife|husband|partner|fiancée?|spouse)(?: is)? "
            + PLACE,
        ),
        (
            "partner",
            NAME
            + r" (?:is |has been |was )?"
            + NOW
            + r"(?i:dating|seeing|engaged to|married to|going out with|started dating|got engaged to|married) "
            + r"(?:(?i:an? )(?i:guy|girl|man|woman|person) (?i:called|named) )?"
            + PLACE,
        ),
        (
            "partner",
            NAME
            + r" (?:has )?"
            + NOW
            + r"(?i:broke up with|split up with|split from|divorced|separated from) (?P<val>[A-Z][\w'’-]*)",
        ),
        (
            "favorite {thing}",
            POSSESSIVE
            + r" (?:(?i:new|current|all-time) )?(?i:favou?rite) (?P<thing>\w+(?: \w+)?) (?i:is|has become|became) (?:(?i:now) )?"
            + WORDS
            + END,
        ),
        (
            "diet",
            NAME
            + r" (?:is|went|became|has become|turned) "
            + NOW
            + r"(?P<val>(?i:vegetarian|vegan|pescatarian|gluten-free|keto|carnivore))",
        ),
    ]
]
ENDED = re.compile(r"\b(?i:broke up|split up|split from|divorced|separated)\b")


@dataclass(frozen=True)
class Claim:
    """What a memory states about one attribute of one subject."""

    subject: str  # lower-cased name
    attribute: str
    value: str  # normalised; phone values never compare equal (they are scrubbed)


SPEAKER_PREFIX = re.compile(
    r"^(?P<name>[A-Z][\w'’-]*): (?:(?i:i|we|i've|we've|i'm|we're)(?: been)? )?(?P<rest>.+)$", re.S
)
FIRST_PERSON_START = re.compile(r"^(?:I|We|I've|We've|I'm|We're)(?: been)? (?P<rest>.+)$", re.S)


def _as_statement(unit: MemoryUnit) -> str:
    """The text with its subject named: "Ava: Finally settled in Brighton" (the decomposer's form
    for a statement without a name) and "We moved to Cork" read as the speaker's."""
    m = SPEAKER_PREFIX.match(unit.text)
    if m is not None:
        rest = m.group("rest")
        return f"{m.group('name')} {rest[:1].lower()}{rest[1:]}"
    m = FIRST_PERSON_START.match(unit.text)
    if m is not None and unit.speaker:
        return f"{unit.speaker} {m.group('rest')}"
    return unit.text


def _subject(found: str, unit: MemoryUnit) -> str | None:
    """The person a match names: the whole run of capitalised words, or its last word ("Honestly
    Kai's favourite ..."); None when it is no person of the memory ("Berlin lives in ...")."""
    people = {*unit.persons, *([unit.speaker] if unit.speaker else [])}
    for candidate in (found, found.split()[-1]):
        if candidate in people:
            return candidate
    return None


def claim_of(unit: MemoryUnit) -> Claim | None:
    """The first attribute the unit's text claims a value for (facts only; code never)."""
    if unit.kind != MemoryKind.FACT:
        return None
    text = _as_statement(unit)
    for attribute, pattern in PATTERNS:
        m = pattern.search(text)
        if m is None:
            continue
        subject = _subject(m.group("subj"), unit)
        if subject is None:
            continue
        if "{thing}" in attribute:
            attribute = attribute.format(thing=m.group("thing").lower())
        value = m.group("val").strip().rstrip(".,;:!?").lower()
        if attribute == "partner" and ENDED.search(m.group(0)):
            value = f"(ended) {value}"
        if attribute == "phone":
            value = unit.id  # scrubbed: any later statement is taken as a change
        return Claim(subject.lower(), attribute, value)
    return None


@dataclass(frozen=True)
class Stated:
    """A claim with where and when it was made: all the rule keeps per memory (bounded memory)."""

    stated_at: str
    unit_id: str
    claim: Claim


def claims(units: Iterable[MemoryUnit]) -> Iterator[Stated]:
    for unit in units:
        if unit.status != MemoryStatus.ACTIVE:
            continue
        claim = claim_of(unit)
        if claim is not None:
            yield Stated(unit.stated_at, unit.id, claim)


Pair = tuple[Stated, Stated]  # (older, newer): consecutive claims on one subject and attribute
Verdicts = Mapping[tuple[str, str], bool]  # (older id, newer id) -> the newer supersedes the older


def _groups(stated: Iterable[Stated]) -> list[list[Stated]]:
    """Claims per (subject, attribute), each group in the order they were stated."""
    by_key: dict[tuple[str, str], list[Stated]] = {}
    for s in stated:
        by_key.setdefault((s.claim.subject, s.claim.attribute), []).append(s)
    for group in by_key.values():
        group.sort(key=lambda s: (datetime.fromisoformat(s.stated_at), s.unit_id))
    return list(by_key.values())


def candidate_pairs(stated: Iterable[Stated]) -> list[Pair]:
    """The pairs the rule decides: each claim and the next one on its subject and attribute."""
    return [pair for group in _groups(stated) for pair in pairwise(group)]


def supersessions(stated: Iterable[Stated], verdicts: Verdicts | None = None) -> dict[str, str]:
    """Older memory id -> the newer one that changed its value (pure; the same input, the same map).

    A restatement of the same value supersedes nothing: both say what is current. ``verdicts``
    (a judge's, per candidate pair) replace the value comparison for the pairs they name."""
    verdicts = verdicts or {}
    out: dict[str, str] = {}
    for group in _groups(stated):
        for older, newer in pairwise(group):
            changed = verdicts.get((older.unit_id, newer.unit_id))
            if changed is None:
                changed = older.claim.value != newer.claim.value
            if changed:
                out[older.unit_id] = newer.unit_id
        # a value restated after it was superseded is current again: only the latest run counts
        # (not where a judge said a statement of the same value supersedes it)
        latest = group[-1].claim.value
        value = {s.unit_id: s.claim.value for s in group}
        for s in group:
            if s.claim.value == latest and s.unit_id in out and value[out[s.unit_id]] != latest:
                del out[s.unit_id]
    return out


def rewritten(units: Iterable[MemoryUnit], pointers: dict[str, str]) -> list[MemoryUnit]:
    """The units whose pointers change: ``superseded_by`` on the older ones, ``supersedes`` on the
    newer ones; units already right are left out."""
    units = list(units)
    supersedes: dict[str, list[str]] = {}
    for old, new in pointers.items():
        supersedes.setdefault(new, []).append(old)
    out = []
    for u in units:
        want_by = pointers.get(u.id)
        want_list = sorted(supersedes.get(u.id, []))
        if u.superseded_by != want_by or sorted(u.supersedes) != want_list:
            out.append(u.model_copy(update={"superseded_by": want_by, "supersedes": want_list}))
    return out


@dataclass
class Judged:
    """A judge's verdicts on candidate pairs, and how many pairs it gave none for (fallbacks)."""

    verdicts: dict[tuple[str, str], bool] = field(default_factory=dict)
    fallbacks: int = 0


class UpdateJudge(Protocol):
    """Decides candidate pairs in place of the value comparison (an LLM: simplemem.processors.lifecycle.llm_updates)."""

    def judge(self, tenant_id: str, pairs: Sequence[Pair], lexical: LexicalStore, batch: int) -> Judged: ...


@dataclass
class UpdateRun:
    changed: list[MemoryUnit] = field(default_factory=list)  # units whose pointers changed (written)
    judged: int = 0  # pairs a judge gave a verdict for
    fallbacks: int = 0  # pairs a judge was asked about and gave no valid verdict for


def update_tenant(
    tenant_id: str, lexical: LexicalStore, batch: int, judge: UpdateJudge | None = None
) -> UpdateRun:
    """Apply the rule to a tenant's active memories, read ``batch`` at a time (only the claims are
    kept in between); writes the units whose pointers changed. Idempotent (with the offline rule;
    a judge's verdicts are as stable as the judge)."""
    stated: list[Stated] = []
    pointed: set[str] = set()
    for page in lexical.iter_units(tenant_id, batch):
        stated += claims(page)
        pointed.update(u.id for u in page if u.superseded_by or u.supersedes)
    judged = judge.judge(tenant_id, candidate_pairs(stated), lexical, batch) if judge else Judged()
    pointers = supersessions(stated, judged.verdicts)
    touched = sorted(pointed | set(pointers) | set(pointers.values()))
    changed: list[MemoryUnit] = []
    for start in range(0, len(touched), batch):
        changed += rewritten(lexical.get(tenant_id, touched[start : start + batch]), pointers)
    lexical.upsert(changed)  # status and vectors unchanged: the lexical store holds the pointers
    return UpdateRun(changed, len(judged.verdicts), judged.fallbacks)
