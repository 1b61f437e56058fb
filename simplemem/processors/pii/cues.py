"""Values that a cue word introduces: "my policy number is PLC-5521-884-12", "passport no. 547219830".

A number or code alone says little (4821 meters, an order total, a year); the words before it say
what it is. A :class:`CueRecognizer` matches cue, connector and value and reports the value only,
scored above what the generic recognizers give the same digits (a phone number with its context word
"number" reaches 0.75), so the cue's reading wins an overlap and names the placeholder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from presidio_analyzer import AnalysisExplanation, LocalRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from spacy.tokens import Doc

# Above a phone number with its context boost (0.4 + 0.35), below the self-evident secret formats.
CUED_SCORE = 0.85
ID_MIN_CHARS = 4
BARE_ID_MIN_DIGITS = 9  # more than a date's eight (2024-03-15)
ATTRIBUTE_PATH = re.compile(r"[A-Za-z]\.[A-Za-z]")
# Between cue and value, in prose: "is", ":", ", which is", "? It's", "as" (payroll has it as ...);
# a dash only when spaced ("PIN - 4821"), not inside a value ("blue-otter-77").
PROSE = (
    r"""["']?\s*(?:(?:[,?.]\s*)?(?:it's|it\s+is|which\s+is|that's)\s+|,?\s*(?:is|was|are|as|to|reads)\s*[:=]?\s+"""
    r"""|:\s*|\s+-\s+|,\s+)"""
)
# ... and in code or config: "=", "=>", "->", "#".
EXPLICIT = rf"""(?:{PROSE}|["']?\s*(?:[=#]|=>|->)\s*)"""
# LOOSE also takes plain whitespace ("passport A1234567"), or nothing after a "#" ("Order #W88213374");
# a value glued to its cue is the rest of an identifier (password_hash, KEY_PATH).
LOOSE = rf"(?:{EXPLICIT}|\s+|(?<=#))"
# "the password for the shared drive is ...": a short aside, then an explicit connector.
ASIDE = r"\s+(?:for|to|on|of)\s+(?:[\w'.-]+\s+){0,3}?[\w'.-]+"
QUOTE_CHARS = "\"'`“”‘’"
QUOTED = r"""["'“‘`](?P<quoted>[^"'“”‘’`\n]{1,100})["'”’`]"""

# Identifier values: letters and digits, inner - / . separators, or digit groups split by spaces.
ID_VALUE = r"[A-Z0-9]+(?:(?:[-/.]|\s(?=\d+\b))[A-Z0-9]+)*"
ID_SUBJECTS = (
    "policy",
    "member",
    "membership",
    "account",
    "acct",
    "order",
    "licence",
    "license",
    "driver's license",
    "driver's licence",
    "case",
    "customer",
    "client",
    "ticket",
    "claim",
    "confirmation",
    "booking",
    "reservation",
    "tracking",
    "invoice",
    "patient",
    "employee",
    "staff",
    "student",
    "subscriber",
    "contract",
    "loan",
    "application",
    "registration",
    "card",
    "insurance",
    "medical record",
    "reference",
)
ID_QUALIFIERS = ("number", "no.", "no", "nr.", "nr", "num", "#", "id", "code", "reference", "ref")
# Cues that name an identifier on their own: "use reference INV20240117", "booking ref QX7P2M".
ID_STANDALONE = ("reference", "ref", "confirmation", "tracking", "pnr", "mrn")


def cue_alternation(cues: Iterable[str]) -> str:
    """Regex for cue phrases, longest first; words may be joined as in code (api_key, apiKey, API-KEY)."""

    def one(cue: str) -> str:
        words = [re.escape(w).replace("'", "'?") for w in cue.split()]
        return r"[\s_-]?".join(words)

    return "|".join(one(c) for c in sorted(set(cues), key=len, reverse=True))


def token_tag(artifacts: NlpArtifacts | None, start: int) -> str:
    """The fine POS tag of the token at ``start`` ("" without an analysis)."""
    doc = artifacts.tokens if artifacts is not None else None
    span = doc.char_span(start, start + 1, alignment_mode="expand") if isinstance(doc, Doc) else None
    return str(span[0].tag_) if span else ""


@dataclass(frozen=True)
class Found:
    """A candidate value: its text, whether it was quoted, whether a connector ("is", ":", "=")
    tied it to its cue, where it starts, and the text's analysis."""

    text: str
    quoted: bool
    connected: bool
    start: int
    artifacts: NlpArtifacts | None


class CueRecognizer(LocalRecognizer):
    """Reports the value after a cue (``(?P<value>...)`` or a quoted value) when ``accept`` agrees."""

    def __init__(
        self,
        entity: str,
        pattern: str,
        accept: Callable[[Found], bool] = lambda found: True,
        score: float = CUED_SCORE,
        name: str | None = None,
    ) -> None:
        self._pattern = re.compile(pattern, re.IGNORECASE)
        self._accept = accept
        self._score = score
        self._label = name or f"Cued{entity.title().replace('_', '')}Recognizer"
        super().__init__(supported_entities=[entity], name=self._label)

    def load(self) -> None:
        """Nothing to load: the pattern is compiled in the constructor."""

    def analyze(
        self, text: str, entities: Sequence[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        results = []
        for m in self._pattern.finditer(text):
            group = "quoted" if m.groupdict().get("quoted") else "value"
            if m.group(group) is None:
                continue
            between = text[m.end(1) : m.start(group)].strip(QUOTE_CHARS + " \t\n")
            found = Found(m.group(group), group == "quoted", bool(between), m.start(group), nlp_artifacts)
            if not found.text or not self._accept(found):
                continue
            results.append(
                RecognizerResult(
                    self.supported_entities[0],
                    m.start(group),
                    m.end(group),
                    self._score,
                    AnalysisExplanation(
                        self._label, self._score, textual_explanation=f"after {m.group(1)!r}"
                    ),
                )
            )
        return results


def cued(
    cues: Sequence[str] | str, value: str, connector: str = LOOSE, quoted: bool = False, aside: bool = False
) -> str:
    """The pattern of a cue recognizer: cue phrases (group 1, or a ready regex), connector, value."""
    cues = cues if isinstance(cues, str) else cue_alternation(cues)
    value_part = f"(?:{QUOTED}|(?P<value>{value}))" if quoted else f"(?P<value>{value})"
    between = f"(?:{ASIDE}{EXPLICIT}|{connector})" if aside else connector
    # The cue ends a word: at a non-letter ("Order #W88213374") or before one ("passwords" is no cue).
    return rf"(?<![A-Za-z])({cues})(?:(?<![A-Za-z])|(?![A-Za-z])){between}{value_part}"


def _id_shaped(found: Found) -> bool:
    """An identifier has a digit, or is a capitalised code ("QXPPZM"); words are not identifiers."""
    text = found.text
    if len(text) < ID_MIN_CHARS:
        return False
    return any(c.isdigit() for c in text) or (text.isalpha() and text.isupper())


def _code_shaped(found: Found) -> bool:
    """Without "number" or "#" after the cue ("my order is ..."), only a code is an identifier:
    letters with digits, or more digits than a date has ("my order was 1500 dollars" is an amount);
    an attribute path ("boto3.client") is code."""
    text = found.text
    digits = sum(c.isdigit() for c in text)
    has_letter = any(c.isalpha() for c in text)
    if ATTRIBUTE_PATH.search(text):
        return False
    return _id_shaped(found) and ((digits > 0 and has_letter) or digits >= BARE_ID_MIN_DIGITS)


def id_number_recognizers() -> list[CueRecognizer]:
    """Policy, member, account, order, licence, case... numbers: the identifier after the cue."""
    subjects = cue_alternation(ID_SUBJECTS)
    qualifiers = "|".join(re.escape(q) for q in ID_QUALIFIERS)
    cues = rf"(?:{subjects})\s*(?:{qualifiers})|{cue_alternation(ID_STANDALONE)}"
    return [
        CueRecognizer("ID_NUMBER", cued(cues, ID_VALUE, aside=True), _id_shaped),
        CueRecognizer(
            "ID_NUMBER", cued(subjects, ID_VALUE, PROSE), _code_shaped, name="BareCueIdNumberRecognizer"
        ),
    ]


PASSPORT_CUES = "passport(?:\\s*(?:number|no\\.?|nr\\.?|num|#|id))?"
PASSPORT_VALUE = r"[A-Z0-9]{6,9}(?![A-Z0-9])"
PASSPORT_MIN_DIGITS = 5


def passport_recognizer() -> CueRecognizer:
    """Any passport number after a passport cue (US 9 digits, "C01X00T47", "N1234567"...)."""
    return CueRecognizer(
        "US_PASSPORT",
        cued(PASSPORT_CUES, PASSPORT_VALUE),
        lambda f: sum(c.isdigit() for c in f.text) >= PASSPORT_MIN_DIGITS,
    )


SSN_CUES = r"ssn|social(?:\s+security)?(?:\s*(?:number|no\.?|#))?"
SSN_VALUE = r"\d{3}(?P<sep>[- ]?)\d{2}(?P=sep)\d{4}(?!\d)"
SSN_NEVER_ISSUED = ("000", "666")
SSN_ITIN_AREA = "9"


def _issued_ssn(found: Found) -> bool:
    """SSA rules: no 000, 666 or 9xx area (9xx are ITINs), no 00 group, no 0000 serial."""
    digits = "".join(c for c in found.text if c.isdigit())
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return (
        area not in SSN_NEVER_ISSUED
        and not area.startswith(SSN_ITIN_AREA)
        and group != "00"
        and serial != "0000"
    )


def ssn_recognizer() -> CueRecognizer:
    """SSNs after their cue, with or without separators ("my ssn is 536228714")."""
    return CueRecognizer("US_SSN", cued(SSN_CUES, SSN_VALUE), _issued_ssn)
