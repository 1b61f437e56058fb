"""Entropy filter arithmetic on synthetic vectors (the MiniLM path is covered end to end)."""

import pytest

from simplemem.processors.ingest.entropy import EntropyFilter, SessionHistory
from simplemem.processors.language.polarity import denies_of_self
from simplemem.schemas.events import Role
from simplemem.schemas.window import Sentence, Window
from tests.helpers import message


def window(msgs: list, new_from: int = 0) -> Window:
    return Window(tenant_id="t1", session_id="s1", messages=msgs, new_from=new_from)


class Session:
    """The filter over one session's windows, keeping its history as the pipeline does."""

    def __init__(self, f: EntropyFilter) -> None:
        self.f = f
        self.history = SessionHistory()

    def decide(self, w: Window):  # type: ignore[no-untyped-def]
        score = self.f.score(w, self.history)
        self.history = self.f.remember(self.history, w.new_messages)
        return score


@pytest.mark.parametrize("entities", [["bob"], []])
@pytest.mark.parametrize("alpha", [0.5, 0.8])
def test_a_first_window_scores_one_with_or_without_named_things(entities: list[str], alpha: float) -> None:
    f = EntropyFilter(threshold=0.35, alpha=alpha, history_messages=20)
    s = f.score(window([message(0, entities=entities, embedding=[1.0, 0.0])]), SessionHistory())
    assert s.score == 1.0 and s.kept


def test_repeated_content_is_dropped_and_novel_content_kept() -> None:
    f = Session(EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20))
    f.decide(window([message(0, entities=["bob"], embedding=[1.0, 0.0])]))
    same = f.decide(window([message(1, entities=["bob"], embedding=[1.0, 0.0])]))
    assert same.novelty == 0.0 and same.divergence == pytest.approx(0.0) and not same.kept
    new = f.decide(window([message(2, entities=["alice"], embedding=[0.0, 1.0])]))
    assert new.novelty == 1.0 and new.divergence == pytest.approx(1.0) and new.kept


def test_score_formula_and_alpha() -> None:
    f = EntropyFilter(threshold=0.35, alpha=0.25, history_messages=20)
    history = SessionHistory(vectors=[[[1.0, 0.0]]], entities=[["bob"]])
    s = f.score(window([message(1, entities=["bob", "alice"], embedding=[0.6, 0.8])]), history)
    assert s.novelty == pytest.approx(0.5)
    assert s.divergence == pytest.approx(0.4)
    assert s.score == pytest.approx(0.25 * 0.5 + 0.75 * 0.4)


def test_history_is_bounded() -> None:
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=3)
    h = SessionHistory()
    for i in range(5):
        h = f.remember(h, [message(i, entities=[f"e{i}"], embedding=[1.0, 0.0])])
    assert h.entities == [["e2"], ["e3"], ["e4"]]


def test_small_talk_window_without_vectors_scores_zero_after_history() -> None:
    f = Session(EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20))
    f.decide(window([message(0, entities=["bob"], embedding=[1.0, 0.0])]))
    s = f.decide(window([message(1)]))
    assert s.score == 0.0 and not s.kept


def test_one_new_fact_among_repeats_makes_the_window_diverge() -> None:
    """Divergence follows the window's most novel message, each compared with its nearest recent
    message: a new fact is not averaged away by the chatter around it, and a window that only
    repeats what was said (in any order) does not diverge."""
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    said = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    history = SessionHistory(vectors=[[v] for v in said], entities=[["bob"]])
    repeats = [message(i, entities=["bob"], embedding=v) for i, v in enumerate(said)]
    assert f.score(window(repeats[::-1]), history).divergence == pytest.approx(0.0)
    fact = message(9, entities=["bob"], embedding=[0.0, 0.0, 1.0])
    mixed = f.score(window([*repeats, fact]), history)
    assert mixed.divergence == pytest.approx(1.0) and mixed.kept


def with_statements(i: int, *vectors: list[float]) -> object:
    m = message(i, entities=["bob"])
    m.sentences = [Sentence(text=f"s{j}", tokens=[], embedding=v) for j, v in enumerate(vectors)]
    return m


def test_a_new_statement_beside_a_repeated_one_diverges() -> None:
    """Statements, not message means, are compared: "Thanks, Mel!" beside a new fact in the same
    message does not pull the fact towards what was already said."""
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    history = f.remember(SessionHistory(), [with_statements(0, [1.0, 0.0, 0.0])])
    assert history.vectors == [[[1.0, 0.0, 0.0]]]
    repeat_and_fact = with_statements(1, [1.0, 0.0, 0.0], [0.0, 0.0, 1.0])
    assert f.score(window([repeat_and_fact]), history).divergence == pytest.approx(1.0)
    assert f.score(window([with_statements(2, [1.0, 0.0, 0.0])]), history).divergence == pytest.approx(0.0)


def test_history_written_with_one_vector_per_message_still_loads() -> None:
    old = SessionHistory.model_validate({"vectors": [[1.0, 0.0], [], [0.0, 1.0]], "entities": [["bob"]]})
    assert old.vectors == [[[1.0, 0.0]], [], [[0.0, 1.0]]]
    new_json = SessionHistory(vectors=[[[1.0, 0.0]], []]).model_dump_json()
    assert SessionHistory.model_validate_json(new_json).vectors == [[[1.0, 0.0]], []]
    old_json = '{"vectors": ["AACAPwAAAAA=", ""], "entities": []}'  # [1.0, 0.0] and an empty vector
    assert SessionHistory.model_validate_json(old_json).vectors == [[[1.0, 0.0]], []]


def test_history_travels_at_half_precision() -> None:
    """The history rides along with every state write: float16 in JSON halves it, and the cosines
    the filter compares against its threshold move by far less than the threshold's resolution."""
    import numpy as np

    rng = np.random.default_rng(7)
    v = rng.standard_normal(384).astype(np.float32)
    v /= np.linalg.norm(v)
    back = SessionHistory.model_validate_json(SessionHistory(vectors=[[v.tolist()]]).model_dump_json())
    restored = np.asarray(back.vectors[0][0], dtype=np.float32)
    assert abs(float(restored @ v) - 1.0) < 1e-3
    assert len(SessionHistory(vectors=[[v.tolist()]]).model_dump_json()) < 384 * 3


def with_code(i: int, code: str) -> object:
    return message(i, embedding=[1.0, 0.0]).model_copy(update={"code_blocks": [code]})


def test_names_new_to_the_session_in_code_count_as_novelty_and_known_ones_do_not() -> None:
    """The NER model tags no identifiers: a rewritten function, which shares its topic (vector)
    with what came before, earns novelty from the names its code brings, not from plain words."""
    f = Session(EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20))
    f.decide(
        window([with_code(0, "import requests\ndef fetch_event(event_id):\n    return requests.get(url)")])
    )
    rewrite = f.decide(
        window([with_code(1, 'def fetch_event(event_id):\n    key = os.environ["STRIPE_API_KEY"]')])
    )
    assert rewrite.novelty == pytest.approx(1 / 3, abs=1e-3)  # of fetch_event, event_id, STRIPE_API_KEY
    again = f.decide(
        window([with_code(2, "import requests\nclient = requests.Session()\nfetch_event(event_id)")])
    )
    assert again.novelty == 0.0  # requests, client, Session: plain words


def test_a_window_a_pause_cut_to_one_turn_is_judged_on_a_full_stretch() -> None:
    """Turns decided one by one (a pause after each) are judged with the turns before them, as in a
    full window; a full window and a session's last window keep judging their new turns alone."""
    from simplemem.schemas.window import CloseReason

    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20, judged_messages=3)
    s = Session(f)
    s.decide(window([message(0, entities=["old"], embedding=[1.0, 0.0])]))
    news = [message(i, entities=[f"new{i}"], embedding=[0.0, 1.0]) for i in (1, 2)]
    for i in range(len(news)):
        s.decide(
            Window(
                tenant_id="t1", session_id="s1", messages=news[: i + 1], new_from=i, reason=CloseReason.PAUSE
            )
        )
    quiet = message(3, embedding=[0.0, 1.0])  # names nothing, says what was just said
    msgs = [*news, quiet]
    paused = f.score(
        Window(tenant_id="t1", session_id="s1", messages=msgs, new_from=2, reason=CloseReason.PAUSE),
        s.history,
    )
    alone = f.score(
        Window(tenant_id="t1", session_id="s1", messages=msgs, new_from=2, reason=CloseReason.END), s.history
    )
    assert paused.kept and paused.novelty == 1.0  # the stretch names new things
    assert not alone.kept and alone.score == 0.0


def said_as(i: int, role: Role, text: str, vector: list[float]) -> object:
    m = message(i, entities=["redis"])
    m.role = role
    m.sentences = [Sentence(text=text, tokens=[], embedding=vector)]
    return m


def test_a_person_denying_what_they_said_is_never_redundant() -> None:
    """ "I've never used Redis" after "I've used Redis for caching": one vector for both, the same
    names, yet it contradicts what was said. A person's denial diverges fully; the assistant's ("I
    don't have access to ...") and a hedge ("I'm not sure it fits") do not."""
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    history = f.remember(
        SessionHistory(), [said_as(0, Role.USER, "I've used Redis for caching.", [1.0, 0.0])]
    )
    denial = f.score(window([said_as(1, Role.USER, "I've never used Redis, actually.", [1.0, 0.0])]), history)
    assert denial.divergence == 1.0 and denial.kept
    for role, text in [
        (Role.ASSISTANT, "I don't have access to your Redis setup."),
        (Role.USER, "I'm not sure Redis fits for caching."),
    ]:
        score = f.score(window([said_as(2, role, text, [1.0, 0.0])]), history)
        assert score.divergence == pytest.approx(0.0) and not score.kept


@pytest.mark.parametrize(
    ("sentence", "denies"),
    [
        ("I’ve never actually obtained an API key", True),
        ("I don't eat meat", True),
        ("I haven't met Michael yet", True),
        ("I'm not a fan of tea", True),
        ("I'm not sure why that's relevant", False),
        ("I don't know how to start", False),
        ("I don't think so", False),
        ("Never mind, I've got it", False),
        ("She never called back", False),
    ],
)
def test_a_denial_of_self_is_told_from_a_hedge(sentence: str, denies: bool) -> None:
    assert denies_of_self(sentence) is denies


def test_a_window_is_as_novel_as_its_most_novel_message() -> None:
    """A user's new date beside an answer that repeats a dozen names from its headings: the window's
    novelty is that of the user's message (one of its two names is new), not one name in thirteen."""
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    headings = [f"heading{i}" for i in range(11)]
    history = f.remember(
        SessionHistory(), [message(0, entities=["francis", *headings], embedding=[1.0, 0.0])]
    )
    user = message(1, entities=["francis", "march 12"], embedding=[1.0, 0.0])
    answer = message(2, entities=headings, embedding=[1.0, 0.0])
    assert f.score(window([user, answer]), history).novelty == pytest.approx(0.5)
