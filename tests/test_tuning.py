"""Threshold sweep: the same scores, judged at several thresholds."""

from simplemem.processors.ingest.tuning import sweep
from simplemem.schemas.window import EntropyScore, Window
from tests.helpers import message


def scored(score: float, i: int) -> tuple[Window, EntropyScore]:
    w = Window(tenant_id="t", session_id="s", messages=[message(i), message(i + 100)])
    return w, EntropyScore(score=score, novelty=0.0, divergence=score, kept=True)


def test_sweep_counts_dropped_windows_and_messages() -> None:
    results = sweep([scored(0.2, 1), scored(0.3, 2), scored(0.5, 3)], [0.25, 0.35, 0.45])
    assert [len(r.dropped) for r in results] == [1, 2, 2]
    assert [r.discard_rate for r in results] == [1 / 3, 2 / 3, 2 / 3]
    assert results[0].messages == 6
