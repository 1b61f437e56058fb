"""PII scrubbing: identifiers become typed placeholders; names and places survive."""

import pytest

pytestmark = pytest.mark.slow

CASES = [
    ("My new phone number is 555-014-2298, text me there.", "555-014-2298", "<PHONE_NUMBER>"),
    ("Call me at (415) 555-0132 tonight.", "555-0132", "<PHONE_NUMBER>"),
    ("You can email me at jordan.lee@example.com from now on.", "jordan.lee@example.com", "<EMAIL_ADDRESS>"),
    ("My credit card 4111 1111 1111 1111 was charged twice.", "4111 1111 1111 1111", "<CREDIT_CARD>"),
    ("Wire it to DE89 3704 0044 0532 0130 00 please.", "DE89 3704 0044 0532 0130 00", "<IBAN_CODE>"),
    ("The server is at 192.168.1.20 now.", "192.168.1.20", "<IP_ADDRESS>"),
    ("My SSN is 536-22-8714 for the form.", "536-22-8714", "<US_SSN>"),
]


@pytest.mark.parametrize(("text", "secret", "placeholder"), CASES)
def test_identifiers_are_replaced(scrubber, nlp, text: str, secret: str, placeholder: str) -> None:  # type: ignore[no-untyped-def]
    result = scrubber.scrub(text, nlp(text))
    assert secret not in result.text
    assert placeholder in result.text
    assert result.pii_types


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("My sister Priya lives in Toronto.", ["Priya", "Toronto"]),
        ("My manager is called Daniel Okafor.", ["Daniel Okafor"]),
        ("I grew up in Porto Alegre, Brazil.", ["Porto Alegre", "Brazil"]),
        ("I take the 7:45 train to work every morning.", ["7:45"]),
        ("I drive a 2019 Subaru Outback.", ["2019 Subaru Outback"]),
    ],
)
def test_names_places_and_plain_numbers_survive(scrubber, nlp, text: str, kept: list[str]) -> None:  # type: ignore[no-untyped-def]
    result = scrubber.scrub(text, nlp(text))
    assert result.text == text
    for value in kept:
        assert value in result.text


def test_scrubbing_works_without_a_precomputed_doc(scrubber) -> None:  # type: ignore[no-untyped-def]
    assert "<EMAIL_ADDRESS>" in scrubber.scrub("write to a.b@example.org").text


def test_context_words_raise_presidio_scores(scrubber, nlp) -> None:  # type: ignore[no-untyped-def]
    """A bank account number is a weak pattern that only its context word ("account") lifts."""
    text = "Deposit it in my checking account 12345678 please."
    assert "12345678" not in scrubber.scrub(text, nlp(text)).text
