"""The recognizers the scrubber registers: Presidio's, adjusted for chat, plus our own.

Adjusted: e-mail, with the bundled public-suffix list (no download at run time). Ours: secrets
(:mod:`processors.pii_secret_formats`, :mod:`processors.pii_secrets`) and values after a cue word
(:mod:`processors.pii_cues`).
"""

from __future__ import annotations

import tldextract
from presidio_analyzer import EntityRecognizer
from presidio_analyzer.predefined_recognizers import EmailRecognizer

from processors.pii_cues import id_number_recognizers, passport_recognizer, ssn_recognizer
from processors.pii_secret_formats import SecretFormatRecognizer, UrlPasswordRecognizer
from processors.pii_secrets import secret_cue_recognizers

_OFFLINE_TLD = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

# Presidio's recognizers that are replaced by the ones below (or, spaCy's, not wanted at all:
# person names and places stay in memory).
REPLACED = ("SpacyRecognizer", "EmailRecognizer")


class OfflineEmailRecognizer(EmailRecognizer):
    """Presidio's e-mail recognizer with the bundled public-suffix list (no download at run time)."""

    def validate_result(self, pattern_text: str) -> bool:
        return bool(_OFFLINE_TLD(pattern_text).fqdn)


def chat_recognizers() -> list[EntityRecognizer]:
    """What the scrubber adds to Presidio's predefined recognizers once :data:`REPLACED` are removed."""
    return [
        OfflineEmailRecognizer(),
        SecretFormatRecognizer(),
        UrlPasswordRecognizer(),
        *secret_cue_recognizers(),
        *id_number_recognizers(),
        passport_recognizer(),
        ssn_recognizer(),
    ]
