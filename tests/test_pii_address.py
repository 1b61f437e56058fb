"""Street addresses: a house number, a name and a street type; lower case only after an address cue."""

from __future__ import annotations

import pytest

from simplemem.processors.pii.address import StreetAddressRecognizer


def found(text: str) -> list[str]:
    return [text[r.start : r.end] for r in StreetAddressRecognizer().analyze(text, ["STREET_ADDRESS"])]


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("Our new office is 350 Harbor Boulevard.", "350 Harbor Boulevard"),
        ("It's 9 Quarry Ln, Apt 2B, buzz twice", "9 Quarry Ln, Apt 2B"),
        ("send the parcel to 61 e 14th st", "61 e 14th st"),  # lower case after a cue
        ("we're living at 5 willow court now", "5 willow court"),
    ],
)
def test_a_numbered_street_address_is_found_whole(text: str, address: str) -> None:
    assert found(text) == [address]


@pytest.mark.parametrize(
    "text",
    [
        "the gym is 61 e 14th st",  # lower case without a cue: could be anything
        "a 40 minute drive each way",  # a duration before a street type word
        "Chapter 3 The Road Home",  # "The" cannot start a street's name
        "we met on Harbor Boulevard",  # a street without a number is a place
    ],
)
def test_what_is_not_a_home_address_stays(text: str) -> None:
    assert found(text) == []
