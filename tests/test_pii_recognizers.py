"""Our recognizers and scrubber rules: secrets, cue-word identifiers, speakers, code, false positives."""

from datetime import UTC, datetime
from typing import Any

import pytest

from simplemem.processors.pii.recognizers import PHONE_MARGIN, phone_segments, possible_entities
from simplemem.schemas.events import ChatEvent

pytestmark = pytest.mark.slow

# Made-up key material of each format's shape; {} in the sentence stands for it.
SECRETS = [
    ("Stripe live secret key", "the billing key is {}, rotate it", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("Stripe publishable key", "checkout uses {}", "pk_live_51HqLyjWDarjtT1zdp7dcQ9"),
    ("Stripe restricted key", "reporting runs on {}", "rk_live_8Zt4xQ1wV7pLmN3oR5sK"),
    ("OpenAI key", "my openai key is {}", "sk-T3BlbkFJa8Xq2mZr7Lp0Vw4Ny9Ks6Dj1Hc5Gb3Fe"),
    ("OpenAI project key", "new key: {}", "sk-proj-Ab3_dE9fGh2-Jk7LmN0pQr5StUv8WxYz1aB4cD6"),
    ("AWS access key id", "the deploy user has {}", "AKIAQ3EXAMPLE7KEYZ2W"),
    ("AWS temporary key id", "STS returned {} for the session", "ASIAY4ZTEMP0RARY5KEY"),
    (
        "AWS secret after its cue",
        "and the secret access key is {}",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzEXAMPLE1",
    ),
    ("GitHub classic token", "my token {} works", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("GitHub OAuth token", "login returned {}", "gho_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("GitHub app token", "the logs show {}", "ghs_16C7e42F292c6912E7710c838347Ae178B4a"),
    (
        "GitHub fine-grained token",
        "PAT {}",
        "github_pat_11ABCDEFG0abcdefghijkl_mnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRS1",
    ),
    ("Slack bot token", "bot token {}", "xoxb-2401529847-9816512383-QyzX4kZb2Wd7Lm0Pq8Rs3Tv5"),
    ("Slack user token", "I pasted {} by mistake", "xoxp-1234567890-0987654321-1122334455-a1b2c3d4e5f6"),
    (
        "JWT",
        "got {} back",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    ("Google API key", "maps key {} here", "AIzaSyB3x9Kq2Lm7Np0Rs4Tv8Wx1Yz5Ab6Cd9Ef"),
    (
        "private key block",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\n{}\n-----END RSA PRIVATE KEY-----",
        "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2u",
    ),
    ("password", "my password is {}", "hunter2"),
    ("password as a plain word", "my gmail password is {}", "sunflower"),
    ("passphrase", "my passphrase is {}", "correct horse battery staple"),
    ("PIN", "PIN is {}", "4821"),
    ("token after its cue", "the api key is {}", "3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e"),
    ("password in a URL", "postgres://admin:{}@db.internal:5432/orders", "Xy7pQ2rs"),
]


@pytest.mark.parametrize(("template", "secret"), [c[1:] for c in SECRETS], ids=[c[0] for c in SECRETS])
def test_secrets_become_secret_placeholders(scrubber: Any, nlp: Any, template: str, secret: str) -> None:
    text = template.format(secret)
    result = scrubber.scrub(text, nlp(text))
    assert secret not in result.text
    assert "<SECRET>" in result.text


@pytest.mark.parametrize(
    ("text", "value", "placeholder"),
    [
        ("My passport number is 912803456", "912803456", "<US_PASSPORT>"),
        ("German passport: C01X00T47", "C01X00T47", "<US_PASSPORT>"),
        ("My new Mastercard is 2221 5260 1815 9080", "2221 5260 1815 9080", "<CREDIT_CARD>"),
        ("They keep declining 2720 3016 6131 8607.", "2720 3016 6131 8607", "<CREDIT_CARD>"),
        ("My SSN is 536228714", "536228714", "<US_SSN>"),
        ("my policy number is PLC-5521-884-12", "PLC-5521-884-12", "<ID_NUMBER>"),
        ("My member number is MBR00234871", "MBR00234871", "<ID_NUMBER>"),
        ("account number 0049381122", "0049381122", "<ID_NUMBER>"),
        ("Order #W88213374 never arrived", "W88213374", "<ID_NUMBER>"),
        ("my Amazon order is 114-3941689-8772291", "114-3941689-8772291", "<ID_NUMBER>"),
        ("driver's licence number D6101-40706-60905", "D6101-40706-60905", "<ID_NUMBER>"),
        ("case no. 24-cr-00981 - the hearing is in May", "24-cr-00981", "<ID_NUMBER>"),
        ("Pay it to AT61 1904 3002 3457 3201 please", "AT61 1904 3002 3457 3201", "<IBAN_CODE>"),
    ],
)
def test_identifiers_after_their_cue_are_replaced(
    scrubber: Any, nlp: Any, text: str, value: str, placeholder: str
) -> None:
    result = scrubber.scrub(text, nlp(text))
    assert value not in result.text
    assert placeholder in result.text


@pytest.mark.parametrize(
    ("text", "placeholder"),
    [
        ("order number 1234567890", "<ID_NUMBER>"),
        ("call me at 415-555-0199", "<PHONE_NUMBER>"),
    ],
)
def test_numbers_get_the_placeholder_of_what_they_are(
    scrubber: Any, nlp: Any, text: str, placeholder: str
) -> None:
    """An order number is not a phone; a US phone number that passes the NHS checksum is not an NHS number."""
    result = scrubber.scrub(text, nlp(text))
    assert result.text == text.rsplit(" ", 1)[0] + " " + placeholder


@pytest.mark.parametrize(
    "text",
    [
        "Version 1.2.3.4 is out, upgrade when you can.",
        "Try the book with ISBN 0-306-40615-2.",
        # plain words and numbers that follow a cue, or look like one
        "I ran 4821 meters this morning!",
        "My password is too short according to the site.",
        "My password is Priya",
        "My order was 1500 dollars.",
        # context words match whole words: "us" (a passport cue) is not found in "museum"
        "The museum counted 412803456 visitors since it opened.",
    ],
)
def test_look_alikes_stay(scrubber: Any, nlp: Any, text: str) -> None:
    assert scrubber.scrub(text, nlp(text)).text == text


def test_phone_numbers_deep_in_a_long_answer_are_found_and_years_are_not_phones(
    scrubber: Any, nlp: Any
) -> None:
    """The matcher reads only the segments around digit runs: a number far into a long text is still
    found at its place, with its "+" and extension, and a lone four-digit year is no phone number."""
    filler = "The museum opened in 1696 and was rebuilt in 1842 after the fire. " * 40
    text = f"{filler}Call the front desk at +1 (415) 555-0132 ext. 12 before noon. {filler}"
    result = scrubber.scrub(text, nlp(text))
    assert result.text == text.replace("+1 (415) 555-0132 ext. 12", "<PHONE_NUMBER>")
    assert result.pii_types == ["PHONE_NUMBER"]


def test_entities_whose_values_need_a_digit_are_not_looked_for_in_a_text_without_one() -> None:
    entities = ["EMAIL_ADDRESS", "CREDIT_CARD", "US_SSN", "IP_ADDRESS", "SECRET", "PHONE_NUMBER"]
    assert possible_entities(entities, "see you at the cafe, bring the keys") == ["EMAIL_ADDRESS", "SECRET"]
    assert possible_entities(entities, "my card ends in 4242") == entities
    # an IPv6 address may be letters and colons only
    assert possible_entities(entities, "the host is dead:beef::cafe") == [
        "EMAIL_ADDRESS",
        "IP_ADDRESS",
        "SECRET",
    ]


def test_an_ip_address_of_letters_only_is_still_scrubbed(scrubber: Any, nlp: Any) -> None:
    text = "The server listens on dead:beef::cafe now"
    assert "dead:beef::cafe" not in scrubber.scrub(text, nlp(text)).text


def test_phone_segments_cover_digit_runs_with_their_margins() -> None:
    text = "x" * 100 + "415-555-0132" + "y" * 100 + "and 020 7946 0958" + "z" * 60 + "in 1696, 12 34"
    segments = phone_segments(text)
    assert [text[s:e].strip("xyz") for s, e in segments] == ["415-555-0132", "and 020 7946 0958"]
    assert [e - s for s, e in segments] == [12 + 2 * PHONE_MARGIN, 17 - 4 + 2 * PHONE_MARGIN]
    assert phone_segments("born in 1696, aged 12 34") == []


def test_overlaps_go_to_the_strongest_reading_without_leaking_the_rest(scrubber: Any, nlp: Any) -> None:
    text = "Netflix login: mike.t@gmail.com / Popcorn2023"
    result = scrubber.scrub(text, nlp(text))
    assert result.text == "Netflix login: <EMAIL_ADDRESS> / <SECRET>"
    assert result.pii_types == ["EMAIL_ADDRESS", "SECRET"]
    assert scrubber.scrub("order number 1234567890").pii_types == ["ID_NUMBER"]


def _event(i: int, speaker: str, text: str) -> ChatEvent:
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    return ChatEvent(
        tenant_id="t", session_id="s", message_id=str(i), speaker=speaker, role="user", text=text, ts=ts
    )


@pytest.fixture(scope="module")
def preparer(nlp: Any, scrubber: Any) -> Any:
    from simplemem.processors.ingest.analysis import NlpPreparer

    return NlpPreparer(nlp, scrubber)


def test_speakers_named_by_contact_details_are_scrubbed(preparer: Any) -> None:
    events = [
        _event(0, "jordan.lee@example.com", "I moved to Lisbon last spring."),
        _event(1, "+1 415 555 0199", "My sister Priya is a nurse."),
        _event(2, "Melanie", "I painted a lake yesterday."),
    ]
    email, phone, name = preparer.prepare(events)
    assert email.speaker == "<EMAIL_ADDRESS>"
    assert "EMAIL_ADDRESS" in email.pii_types
    assert phone.speaker == "<PHONE_NUMBER>"
    assert name.speaker == "Melanie"
    assert name.pii_types == []


CODE = (
    "Here is my config:\n```python\nimport boto3\n"
    'AWS_ACCESS_KEY_ID = "AKIAQ3EXAMPLE7KEYZ2W"\n'
    'DB_PASSWORD = "s3cr3t-Pa55"\n'
    'api_key = request.headers.get("X-Api-Key")\n'
    "password_hash = bcrypt.hashpw(password.encode(), salt)\n"
    'client = boto3.client("s3", region_name="eu-west-1")\n```\nwhy does it fail?'
)


def test_secrets_in_code_blocks_are_scrubbed_and_the_rest_is_verbatim(preparer: Any) -> None:
    (message,) = preparer.prepare([_event(0, "Sam", CODE)])
    expected = CODE[CODE.index("```") : CODE.rindex("```") + 3]
    expected = expected.replace("AKIAQ3EXAMPLE7KEYZ2W", "<SECRET>").replace("s3cr3t-Pa55", "<SECRET>")
    assert message.code_blocks == [expected]
