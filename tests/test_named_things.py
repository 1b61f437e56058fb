"""What counts as a named thing (entity novelty, symbolic index): values such as amounts and shares."""

from typing import Any

import pytest

from tests.helpers import chat_event

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def preparer(nlp: Any, scrubber: Any) -> Any:
    from simplemem.processors.ingest.analysis import NlpPreparer

    return NlpPreparer(nlp, scrubber)


def test_percentages_are_named_things_like_amounts(preparer: Any) -> None:
    """A reply of shares alone ("midterm 30 percent, problem sets 20, final 50") named nothing, so
    its window earned no entity novelty and was dropped although nothing like it had been said."""
    event = chat_event(
        "m1", "user", "the midterm is 30 percent of the grade and the final is 50%", speaker="jay"
    )
    [message] = preparer.prepare([event])
    assert {"30 percent", "50%"} <= set(message.entities)


def test_a_long_answer_is_analysed_without_the_entity_recognizer_and_still_scrubbed(
    nlp: Any, scrubber: Any
) -> None:
    """A long assistant answer skips NER (its statements are found by their words); the user's
    messages keep it, and the PII recognizers, patterns and cue words, scrub both alike."""
    from simplemem.processors.ingest.analysis import NlpPreparer

    sentence = "Maria Lopez moved to Lisbon in March; call her on +1 415 555 0132 about the lease."
    answer = " ".join([sentence] * 8)  # about 700 characters
    preparer = NlpPreparer(nlp, scrubber, long_answer_chars=512)

    def said(role: str, text: str) -> Any:
        [message] = preparer.prepare([chat_event(f"m-{role}", role, text)])
        return message

    long_answer, user = said("assistant", answer), said("user", answer)
    assert not any(t.ent for s in long_answer.sentences for t in s.tokens)
    assert any(t.ent.endswith("PERSON") for s in user.sentences for t in s.tokens)
    assert "lisbon" in long_answer.entities  # a proper noun by its tag still counts as a named thing
    for message in (long_answer, user):
        assert "555 0132" not in message.text and "<PHONE_NUMBER>" in message.text
    short = said("assistant", sentence)
    assert any(t.ent for s in short.sentences for t in s.tokens)
