"""The recognizers the scrubber registers: Presidio's, adjusted for chat, plus our own.

Adjusted, at the cause of what they got wrong in chat:

- e-mail: the bundled public-suffix list (no download at run time);
- cards: 2-series Mastercard (2221-2720), which Presidio's card pattern predates; Luhn-checked;
- IP addresses: not after a version word ("Version 1.2.3.4");
- UK NHS numbers: only after an NHS cue. Ten digits pass its checksum one time in eleven, US phone
  numbers among them (415-555-0199);
- phone numbers: not after an ISBN-like cue (ISBN-10s parse as phone numbers);
- IBANs: with the class's case-sensitive pattern. The registry's configuration compiles every
  pattern case-insensitively, and an IBAN followed by a word ("AT61 ... 3201 please") then runs on
  into the word's letters, fails its checksum and is lost.

Ours: secrets (:mod:`simplemem.processors.pii.secrets`), values after a cue word (:mod:`simplemem.processors.pii.cues`)
and street addresses (:mod:`simplemem.processors.pii.address`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import tldextract
from presidio_analyzer import EntityRecognizer, Pattern, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts
from presidio_analyzer.predefined_recognizers import (
    CreditCardRecognizer,
    EmailRecognizer,
    IbanRecognizer,
    IpRecognizer,
    NhsRecognizer,
    PhoneRecognizer,
)

from simplemem.processors.pii.address import StreetAddressRecognizer
from simplemem.processors.pii.cues import id_number_recognizers, passport_recognizer, ssn_recognizer
from simplemem.processors.pii.secret_formats import SecretFormatRecognizer, UrlPasswordRecognizer
from simplemem.processors.pii.secrets import secret_cue_recognizers

_OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

# What must (NHS) or must not (IP, phone) come just before a match, read up to the match.
VERSION_BEFORE = re.compile(
    r"\b(?:version|ver|v|release|build|firmware|patch|revision|rev)\.?\s*(?:(?:is|to|=|:)\s*)?\Z", re.I
)
CATALOGUE_BEFORE = re.compile(r"\b(?:isbn|issn|sku|upc|ean|doi)(?:-1[03])?\s*[:#]?\s*\Z", re.I)
NHS_BEFORE = re.compile(r"\b(?:nhs|health)\b[^.!?\n]{0,30}\Z", re.I)
# Presidio's own card pattern scores a raw match 0.3; a Luhn-valid one becomes 1.0, others drop.
CARD_PATTERN_SCORE = 0.3
TWO_SERIES_CARD = r"\b2(?:2(?:2[1-9]|[3-9]\d)|[3-6]\d{2}|7(?:[01]\d|20))[- ]?\d{4}[- ]?\d{4}[- ]?\d{4}\b"

# Presidio's recognizers that are replaced by the ones below (or, spaCy's, not wanted at all:
# person names and places stay in memory).
REPLACED = (
    "SpacyRecognizer",
    "EmailRecognizer",
    "IbanRecognizer",
    "IpRecognizer",
    "NhsRecognizer",
    "PhoneRecognizer",
)


# What every value of an entity holds, whichever recognizer finds it: a text without it is not given to
# that entity's recognizers (a regex pass per recognizer over every chat message, which mostly holds
# no digit, is time the NLP thread needs). Passport numbers are
# found with at least five digits, IP addresses hold a digit or (IPv6) a colon.
_DIGIT = re.compile(r"\d")
DIGIT_VALUED = frozenset(
    "PHONE_NUMBER CREDIT_CARD IBAN_CODE US_SSN US_ITIN US_PASSPORT US_BANK_NUMBER UK_NHS CRYPTO "
    "MEDICAL_LICENSE".split()
)
VALUE_NEEDS: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(DIGIT_VALUED, _DIGIT),
    "IP_ADDRESS": re.compile(r"[\d:]"),
}


def possible_entities(entities: Sequence[str], text: str) -> list[str]:
    """The ``entities`` a value of which ``text`` could hold (:data:`VALUE_NEEDS`)."""
    return [e for e in entities if (need := VALUE_NEEDS.get(e)) is None or need.search(text) is not None]


def cue_before(text: str, start: int, cue: re.Pattern[str]) -> bool:
    """Whether the text before ``start`` ends with ``cue``."""
    return cue.search(text, 0, start) is not None


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer with the bundled public-suffix list (no download at run time)."""

    def validate_result(self, pattern_text: str) -> bool:
        return bool(_OFFLINE_TLD(pattern_text).fqdn)


class TwoSeriesCardRecognizer(CreditCardRecognizer):
    """Mastercard's 2221-2720 range, with the parent's Luhn check and context words."""

    def __init__(self) -> None:
        pattern = Pattern("Mastercard 2-series (weak)", TWO_SERIES_CARD, CARD_PATTERN_SCORE)
        super().__init__(patterns=[pattern], name="TwoSeriesCardRecognizer")


class VersionAwareIpRecognizer(IpRecognizer):
    def analyze(
        self,
        text: str,
        entities: list[str],
        nlp_artifacts: NlpArtifacts | None = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        found = super().analyze(text, entities, nlp_artifacts, regex_flags)
        return [r for r in found if not cue_before(text, r.start, VERSION_BEFORE)]


class CuedNhsRecognizer(NhsRecognizer):
    def analyze(
        self,
        text: str,
        entities: list[str],
        nlp_artifacts: NlpArtifacts | None = None,
        regex_flags: int | None = None,
    ) -> list[RecognizerResult]:
        found = super().analyze(text, entities, nlp_artifacts, regex_flags)
        return [r for r in found if cue_before(text, r.start, NHS_BEFORE)]


# No phone number of the regions Presidio checks has fewer digits than this.
MIN_PHONE_DIGITS = 5
# Digits with the separators a phone number is written with between them ("+1 (415) 555-0199",
# "020 7946 0958"): a run holding MIN_PHONE_DIGITS digits is where a number may be.
PHONE_RUN = re.compile(r"\d(?:[\s().\-\u2010-\u2015\u2212/~]{0,3}\d)+")
# Characters around a run that the matcher reads (a "+" or "(" before it, an extension after it,
# a letter that disqualifies it): each segment it is given reaches this far beyond the digits.
PHONE_MARGIN = 24


def phone_segments(text: str) -> list[tuple[int, int]]:
    """The parts of ``text`` where a phone number may be: each digit run of MIN_PHONE_DIGITS digits,
    widened by PHONE_MARGIN on both sides, overlapping ones merged."""
    spans: list[tuple[int, int]] = []
    for m in PHONE_RUN.finditer(text):
        if sum(c.isdigit() for c in m.group()) < MIN_PHONE_DIGITS:
            continue
        start, end = max(m.start() - PHONE_MARGIN, 0), min(m.end() + PHONE_MARGIN, len(text))
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], end)
        else:
            spans.append((start, end))
    return spans


class ChatPhoneRecognizer(PhoneRecognizer):
    """The phonenumbers matcher runs over the text once per region, and a long answer is mostly
    words: it reads only the segments around digit runs (:func:`phone_segments`), not whole texts."""

    def analyze(
        self, text: str, entities: list[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        found: list[RecognizerResult] = []
        for start, end in phone_segments(text):
            for r in super().analyze(text[start:end], entities, nlp_artifacts):  # type: ignore[arg-type]
                r.start, r.end = r.start + start, r.end + start
                found.append(r)
        return [r for r in found if not cue_before(text, r.start, CATALOGUE_BEFORE)]


def chat_recognizers() -> list[EntityRecognizer]:
    """What the scrubber adds to Presidio's predefined recognizers once :data:`REPLACED` are removed."""
    return [
        OfflineEmailRecognizer(),
        IbanRecognizer(),
        TwoSeriesCardRecognizer(),
        VersionAwareIpRecognizer(),
        CuedNhsRecognizer(),
        ChatPhoneRecognizer(),
        SecretFormatRecognizer(),
        UrlPasswordRecognizer(),
        *secret_cue_recognizers(),
        *id_number_recognizers(),
        passport_recognizer(),
        ssn_recognizer(),
        StreetAddressRecognizer(),
    ]
