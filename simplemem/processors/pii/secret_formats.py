"""Secrets in self-evident formats: keys and tokens whose prefix says what they are.

Stripe ``sk_live_``, OpenAI ``sk-proj-``, AWS ``AKIA``/``ASIA``, GitHub ``ghp_``, Slack ``xoxb-``,
JWTs, Google ``AIza``, private key blocks, and the password in a connection URL are secrets wherever
they appear, code included. Patterns are case-sensitive: ``akia`` is a word.
"""

from __future__ import annotations

import re

from presidio_analyzer import Pattern, PatternRecognizer

SECRET = "SECRET"
# A format match is as good as a validated checksum; just below, so that a validated e-mail address
# around a URL password ("admin:S3cret@db.example.com") keeps its own reading.
FORMAT_SCORE = 0.95
SECRET_FORMATS = (
    ("stripe key", r"(?<![A-Za-z0-9])(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("stripe webhook secret", r"(?<![A-Za-z0-9])whsec_[A-Za-z0-9]{16,}"),
    ("openai-style key", r"(?<![\w-])sk-[A-Za-z0-9_-]{20,}"),
    ("aws access key id", r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"),
    ("github token", r"(?<![A-Za-z0-9])gh[pousr]_[A-Za-z0-9]{30,}"),
    ("github fine-grained token", r"(?<![A-Za-z0-9])github_pat_[A-Za-z0-9_]{40,}"),
    ("slack token", r"(?<![A-Za-z0-9])xox[abeprs]-\d+-[A-Za-z0-9-]{8,}"),
    ("jwt", r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"),
    ("google api key", r"(?<![\w-])AIza[A-Za-z0-9_-]{35}"),
    # The whole block; a block pasted without its END line is scrubbed to the end of the message.
    (
        "private key block",
        r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
)


class SecretFormatRecognizer(PatternRecognizer):
    """Keys and tokens whose prefix says what they are (case-sensitive: ``akia`` is a word)."""

    def __init__(self) -> None:
        patterns = [Pattern(name, regex, FORMAT_SCORE) for name, regex in SECRET_FORMATS]
        super().__init__(SECRET, name="SecretFormatRecognizer", patterns=patterns, global_regex_flags=re.M)

    def invalidate_result(self, pattern_text: str) -> bool:
        """Random key material has digits; a hyphenated phrase that starts like a prefix has none."""
        return not any(c.isdigit() for c in pattern_text)


# The password in a connection URL: postgres://admin:<SECRET>@db.internal:5432/orders.
URL_PASSWORD = r"(?<=[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s/@]+(?=@)"


class UrlPasswordRecognizer(PatternRecognizer):
    """The password of ``scheme://user:password@host``, whatever its shape."""

    def __init__(self) -> None:
        pattern = Pattern("url password", URL_PASSWORD, FORMAT_SCORE)
        super().__init__(SECRET, name="UrlPasswordRecognizer", patterns=[pattern])
