"""Street addresses: a house number, a street name and a street type ("42 Elm Street", "221B Baker
St., Apt 3"). With the number, the street says where a person lives; without it ("on Main Street",
"I moved to Porto") it names a place, and places stay in memory.

Two readings, because chat writes both ways:

- capitalised, anywhere: "1600 Pennsylvania Avenue", "12 Privet Drive" (the name's words capitalised,
  the type capitalised or abbreviated);
- lower case, only after an address cue ("i live at 42 elm street", "ship it to 9 oak rd"): without
  the cue, "a 3 hour drive" or "2 more place settings" would read as addresses.

Limits: no postcode, city or state is needed or scrubbed (a city alone is a place); addresses
without a street type ("42 Elm"), PO boxes and addresses written number-last (much of Europe:
"Rua das Flores 12") are not recognised.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from presidio_analyzer import AnalysisExplanation, LocalRecognizer, RecognizerResult
from presidio_analyzer.nlp_engine import NlpArtifacts

ENTITY = "STREET_ADDRESS"
SCORE = 0.7  # a street type after a house number is strong evidence on its own

FULL_TYPES = (
    "street|avenue|road|boulevard|lane|drive|court|way|place|terrace|circle|highway|parkway|square|"
    "crescent|close|row|alley|trail|plaza"
)
SHORT_TYPES = "st|ave|rd|blvd|ln|dr|ct|pl|ter|cir|hwy|pkwy|sq"  # with their period, if any: "St."
STREET_TYPE = rf"(?:(?:{FULL_TYPES})\b|(?:{SHORT_TYPES})\b\.?)"
# A flat or suite after the street: "Apt 4B", "Suite 210", "#12", "Flat 3".
UNIT = r"(?:,?\s+(?:apt|apartment|unit|suite|ste|flat|#)\.?\s*#?[A-Za-z0-9-]+)?"
HOUSE_NUMBER = r"(?<![\w.,/-])\d{1,5}[A-Za-z]?"
ORDINAL = r"\d{1,3}(?i:st|nd|rd|th)"  # numbered streets: "W 45th St"
# Words that cannot be part of a street's name: they end the reading ("3 blocks down the road").
NOT_NAME = (
    "the|a|an|to|down|up|of|on|in|into|onto|at|by|for|from|with|along|across|past|near|my|our|your|"
    "his|her|their|this|that|these|those|more|less|few|many|other|same|and|or|per|hour|hours|minute|"
    "minutes|mile|miles|km|block|blocks|min|mins"
)
CAPITALISED = re.compile(
    rf"{HOUSE_NUMBER}\s+(?:(?!(?i:{NOT_NAME})\b)(?:[A-Z][a-z'.-]*|{ORDINAL})\s+){{1,3}}(?i:{STREET_TYPE})(?i:{UNIT})"
)
CUE = (
    r"live[sd]?\s+(?:at|on)|living\s+(?:at|on)|moved\s+to|moving\s+to|(?:home|postal|street|mailing|"
    r"shipping|billing|delivery)?\s*address(?:\s+is)?:?|located\s+at|(?:ship(?:ped)?|deliver(?:ed)?|send|sent|mail(?:ed)?)"
    r"\s+(?:[\w']+\s+){0,3}?to|staying\s+at|house\s+is\s+at"
)
LOWER = re.compile(
    rf"\b(?:{CUE})\s+(?P<value>{HOUSE_NUMBER}\s+(?:(?!(?:{NOT_NAME})\b)(?:[a-z][a-z'.-]*|{ORDINAL})\s+){{1,3}}"
    rf"{STREET_TYPE}{UNIT})",
    re.IGNORECASE,
)


class StreetAddressRecognizer(LocalRecognizer):
    LABEL = "StreetAddressRecognizer"

    def __init__(self) -> None:
        super().__init__(supported_entities=[ENTITY], name=self.LABEL)

    def load(self) -> None:
        """Nothing to load: the patterns are module constants."""

    def analyze(
        self, text: str, entities: Sequence[str], nlp_artifacts: NlpArtifacts | None = None
    ) -> list[RecognizerResult]:
        spans = {(m.start(), m.end()) for m in CAPITALISED.finditer(text)}
        spans |= {(m.start("value"), m.end("value")) for m in LOWER.finditer(text)}
        return [
            RecognizerResult(ENTITY, start, end, SCORE, AnalysisExplanation(self.LABEL, SCORE))
            for start, end in sorted(spans)
        ]
