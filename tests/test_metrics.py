"""The LoCoMo measures of ``bench/locomo.py``: dates are compared in ISO form, whatever their spelling."""

import pytest

from bench.metrics import answer_recall, content_tokens, evidence_recall


@pytest.mark.parametrize(
    ("answer", "context", "expected"),
    [
        ("7 May 2023", "[2023-05-07] Caroline went to a support group.", 1.0),
        ("The week before 3June, 2022", "[2022-06-03] Nate won a tournament last week.", 2 / 3),
        ("June 2023", "Jon went to Rome in June 2023.", 1.0),
        ("June 2023", "[2023-06-12] Jon went to Rome.", 0.0),
        ("a 5K charity run", "Maria ran a 5K for charity.", 2 / 3),
    ],
)
def test_answer_recall_compares_dates_in_iso_form(answer: str, context: str, expected: float) -> None:
    assert answer_recall(answer, context) == pytest.approx(expected)


def test_a_glued_day_is_a_date_but_ordinals_and_units_stay_words() -> None:
    assert content_tokens("24June, 2022") == ["2022-06-24"]
    assert content_tokens("the 18th birthday, a 5K run") == ["18th", "birthday", "5k", "run"]


def test_evidence_recall_is_the_cited_share_of_gold() -> None:
    assert evidence_recall(["D1:1", "D2:3"], {"D1:1", "D9:9"}) == 0.5
    assert evidence_recall([], set()) == 1.0
