"""Tags for long assistant answers without spaCy's network: Penn tags in spaCy's conventions, and a
long answer's statements, keywords and verb agreement as the stages read them."""

from functools import partial
from typing import Any

import pytest

from simplemem.processors.language.lexicon_tags import lexicon_tag
from tests.helpers import chat_event

pytestmark = pytest.mark.slow


def tags(nlp: Any, text: str) -> list[tuple[str, str]]:
    doc = lexicon_tag(nlp(text, disable=["tok2vec", "tagger", "ner"]))
    return [(t.text, t.tag_) for t in doc if not t.is_space]


def test_words_get_penn_tags_in_spacys_conventions(nlp: Any) -> None:
    tagged = dict(
        tags(nlp, "I recommend the Park Hyatt (in Shinjuku) because it's quiet and costs 150 dollars.")
    )
    assert tagged["I"] == "PRP"
    assert tagged["recommend"] == "VBP"  # present tense after "I", as spaCy tags it
    assert tagged["Hyatt"] == "NNP" and tagged["Shinjuku"] == "NNP"
    assert (tagged["("], tagged[")"]) == ("-LRB-", "-RRB-")
    assert tagged["'s"] == "VBZ"  # "it's" is "it is", not a possessive
    assert tagged["150"] == "CD" and tagged["dollars"] == "NNS"


def test_a_list_number_is_a_marker_and_a_possessive_stays_one(nlp: Any) -> None:
    tagged = tags(nlp, "Options:\n1. Book the hotel's shuttle early.\n2. Take the train.")
    assert ("1", "LS") in tagged and ("2", "LS") in tagged
    assert ("'s", "POS") in tagged


def test_a_long_answer_is_tagged_by_the_lexicon_and_read_like_a_tagged_one(nlp: Any, scrubber: Any) -> None:
    """The long answer skips spaCy's network; its sentences still carry the tags the stages read:
    informative statements, keywords from its nouns, the quick reply left out."""
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.ingest.decompose import OfflineDecomposer
    from simplemem.schemas.window import Window

    lines = [
        "Here are three hotels near the slopes:",
        "1. The Grand Lodge has a heated pool and costs 210 dollars a night.",
        "2. The Alpine Inn serves breakfast and sits next to the gondola.",
        "3. The Snow Cabin is the cheapest option for a family.",
        "I recommend the Alpine Inn for skiers who want an early start.",
        "Let me know if you need more options!",
    ]
    event = chat_event("a1", "assistant", "\n".join(lines))
    preparer = NlpPreparer(nlp, scrubber, long_answer_chars=100)
    [message] = preparer.prepare([event])
    assert all(t.tag for s in message.sentences for t in s.tokens)
    informative = [s.text for s in message.sentences if s.informative]
    assert informative == [line.split(". ", 1)[-1] for line in lines[:5]]
    message.embedding = [1.0]
    units = OfflineDecomposer().decompose(Window(tenant_id="t", session_id="s", messages=[message])).units
    texts = [d.unit.text for d in units]
    assert any(
        t.startswith("assistant, item 2 (second) of 3") and "Alpine Inn serves breakfast" in t for t in texts
    )
    assert any("assistant recommends the Alpine Inn" in t for t in texts)
    pool = next(d.unit for d in units if "heated pool" in d.unit.text)
    assert {"pool", "night"} <= set(pool.keywords)


def test_a_list_of_bare_names_keeps_every_name_and_its_place(nlp: Any, scrubber: Any) -> None:
    """An item may be a bare name ("5. Holocene"): each is a statement with its place in the list, and
    the paragraph after the list ("These venues ...") does not continue the last item."""
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.ingest.decompose import OfflineDecomposer
    from simplemem.schemas.window import Window

    venues = ["Mississippi Studios", "Doug Fir Lounge", "Holocene", "Aladdin Theater", "Revolution Hall"]
    text = "Here are some popular venues in Portland for indie music shows:\n\n"
    text += "\n".join(f"{n}. {v}" for n, v in enumerate(venues, 1))
    text += "\n\nThese venues have a reputation for hosting indie shows."
    preparer = NlpPreparer(nlp, scrubber, long_answer_chars=100)
    [message] = preparer.prepare([chat_event("a1", "assistant", text)])
    message.embedding = [1.0]
    units = OfflineDecomposer().decompose(Window(tenant_id="t", session_id="s", messages=[message])).units
    texts = [d.unit.text for d in units]
    assert any(t.startswith("assistant, item 3 (third) of 5") and t.endswith(": Holocene") for t in texts)
    assert any(
        t.startswith("assistant, item 5 (fifth, last) of 5") and t.endswith(": Revolution Hall")
        for t in texts
    )
    assert "assistant: These venues have a reputation for hosting indie shows." in texts


def answer_statements(nlp: Any, scrubber: Any, text: str, by_head: bool = True) -> list[str]:
    """The statements of an assistant's long answer: embedded once by its head (``by_head``), or
    sentence by sentence."""
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.ingest.decompose import OfflineDecomposer
    from simplemem.schemas.window import Window

    [message] = NlpPreparer(nlp, scrubber, long_answer_chars=100).prepare(
        [chat_event("a1", "assistant", text)]
    )
    message.embedding = [1.0]
    if not by_head:
        message.sentences[0].embedding = [1.0]
    window = Window(tenant_id="t", session_id="s", messages=[message])
    return [d.unit.text for d in OfflineDecomposer().decompose(window).units]


def test_a_line_that_only_introduces_a_list_is_no_memory_of_its_own(nlp: Any, scrubber: Any) -> None:
    """A long answer's lead line ("Here are some venues...:") is quoted whole by its items' labels: it
    is no statement of its own. A lead too long for the label (cut with "…") stays one, and so does
    the lead of a message embedded sentence by sentence, whose own vector may be what finds it."""
    statements = partial(answer_statements, nlp, scrubber)

    venues = "\n\n1. Mississippi Studios\n2. Holocene\n3. Revolution Hall"
    short = statements("Here are some popular venues in Portland for indie shows:" + venues)
    assert not any(t.endswith("for indie shows:") for t in short)
    assert (
        "assistant, item 2 (second) of 3 of 'Here are some popular venues in Portland for indie shows': Holocene"
        in short
    )
    cut = "Here are some of the most popular venues in Portland, Oregon for seeing indie music shows:"
    assert any(t.endswith("indie music shows:") for t in statements(cut + venues))
    by_sentence = statements(
        "Here are some popular venues in Portland for indie shows:" + venues, by_head=False
    )
    assert any(t.endswith("for indie shows:") for t in by_sentence)


def test_a_list_item_of_a_long_answer_is_one_statement(nlp: Any, scrubber: Any) -> None:
    """The sentences of one item of a long answer are one statement under the item's label (up to
    ITEM_STATEMENT_CHARS), and so are a paragraph's short ones; a message embedded sentence by
    sentence keeps a statement per sentence."""
    from simplemem.processors.ingest.decompose import ITEM_STATEMENT_CHARS

    statements = partial(answer_statements, nlp, scrubber)

    hotels = (
        "Hotels near the slopes:\n\n1. The Little Nell is a luxury hotel at the gondola. Its spa has a heated pool."
        "\n2. Limelight Hotel offers ski storage. Breakfast is included in every rate."
    )
    joined = statements(hotels)
    second = [t for t in joined if t.startswith("assistant, item 2 (second, last) of 2")]
    assert len(second) == 1 and "ski storage" in second[0] and "Breakfast" in second[0]
    assert len([t for t in statements(hotels, by_head=False) if "item 2 (second, last)" in t]) == 2
    long_item = "Tips:\n\n1. " + " ".join(
        f"Step {n} takes about ten minutes of careful work." for n in range(12)
    )
    long_item += "\n2. Rest."
    assert len(long_item) > ITEM_STATEMENT_CHARS
    assert len([t for t in statements(long_item) if "item 1 (first)" in t]) > 1
    nested = statements(
        "Ingredients:\n\n1. Chicken:\n\t+ 1 lb chicken breast, diced\n\t+ 2 tablespoons oil\n2. Rice"
    )
    # a sub-list is no code block, and its lines are its item's
    assert any(t.startswith("assistant, item 1 (first) of 2") and "2 tablespoons oil" in t for t in nested), (
        nested
    )
    paragraph = "The museum opens at nine. Tickets cost twelve euros.\n\n" + " ".join(
        f"Booking ahead is wise for groups of {n} people." for n in range(3, 11)
    )
    prose = statements(paragraph)
    assert any("opens at nine" in t and "twelve euros" in t for t in prose)
    assert len([t for t in prose if "Booking ahead" in t]) > 1  # past PARAGRAPH_STATEMENT_CHARS


def test_a_verb_agrees_with_you_only_where_you_is_its_subject(nlp: Any, scrubber: Any) -> None:
    """In a long answer (tagged by the lexicon) the verb after "help you", "let you" or "Could you"
    is a bare infinitive: "you" becomes the user's name, the verb stays as it is."""
    from simplemem.processors.ingest.analysis import NlpPreparer
    from simplemem.processors.ingest.pronouns import rewrite_pronouns

    said = {
        "This app can help you organize your week.": "This app can help User organize User's week.",
        "These apps let you track your reading.": "These apps let User track User's reading.",
        "Could you please tell me more.": "Could User please tell Assistant more.",
    }
    preparer = NlpPreparer(nlp, scrubber, long_answer_chars=100)
    [message] = preparer.prepare([chat_event("a1", "assistant", "\n".join(said))])
    rewritten = [rewrite_pronouns(s.tokens, s.text, "Assistant", "User")[0] for s in message.sentences]
    assert rewritten == list(said.values())


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        (
            "We explored an abandoned mine shaft near my house.",
            "We explored an abandoned mine shaft near Sam's house.",
        ),
        ("It's a gold mine.", "It's a gold mine."),
        ("The blue car is mine.", "The blue car is Sam's."),
    ],
)
@pytest.mark.parametrize("by_lexicon", [False, True])
def test_mine_is_the_speakers_only_as_a_pronoun(nlp: Any, by_lexicon: bool, said: str, expected: str) -> None:
    from simplemem.processors.ingest.pronouns import rewrite_pronouns
    from simplemem.processors.language.nlp import doc_sentences

    doc = lexicon_tag(nlp(said, disable=["tok2vec", "tagger", "ner"])) if by_lexicon else nlp(said)
    [sentence] = doc_sentences(doc)
    assert rewrite_pronouns(sentence.tokens, sentence.text, "Sam", "Bot")[0] == expected


def test_every_tag_is_one_spacys_tagger_gives(nlp: Any) -> None:
    """Pattern writes a few tags spaCy has not ("#", "£", ambiguous "NN|JJ"): they are mapped onto its."""
    from simplemem.processors.language.lexicon_tags import SPACY_TAGS

    tagged = tags(
        nlp, "Use #hashtags, pay £5 or €5 (see http://x.io) :) and go #1 - it's a well-made, top-notch plan."
    )
    assert {t for _, t in tagged} <= SPACY_TAGS
    assert ("£", "$") in tagged
