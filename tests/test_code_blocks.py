"""Code-block bypass detection."""

from simplemem.processors.language.code_blocks import split_code

FENCED = "Here is the script:\n```python\ndef backup(src, dst):\n    shutil.copytree(src, dst)\n```\nThanks!"


def test_fenced_block_is_kept_verbatim_and_prose_remains() -> None:
    split = split_code(FENCED)
    assert split.code_blocks == ["```python\ndef backup(src, dst):\n    shutil.copytree(src, dst)\n```"]
    assert "Here is the script:" in split.prose and "Thanks!" in split.prose
    assert "def backup" not in split.prose


def test_unfenced_function_is_detected() -> None:
    text = "try this\nfunction add(a, b) {\n    return a + b;\n}"
    split = split_code(text)
    assert split.code_blocks == ["function add(a, b) {\n    return a + b;\n}"]
    assert split.prose == "try this"


def test_plain_prose_is_not_code() -> None:
    text = "I went hiking yesterday.\nIt was great, then we had dinner."
    assert split_code(text).code_blocks == []


def test_single_code_like_line_stays_prose() -> None:
    assert split_code("I renamed def main() today").code_blocks == []


def test_two_fenced_blocks() -> None:
    text = "a\n```\nx = 1\n```\nb\n```sql\nSELECT 1;\n```"
    assert len(split_code(text).code_blocks) == 2


def test_an_indented_sub_list_is_prose_and_indented_code_is_not() -> None:
    """Tab-indented bullets under an item are the item's, not code; indented statements still are."""
    nested = "Ingredients:\n1. Chicken:\n\t+ 1 lb chicken breast, diced\n\t+ 2 tablespoons oil\n2. Rice"
    assert split_code(nested).code_blocks == []
    indented = "Try this:\n    total = price * 0.9\n    print(total)\nThen run it."
    assert split_code(indented).code_blocks == ["    total = price * 0.9\n    print(total)"]
