"""The structure of long messages: markup removed, list items numbered with their list's lead."""

from __future__ import annotations

from simplemem.processors.language.structure import item_marker, label, labelled_place, outline, plain

ANSWER = """Sure! Here are some hotels you might consider:

1. **The Little Nell** - luxury, about $900 per night.
2. **Limelight Hotel** - ski-in/ski-out.
   Free breakfast buffet included.
3. Hotel Talisa - in Vail.

Some tips:
- Book two months ahead.
- Buy an Epic Pass.

That's all."""


def labels(text: str) -> list[str | None]:
    return [label(line) for line in outline(text)]


def test_items_are_numbered_within_their_list_under_its_lead() -> None:
    text = plain(ANSWER)
    lines = text.split("\n")
    got = dict(zip(lines, labels(text), strict=True))
    assert got["1. The Little Nell - luxury, about $900 per night."] == (
        "item 1 (first) of 3 of 'Here are some hotels you might consider'"
    )
    assert got["   Free breakfast buffet included."] == got["2. Limelight Hotel - ski-in/ski-out."]
    assert got["3. Hotel Talisa - in Vail."].startswith("item 3 (third, last) of 3")
    assert got["- Buy an Epic Pass."] == "item 2 (second, last) of 2 of 'Some tips'"
    assert got["That's all."] is None and got["Some tips:"] is None


def test_markup_without_words_is_removed_and_tables_become_lines() -> None:
    table = "## Prices\n| Hotel | Price |\n|---|---:|\n| Nell | $900 |\n| Talisa | $450 |"
    text = plain(table)
    assert text.split("\n") == ["Prices", "Hotel, Price:", "| Nell, $900", "| Talisa, $450"]
    assert labels(text)[2:] == [
        "item 1 (first) of 2 of 'Hotel, Price'",
        "item 2 (second, last) of 2 of 'Hotel, Price'",
    ]
    assert plain("a **bold** move and __this__") == "a bold move and this"
    assert plain("2 * 3 * 4 stays") == "2 * 3 * 4 stays"


def test_a_list_without_a_lead_and_the_marker_of_an_item() -> None:
    assert labels("- one\n- two") == ["item 1 (first) of 2", "item 2 (second, last) of 2"]
    thirteen = labels("\n".join(f"- step {n}" for n in range(1, 14)))
    assert thirteen[11:] == ["item 12 (twelfth) of 13", "item 13 (last) of 13"]
    assert labels("- alone") == ["item 1 (first) of 1"]
    assert item_marker("12) the twelfth step") == "the twelfth step"
    assert labels("no list here\njust lines") == [None, None]


def test_a_statements_label_is_read_back_as_its_place() -> None:
    lines = outline("Venues:\n- Holocene\n- Revolution Hall")
    assert [labelled_place(f"assistant, {label(line)}: x") for line in lines[1:]] == [(1, 2), (2, 2)]
    assert labelled_place("assistant: item 2 is the best") is None
    long_list = outline("Books:\n" + "\n".join(f"- Book {n}" for n in range(1, 24)))
    labels = [labelled_place(f"assistant, {label(line)}: x") for line in long_list[1:]]
    assert labels == [(n, 23) for n in range(1, 24)]  # "item 13 of 23" has no ordinal word


def test_a_deeper_indented_item_belongs_to_the_item_above_it() -> None:
    text = "Options:\n1. Online platforms:\n   - Meetup\n\t- Eventbrite\n2. Local groups\n3. Classes"
    places = [(line.item, line.items) for line in outline(text)]
    assert places == [(None, None), (1, 3), (1, 3), (1, 3), (2, 3), (3, 3)]
    flat = "Options:\n  - Meetup\n  - Eventbrite"  # a list indented as a whole is still a list
    assert [(line.item, line.items) for line in outline(flat)][1:] == [(1, 2), (2, 2)]
