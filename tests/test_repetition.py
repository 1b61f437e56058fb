"""Degenerate repetition is compressed before analysis: the useful part stays, the loop goes, counted."""

from __future__ import annotations

from simplemem.processors.language.repetition import MAX_LINE_REPEATS, MAX_RUN, compress_repetition


def test_a_line_looped_thousands_of_times_keeps_its_first_few() -> None:
    text = "Here is the tree:\n```\nroot\n" + "/\n" * 25_000 + "```\nThat is all."
    out = compress_repetition(text)
    assert out.text.count("/\n") == MAX_LINE_REPEATS
    assert out.text.startswith("Here is the tree:") and out.text.endswith("That is all.")
    assert out.dropped_chars == len(text) - len(out.text) > 49_000


def test_a_cell_or_space_run_within_a_line_is_cut_to_its_bound() -> None:
    row = "| a |" + " --- |" * 5_000
    spaces = "A" + " " * 300_000 + "B"
    out = compress_repetition(f"{row}\n{spaces}")
    first, second = out.text.split("\n")
    assert first == "| a |" + " --- |" * MAX_RUN
    assert second == "A" + " " * MAX_RUN + "B"


def test_ordinary_text_code_and_short_tables_are_kept_as_they_are() -> None:
    text = (
        "def f(x):\n        return x  # indented\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n| 1 | 2 |\n"
        "Repeat after me: no no no no.\n\n\nThe end."
    )
    out = compress_repetition(text)
    assert out.text == text and out.dropped_chars == 0


def test_a_message_of_several_hundred_kilobytes_of_loop_is_accepted_and_accounted(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import orjson
    import pytest

    pytest.importorskip("spacy")
    from simplemem.runtime import open_runtime
    from simplemem.schemas.settings import Settings

    text = "To draw the bisector, mark the midpoint of each side first.\n" + "|" + " " * 350_000 + "|\n"
    event = {
        "tenant_id": "t",
        "session_id": "s",
        "message_id": "m1",
        "speaker": "assistant",
        "role": "assistant",
        "text": text,
        "ts": "2026-01-05T09:00:00+00:00",
        "ends_session": True,
    }
    rt = open_runtime(Settings(), tmp_path)
    try:
        report = rt.pipeline.ingest([("m1", orjson.dumps(event))])
    finally:
        rt.close()
    assert report.rejected == [] and report.accepted == 1
    assert report.repetition_dropped_chars >= 350_000 - MAX_RUN
    assert report.outcomes["indexed"] + report.outcomes["filtered"] == 1
