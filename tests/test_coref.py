"""Who a window names, on given tags: the rules of :mod:`simplemem.processors.language.coref` without the NER model's
moods (the decomposition tests run the same rules on the model's own tags)."""

from __future__ import annotations

from simplemem.processors.language.coref import PeopleTracker
from simplemem.schemas.window import Token


def tokens(*words: str) -> list[Token]:
    """``text/TAG`` or ``text/TAG/ENTITY`` words, e.g. ``"priti/NNP/B-ORG"``."""
    out: list[Token] = []
    for word in words:
        text, tag, *ent = word.split("/")
        out.append(Token(text, " ", "", tag, ent[0] if ent else ""))
    return out


def names(*sentences: list[Token]) -> list[str]:
    tracker = PeopleTracker()
    return [m.name for s in sentences for m in tracker.observe(s)[1]]


def test_a_capitalised_word_tagged_as_a_common_noun_is_no_person_whatever_ner_says() -> None:
    assert names(tokens("Lisinopril/NN/B-PERSON", "10/CD", "mg/NNS", ",/,", "noted/VBD")) == []


def test_a_capitalised_word_tagged_as_a_verb_is_no_person_whatever_ner_says() -> None:
    """A list item opening with its verb ("Captures the awesome power of nature."): a person here
    became the "her" of the assistant's next answer."""
    assert names(tokens("Captures/VBZ/B-PERSON", "the/DT", "awesome/JJ", "power/NN")) == []
    assert names(tokens("Maya/NNP/B-PERSON", "captures/VBZ", "the/DT", "power/NN")) == ["Maya"]


def test_a_lower_case_name_tagged_as_a_noun_stays_a_person_when_ner_says_so() -> None:
    assert names(tokens("ines/NN/B-PERSON", "called/VBD")) == ["ines"]


def test_a_lower_case_proper_noun_opening_its_clause_is_a_name() -> None:
    assert names(tokens("yeah/UH", "./.", "priti/NNP/B-ORG", "set/VBD", "up/RP", "the/DT", "db/NN")) == [
        "priti"
    ]


def test_a_capitalised_proper_noun_opening_a_clause_is_left_to_the_ner_model() -> None:
    assert names(tokens("Lumacore/NNP", "provides/VBZ", "the/DT", "tiles/NNS")) == []


def test_a_place_or_date_the_ner_model_named_is_no_bare_subject() -> None:
    assert names(tokens("boston/NNP/B-GPE", "is/VBZ", "cold/JJ")) == []
    assert names(tokens("june/NNP/B-DATE", "works/VBZ")) == []


def test_a_bare_subject_needs_its_verb_and_a_clause_start() -> None:
    assert names(tokens("priti/NNP", "'s/POS", "laptop/NN")) == []
    assert names(tokens("the/DT", "priti/NNP", "said/VBD")) == []
    assert names(tokens("bp/NNP", "is/VBZ", "down/RB")) == []  # too short for a name


def test_a_role_word_and_a_linking_verb_introduce_a_lower_case_name_with_its_gender() -> None:
    tracker = PeopleTracker()
    _, found = tracker.observe(tokens("our/PRP$", "sister/NN", "is/VBZ", "kayla/NN", ",/,", "she/PRP"))
    assert [m.name for m in found] == ["kayla"]
    assert tracker.genders == {"kayla": "female"}


def test_a_role_word_is_never_the_name() -> None:
    assert names(tokens("physio/NNP", "changed/VBD", "too/RB")) == []
    assert names(tokens("my/PRP$", "gp/NN", "is/VBZ", "dr/NNP", "./NNP", "okafor/NNP")) == ["okafor"]


def test_a_pet_introduced_by_its_word_is_no_person() -> None:
    tracker = PeopleTracker()
    _, found = tracker.observe(tokens("our/PRP$", "dog/NN", "is/VBZ", "pepper/NN"))
    assert [(m.name, m.listed) for m in found] == [("pepper", False)]
