"""Entropy filter arithmetic on synthetic vectors (the MiniLM path is covered end to end)."""

import pytest

from processors.entropy import EntropyFilter, SessionHistory
from schemas.window import Window
from tests.helpers import message


def window(msgs: list, new_from: int = 0) -> Window:
    return Window(tenant_id="t1", session_id="s1", messages=msgs, new_from=new_from)


def test_first_window_scores_one() -> None:
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    s = f.decide(window([message(0, entities=["bob"], embedding=[1.0, 0.0])]))
    assert s.score == 1.0 and s.kept


def test_repeated_content_is_dropped_and_novel_content_kept() -> None:
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    f.decide(window([message(0, entities=["bob"], embedding=[1.0, 0.0])]))
    same = f.decide(window([message(1, entities=["bob"], embedding=[1.0, 0.0])]))
    assert same.novelty == 0.0 and same.divergence == pytest.approx(0.0) and not same.kept
    new = f.decide(window([message(2, entities=["alice"], embedding=[0.0, 1.0])]))
    assert new.novelty == 1.0 and new.divergence == pytest.approx(1.0) and new.kept


def test_score_formula_and_alpha() -> None:
    f = EntropyFilter(threshold=0.35, alpha=0.25, history_messages=20)
    history = SessionHistory(vectors=[[1.0, 0.0]], entities=[["bob"]])
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
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    f.decide(window([message(0, entities=["bob"], embedding=[1.0, 0.0])]))
    s = f.decide(window([message(1)]))
    assert s.score == 0.0 and not s.kept


def test_one_new_fact_among_repeats_makes_the_window_diverge() -> None:
    """Divergence follows the window's most novel message, each compared with its nearest recent
    message: a new fact is not averaged away by the chatter around it, and a window that only
    repeats what was said (in any order) does not diverge."""
    f = EntropyFilter(threshold=0.35, alpha=0.5, history_messages=20)
    history = SessionHistory(vectors=[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], entities=[["bob"]])
    repeats = [message(i, entities=["bob"], embedding=v) for i, v in enumerate(history.vectors)]
    assert f.score(window(repeats[::-1]), history).divergence == pytest.approx(0.0)
    fact = message(9, entities=["bob"], embedding=[0.0, 0.0, 1.0])
    mixed = f.score(window([*repeats, fact]), history)
    assert mixed.divergence == pytest.approx(1.0) and mixed.kept
