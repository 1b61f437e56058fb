"""Offline decomposition: statements, coreference, temporal anchoring, small talk, code bypass."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from simplemem.processors.ingest.decompose import OfflineDecomposer, is_informative
from simplemem.processors.ingest.pronouns import third_person
from simplemem.processors.language.code_blocks import split_code
from simplemem.processors.language.nlp import doc_sentences
from simplemem.schemas.events import Role
from simplemem.schemas.memory import MemoryKind
from simplemem.schemas.window import AnalyzedMessage, Window

pytestmark = pytest.mark.slow
T0 = datetime(2026, 1, 12, 20, 0, tzinfo=UTC)


def analysed(nlp, turns: list[tuple[str, str]], assistants: frozenset[str] = frozenset()) -> Window:  # type: ignore[no-untyped-def]
    msgs = []
    for i, (speaker, text) in enumerate(turns):
        role = Role.ASSISTANT if speaker in assistants else Role.USER
        split = split_code(text)
        sents = [
            s.model_copy(update={"informative": is_informative(s, speaker)})
            for s in doc_sentences(nlp(split.prose))
        ]
        msgs.append(
            AnalyzedMessage(
                tenant_id="t",
                session_id="s",
                message_id=f"m{i}",
                speaker=speaker,
                role=role,
                ts=T0 + timedelta(minutes=i),
                text=text,
                prose=split.prose,
                code_blocks=split.code_blocks,
                sentences=sents,
            )
        )
    return Window(tenant_id="t", session_id="s", messages=msgs)


def texts(nlp, turns):  # type: ignore[no-untyped-def]
    return [d.unit.text for d in OfflineDecomposer().decompose(analysed(nlp, turns)).units]


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        ([("Jordan", "My favorite color is blue.")], "Jordan's favorite color is blue."),
        ([("Jordan", "I have a dog named Max.")], "Jordan has a dog named Max."),
        ([("Jordan", "I'm allergic to peanuts.")], "Jordan is allergic to peanuts."),
        ([("Jordan", "I really love hiking in the Alps.")], "Jordan really loves hiking in the Alps."),
        (
            [("Caroline", "Hi Mel!"), ("Melanie", "I painted your portrait last week.")],
            "Melanie painted Caroline's portrait last week (the week before 2026-01-12).",
        ),
        (
            [("Caroline", "You should join the choir."), ("Melanie", "Good idea.")],
            "Melanie should join the choir.",
        ),
        (
            [("Jordan", "My brother Tom plays bass."), ("Jordan", "He is touring Spain next month.")],
            "Tom is touring Spain next month (2026-02).",
        ),
        (
            [("Jordan", "My boss Alicia called. She said her team is growing.")],
            "Alicia said Alicia's team is growing.",
        ),
    ],
)
def test_statements_with_coreference(nlp, turns, expected: str) -> None:  # type: ignore[no-untyped-def]
    assert any(expected in text for text in texts(nlp, turns)), texts(nlp, turns)


@pytest.mark.parametrize(
    "text",
    [
        "ok thanks",
        "sounds good",
        "lol yes",
        "Got it, I'll remember that.",
        "Thanks for telling me!",
        "haha nice",
        "How are you?",
        "What's up with you?",
    ],
)
def test_small_talk_and_questions_yield_nothing(nlp, text: str) -> None:  # type: ignore[no-untyped-def]
    assert texts(nlp, [("Jordan", text)]) == []


def test_relative_date_anchored_and_event_time_set(nlp) -> None:  # type: ignore[no-untyped-def]
    units = (
        OfflineDecomposer()
        .decompose(analysed(nlp, [("Jordan", "I ran my first half marathon yesterday!")]))
        .units
    )
    assert units[0].unit.text == "Jordan ran Jordan's first half marathon yesterday (2026-01-11)!"
    assert units[0].unit.event_time == "2026-01-11"
    assert units[0].unit.persons == ["Jordan"]


def test_code_is_a_verbatim_unit_linked_to_its_message(nlp) -> None:  # type: ignore[no-untyped-def]
    code = "```python\ndef backup(src, dst):\n    shutil.copytree(src, dst, dirs_exist_ok=True)\n```"
    result = OfflineDecomposer().decompose(analysed(nlp, [("Jordan", f"My backup script:\n{code}")]))
    code_units = [d.unit for d in result.units if d.unit.kind == MemoryKind.CODE]
    assert [u.text for u in code_units] == [code]
    assert code_units[0].source_ids == ["m0"]


def test_ids_are_deterministic(nlp) -> None:  # type: ignore[no-untyped-def]
    turns = [("Jordan", "I work at Northwind Logistics.")]
    a = OfflineDecomposer().decompose(analysed(nlp, turns)).units
    b = OfflineDecomposer().decompose(analysed(nlp, turns)).units
    assert [d.unit.id for d in a] == [d.unit.id for d in b]


def test_only_new_messages_are_decomposed(nlp) -> None:  # type: ignore[no-untyped-def]
    window = analysed(nlp, [("Jordan", "I live in Denver."), ("Jordan", "I work at Northwind.")])
    window.new_from = 1
    result = OfflineDecomposer().decompose(window)
    assert [d.unit.source_ids for d in result.units] == [["m1"]]
    assert result.units_per_message == {"m1": 1}


@pytest.mark.parametrize(
    ("verb", "expected"),
    [
        ("have", "has"),
        ("go", "goes"),
        ("try", "tries"),
        ("play", "plays"),
        ("watch", "watches"),
        ("am", "is"),
    ],
)
def test_third_person(verb: str, expected: str) -> None:
    assert third_person(verb) == expected


def test_an_answer_is_searchable_by_the_question_it_answers(nlp) -> None:  # type: ignore[no-untyped-def]
    """ "A mix of drama and romance!" never says what it is about: the question asked just before it
    rides along as searched context (never as the memory's text); a question from the same speaker,
    or small talk, does not."""
    w = analysed(
        nlp,
        [
            ("Nate", "What genre is your first screenplay?"),
            ("Joanna", "It's a mix of drama and romance!"),
            ("Joanna", "I also adopted a kitten called Mochi."),
        ],
    )
    answer, other = OfflineDecomposer().decompose(w).units
    assert "screenplay" not in answer.unit.text
    assert answer.unit.context == "Nate: What genre is your first screenplay?"
    assert other.unit.context is None


def units_of(nlp, turns, new_from: int = 0):  # type: ignore[no-untyped-def]
    window = analysed(nlp, turns)
    window.new_from = new_from
    return [d.unit for d in OfflineDecomposer().decompose(window).units]


SISTER_VISIT = [
    ("Sam", "My sister Ines is coming over from Porto on Friday."),
    ("Assistant", "That sounds lovely, enjoy the visit."),
    ("Sam", "Ines got here last night."),
    ("Sam", "She brought me a hand-painted ceramic bowl."),
]


def test_she_in_a_later_message_names_the_person_it_refers_to(nlp) -> None:  # type: ignore[no-untyped-def]
    assert any("Ines brought Sam a hand-painted ceramic bowl" in u.text for u in units_of(nlp, SISTER_VISIT))


def test_the_referent_may_sit_in_the_previous_windows_tail(nlp) -> None:  # type: ignore[no-untyped-def]
    """The first messages of a window are context already decided on: their names still count."""
    units = units_of(nlp, SISTER_VISIT, new_from=3)
    assert [u.text for u in units] == ["Ines brought Sam a hand-painted ceramic bowl."]
    assert "Ines" in units[0].persons


def test_pronouns_take_a_person_of_their_gender(nlp) -> None:  # type: ignore[no-untyped-def]
    turns = [
        ("Sam", "My brother Marco and my sister Ines came for dinner."),
        ("Sam", "She stayed until midnight."),
        ("Sam", "He brought a bottle of port."),
    ]
    found = " | ".join(u.text for u in units_of(nlp, turns))
    assert "Ines stayed until midnight" in found and "Marco brought a bottle of port" in found, found


def test_an_ambiguous_pronoun_is_left_as_written(nlp) -> None:  # type: ignore[no-untyped-def]
    """Two persons of unknown gender named together: "he" could be either, so it stays "He"."""
    turns = [
        ("Sam", "Daniel Brooks and Marcus Webb went to the hockey game."),
        ("Sam", "He loved the overtime goal."),
    ]
    found = " | ".join(u.text for u in units_of(nlp, turns))
    assert (
        "He loved the overtime goal" in found
        and "Daniel Brooks loved" not in found
        and "Marcus Webb loved" not in found
    )


def test_a_name_seen_as_a_person_counts_where_ner_misses_it(nlp) -> None:  # type: ignore[no-untyped-def]
    turns = [("Sam", "My cousin Tomas is visiting next week."), ("Sam", "Tomas landed at noon.")]
    units = units_of(nlp, turns)
    assert all("Tomas" in u.persons for u in units), [(u.text, u.persons) for u in units]


@pytest.mark.parametrize(
    ("turns", "expected"),
    [
        # a lower-case name opening its clause, which NER misses or calls an organisation
        ([("Sam", "yeah. priya fixed the build, she found a stale cache")], "priya found a stale cache"),
        (
            [
                ("Sam", "rohan booked the venue."),
                ("Assistant", "Good to know."),
                ("Sam", "he says the deposit is paid"),
            ],
            "rohan says the deposit is paid",
        ),
        # a role word and a linking verb before a lower-case name
        ([("Sam", "our tutor is marta, she can do mondays.")], "marta can do mondays"),
        # a title split from its dot in lower-case text
        (
            [("Mira", "also dr. okafor put me on a statin."), ("Mira", "she thinks it will take a month")],
            "okafor thinks it will take a month",
        ),
        # a role word opening a clause is not a name: "he" keeps the person named after it
        (
            [
                ("Sam", "dentist called back. marco is moving me to friday."),
                ("Sam", "he wants an x-ray first"),
            ],
            "marco wants an x-ray first",
        ),
    ],
)
def test_third_person_pronouns_find_lower_case_names(nlp, turns, expected: str) -> None:  # type: ignore[no-untyped-def]
    assert any(expected in t for t in texts(nlp, turns)), texts(nlp, turns)


def test_a_memory_saying_we_names_its_speaker_even_when_it_names_someone_else(nlp) -> None:  # type: ignore[no-untyped-def]
    """Whose "we" it is depends on the speaker: "Rosa took us to the harbour" alone loses who went."""
    found = texts(nlp, [("Noor", "Rosa took us to the harbour and we ate grilled sardines.")])
    assert any(t.startswith("Noor: ") and "Rosa" in t for t in found), found


def test_a_capitalised_company_opening_a_clause_is_no_referent(nlp) -> None:  # type: ignore[no-untyped-def]
    turns = [
        ("Priya", "the account manager there is Jenna Hart."),
        ("Assistant", "Saved: Lumacore provides the map tiles, and Jenna Hart is the contact."),
        ("Assistant", "I won't repeat her details."),
    ]
    assert any("Jenna Hart's details" in t for t in texts(nlp, turns)), texts(nlp, turns)


@pytest.mark.parametrize(
    ("speaker", "said", "expected"),
    [
        ("Alicia Moreno", "I'd book the room before Friday.", "Alicia Moreno would book the room"),
        ("Sam", "I'd already paid the deposit.", "Sam had already paid the deposit"),
        ("Sam", "I've been to Lisbon twice.", "Sam has been to Lisbon twice"),
        ("Sam", "I'll call the bank about the card.", "Sam will call the bank"),
        ("Sam", "I'm allergic to shellfish.", "Sam is allergic to shellfish"),
    ],
)
def test_contractions_on_a_rewritten_pronoun_are_spelled_out(nlp, speaker, said, expected) -> None:  # type: ignore[no-untyped-def]
    found = texts(nlp, [(speaker, said)])
    assert any(expected in t for t in found), found


def test_a_contraction_on_a_resolved_third_person_is_spelled_out(nlp) -> None:  # type: ignore[no-untyped-def]
    turns = [("Sam", "My sister Ines called."), ("Sam", "She'll arrive on the late train.")]
    assert any("Ines will arrive on the late train" in t for t in texts(nlp, turns)), texts(nlp, turns)


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        # said in January 2026: the reporting verb is past, the restriction runs forward
        ("The doctor said no coffee until July.", "until July (2026-07)"),
        ("My dentist told me to wait until March.", "until March (2026-03)"),
        ("Ana said she'd visit in March.", "in March (2026-03)"),
        ("We're flying to Lisbon in March, we booked it weeks ago.", "in March (2026-03)"),
        ("The lease runs until June.", "until June (2026-06)"),
        # the small tagger reads "kicks" as a noun; the particle after it says it is the verb
        ("she said the new tile pricing kicks in on june 1", "on june 1 (2026-06-01)"),
        # a participle completing the object of "wants", "need": a deadline, not a past event
        ("Alicia wants the billing service migrated by the end of April.", "end of April (2026-04)"),
        ("We need the new roof finished by June.", "by June (2026-06)"),
        # past clauses stay in the past
        ("I lived in Porto until July.", "until July (2025-07)"),
        ("the onboarding shipped on friday by the way.", "on friday (2026-01-09)"),
        ("We got the car fixed in March.", "in March (2025-03)"),
        ("Noted, the review is on Thursday.", "on Thursday (2026-01-15)"),
        ("Noted, design review on Thursday 26 February.", "Thursday 26 February (2026-02-26)"),
        ("She said she moved there in March.", "in March (2025-03)"),
        ("Ana told me about the trip in March.", "in March (2025-03)"),
    ],
)
def test_a_year_less_date_follows_its_own_clause(nlp, said: str, expected: str) -> None:  # type: ignore[no-untyped-def]
    found = texts(nlp, [("Sam", said)])
    assert any(expected in t for t in found), found


@pytest.mark.parametrize(
    ("text", "kept_whole"),
    [
        ("my account no. is 88120045 at ING. I always forget it.", "my account no. is 88120045 at ING."),
        ("The pharmacy is approx. 5 min from here. It closes at six.", "approx. 5 min from here."),
        ("We need the invoice no. and the date. Then we can file it.", "invoice no. and the date."),
    ],
)
def test_a_period_after_an_abbreviation_does_not_end_the_sentence(nlp, text: str, kept_whole: str) -> None:  # type: ignore[no-untyped-def]
    sentences = [s.text for s in doc_sentences(nlp(text))]
    assert len(sentences) == 2 and kept_whole in sentences[0], sentences


def test_ordinary_sentence_ends_still_split(nlp) -> None:  # type: ignore[no-untyped-def]
    sentences = [
        s.text for s in doc_sentences(nlp("I live in Porto. My sister lives there too! Nice, right?"))
    ]
    assert sentences == ["I live in Porto.", "My sister lives there too!", "Nice, right?"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "It has a long battery life. ($30-$50)\nIt is light. (about 25 g) Runners like it.",
            ["It has a long battery life. ($30-$50)", "It is light. (about 25 g)", "Runners like it."],
        ),
        (
            "Done. (This aside goes on and on with many words, far more than a price, a size, a weight or a short note would ever need in a list.) Bye.",
            [
                "Done.",
                "(This aside goes on and on with many words, far more than a price, a size, a weight or a short note would ever need in a list.)",
                "Bye.",
            ],
        ),
    ],
)
def test_a_parenthesis_after_a_sentence_stays_with_it(nlp, text: str, expected: list[str]) -> None:  # type: ignore[no-untyped-def]
    """The sentencizer left "(" on the sentence and cut the aside from it: a price lost or moved."""
    assert [s.text for s in doc_sentences(nlp(text))] == expected


def test_a_place_the_ner_model_calls_a_person_is_no_referent(nlp) -> None:  # type: ignore[no-untyped-def]
    """The small model tags "Rotterdam" as a person after "in": a name after "in", "at", "the"...
    is not taken as the referent of "she"."""
    turns = [
        ("Sam", "yes please. she loves fado, is there anything in Rotterdam?"),
        ("Sam", "She wants to try stroopwafels at the market."),
    ]
    assert not any("Rotterdam wants" in t for t in texts(nlp, turns)), texts(nlp, turns)


def test_a_number_fragment_opens_the_statement_after_it(nlp) -> None:  # type: ignore[no-untyped-def]
    """ "2:04:37." alone is no statement; dropped, the race time would be lost."""
    found = texts(nlp, [("Sam", "2:04:37. no knee pain, walked the water stations like the physio said.")])
    assert any("2:04:37. no knee pain, walked the water stations" in t for t in found), found


def test_a_number_fragment_never_opens_another_list_items_statement(nlp) -> None:  # type: ignore[no-untyped-def]
    found = texts(
        nlp,
        [
            (
                "Bot",
                "Ukuleles:\n- Kala KA-C, a concert ukulele.\n- $70-$100.\n- Fender Montecito, a tenor one.",
            )
        ],
    )
    third = [t for t in found if "Fender" in t]
    assert third and not any("$70" in t for t in third), found


ASKED_FOR_RECIPES = [
    ("User", "Do you have any recipes for making yogurt in a slow cooker? Thanks!"),
    ("Bot", "Sure: heat the milk on low for two hours, then add a spoon of live yogurt."),
]


def test_what_a_user_asks_an_assistant_is_a_memory_of_their_interests(nlp) -> None:  # type: ignore[no-untyped-def]
    """A user's request to an assistant is kept as asked, in the user's role; the assistant's answer
    is its own memory, in the assistant's."""
    units = units_of_roles(nlp, ASKED_FOR_RECIPES, frozenset({"Bot"}))
    request = next(u for u in units if u.source_ids == ["m0"])
    assert request.text == "User asked Bot: Do you have any recipes for making yogurt in a slow cooker?"
    assert request.role == Role.USER and "yogurt" in request.keywords
    assert {u.role for u in units if u.source_ids == ["m1"]} == {Role.ASSISTANT}


def test_a_question_between_people_is_no_memory(nlp) -> None:  # type: ignore[no-untyped-def]
    """Between two people the answer states the fact; the question alone would be noise."""
    units = units_of_roles(nlp, ASKED_FOR_RECIPES, frozenset())
    assert [u.source_ids for u in units] == [["m1"]]


def units_of_roles(nlp, turns, assistants: frozenset[str]):  # type: ignore[no-untyped-def]
    return [d.unit for d in OfflineDecomposer().decompose(analysed(nlp, turns, assistants)).units]
