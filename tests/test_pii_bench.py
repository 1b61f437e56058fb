"""The labelled PII set (tests/data/pii_cases.jsonl) meets its targets through the pipeline's preparer."""

from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow


def test_pii_bench_meets_its_targets(settings: Any, tmp_path: Path) -> None:
    from bench.pii import evaluate, load_cases
    from simplemem.runtime import open_runtime

    report = evaluate(open_runtime(settings, tmp_path).nlp_preparer, load_cases())
    assert report.failed_targets() == [], [case.text for case, _ in report.misses]
