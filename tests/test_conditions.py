"""The subject of a standing instruction's condition, by which the questions it governs find it."""

from __future__ import annotations

import pytest

from simplemem.processors.ingest.embedding import embed_text
from simplemem.processors.language.conditions import condition_subject
from simplemem.schemas.memory import MemoryKind, MemoryUnit


@pytest.mark.parametrize(
    ("instruction", "subject"),
    [
        (
            "user: Always format dates in MM/DD/YYYY when I ask about scheduling details.",
            "scheduling details",
        ),
        ("Always reply in French when I ask you for translations", "translations"),
        ("From now on, whenever we discuss the budget app, include the costs.", "the budget app"),
        ("Always use type hints when it comes to Python code.", "Python code"),
        ("Always cite sources if I'm working on my thesis", "my thesis"),
        ("Never use tabs.", None),
        ("Always be concise when I ask.", None),
    ],
)
def test_the_condition_names_what_an_instruction_governs(instruction: str, subject: str | None) -> None:
    assert condition_subject(instruction) == subject


def test_an_instruction_is_embedded_by_its_condition_and_any_other_line_by_its_text() -> None:
    def line(text: str, kind: MemoryKind) -> MemoryUnit:
        return MemoryUnit.build(
            tenant_id="t", text=text, kind=kind, source_ids=["m1"], stated_at="2026-01-10T10:00:00+00:00"
        )

    rule = "user: Always include version numbers when I ask about libraries."
    assert embed_text(line(rule, MemoryKind.INSTRUCTION)) == "libraries"
    assert embed_text(line("user: Never use tabs.", MemoryKind.INSTRUCTION)) == "user: Never use tabs."
    assert embed_text(line(rule, MemoryKind.PREFERENCE)) == rule
