"""Code-block bypass: code is found, cut out of the prose and stored verbatim, never decomposed."""

from __future__ import annotations

import re
from dataclasses import dataclass

from simplemem.processors.language.structure import ITEM_MARKER

_FENCE = re.compile(r"```[^\n`]*\n?(?P<body>[\s\S]*?)```")
_SIGNATURE = re.compile(
    r"^\s*(?:async\s+)?(?:def|function|func|fn|class|public|private|static)\s+\w+\s*[\(<:{]"
)
# An indented line that opens with a list marker is a nested item, not code: most "code" blocks of
# assistant answers would otherwise be tab-indented sub-lists (ingredients, options), cut out of the
# prose, away from their item and its label.
_NESTED_ITEM = r"(?!" + ITEM_MARKER + r"\s)"
_CODE_LINE = re.compile(
    r"^(?:\s{4,}|\t)" + _NESTED_ITEM + r"\S"  # indented block line
    r"|[;{}]\s*$"  # statement terminators, braces
    r"|^\s*(?:import|from\s+\S+\s+import|return|if\s*\(|for\s*\(|while\s*\(|#include|SELECT\s|const\s|let\s|var\s)"
)


@dataclass(frozen=True)
class CodeSplit:
    code_blocks: list[str]
    prose: str


def split_code(text: str) -> CodeSplit:
    """Separate fenced blocks, or runs of code-looking lines, from the prose around them.

    A fenced block is returned with its fences, exactly as written. Without fences, a run of two
    or more lines that look like code (or one function signature line followed by an indented
    line) becomes a block; a single code-ish line inside prose stays prose.
    """
    blocks: list[str] = []
    if "```" in text:
        prose_parts: list[str] = []
        pos = 0
        for m in _FENCE.finditer(text):
            prose_parts.append(text[pos : m.start()])
            blocks.append(m.group(0))
            pos = m.end()
        prose_parts.append(text[pos:])
        if blocks:
            return CodeSplit(blocks, _clean("".join(prose_parts)))
    lines = text.split("\n")
    if len(lines) < 2:
        return CodeSplit([], text)
    is_code = [bool(_SIGNATURE.match(line) or _CODE_LINE.search(line)) for line in lines]
    prose_lines: list[str] = []
    i = 0
    while i < len(lines):
        if not is_code[i]:
            prose_lines.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and (
            is_code[j] or (not lines[j].strip() and j + 1 < len(lines) and is_code[j + 1])
        ):
            j += 1
        run = lines[i:j]
        if len(run) >= 2:
            blocks.append("\n".join(run))
        else:
            prose_lines.extend(run)
        i = j
    return CodeSplit(blocks, _clean("\n".join(prose_lines)) if blocks else text)


def _clean(prose: str) -> str:
    return re.sub(r"[ \t]+\n", "\n", prose).strip()
