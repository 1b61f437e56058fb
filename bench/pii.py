"""PII scrubbing on a labelled set of chat sentences: recall per type and false positives.

    python -m bench.pii [--data tests/data/pii_cases.jsonl] [--misses N]

Each case goes through the pipeline's own NLP half (``Runtime.nlp_preparer``: spaCy, Presidio with
our recognizers, code split), as an ingested turn would. A positive is caught when its value no
longer appears in the scrubbed text; "typed" says the placeholder named its type. A look-alike is a
false positive when its ``keep`` string did not survive.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.common import scratch_store
from simplemem.processors.ingest.analysis import NlpPreparer
from simplemem.schemas.events import ChatEvent
from simplemem.schemas.settings import REPO_ROOT, Settings

DEFAULT_CASES = REPO_ROOT / "tests" / "data" / "pii_cases.jsonl"
HARMLESS = "NONE"
TARGET_RECALL = 0.98
TARGET_RECALL_TYPES = ("SECRET", "CREDIT_CARD", "US_SSN", "EMAIL_ADDRESS", "PHONE_NUMBER", "STREET_ADDRESS")
MAX_FALSE_POSITIVE_RATE = 0.02


@dataclass(frozen=True)
class Case:
    text: str
    type: str
    value: str = ""
    keep: str = ""


@dataclass
class Report:
    total: Counter[str] = field(default_factory=Counter)
    caught: Counter[str] = field(default_factory=Counter)
    typed: Counter[str] = field(default_factory=Counter)
    misses: list[tuple[Case, str]] = field(default_factory=list)

    def recall(self, kind: str) -> float:
        return self.caught[kind] / self.total[kind] if self.total[kind] else 1.0

    @property
    def false_positive_rate(self) -> float:
        return 1 - self.recall(HARMLESS)

    def failed_targets(self) -> list[str]:
        failed = [
            f"{kind} recall {self.recall(kind):.3f} < {TARGET_RECALL}"
            for kind in TARGET_RECALL_TYPES
            if self.recall(kind) < TARGET_RECALL
        ]
        if self.false_positive_rate > MAX_FALSE_POSITIVE_RATE:
            failed.append(f"false positives {self.false_positive_rate:.3f} > {MAX_FALSE_POSITIVE_RATE}")
        return failed


def load_cases(path: Path = DEFAULT_CASES) -> list[Case]:
    return [Case(**orjson.loads(line)) for line in path.read_bytes().splitlines() if line.strip()]


def evaluate(preparer: NlpPreparer, cases: list[Case]) -> Report:
    """Scrub every case as one turn; "caught" counts a removed value, or a kept look-alike."""
    ts = datetime(2026, 1, 1, tzinfo=UTC)
    events = [
        ChatEvent(
            tenant_id="bench",
            session_id="pii",
            message_id=str(i),
            speaker="user",
            role="user",
            text=c.text,
            ts=ts,
        )
        for i, c in enumerate(cases)
    ]
    report = Report()
    for case, message in zip(cases, preparer.prepare(events), strict=True):
        report.total[case.type] += 1
        ok = case.keep in message.text if case.type == HARMLESS else case.value not in message.text
        if ok:
            report.caught[case.type] += 1
            report.typed[case.type] += case.type == HARMLESS or f"<{case.type}>" in message.text
        else:
            report.misses.append((case, message.text))
    return report


def print_report(report: Report, misses: int) -> None:
    print(f"{'type':<15}{'items':>6}{'recall':>9}{'typed':>8}")
    for kind in sorted(k for k in report.total if k != HARMLESS):
        n = report.total[kind]
        print(f"{kind:<15}{n:>6}{report.recall(kind):>9.3f}{report.typed[kind] / n:>8.3f}")
    positives = sum(n for k, n in report.total.items() if k != HARMLESS)
    caught = sum(n for k, n in report.caught.items() if k != HARMLESS)
    typed = sum(n for k, n in report.typed.items() if k != HARMLESS)
    print(f"{'all positives':<15}{positives:>6}{caught / positives:>9.3f}{typed / positives:>8.3f}")
    harmless = report.total[HARMLESS]
    altered = harmless - report.caught[HARMLESS]
    print(f"look-alikes: {harmless}, altered {altered}, false-positive rate {report.false_positive_rate:.3f}")
    for case, scrubbed in report.misses[:misses]:
        what = f"kept {case.keep!r}" if case.type == HARMLESS else f"{case.type} {case.value!r}"
        print(f"  miss: {what}\n        -> {scrubbed!r}")
    failed = report.failed_targets()
    print("targets: " + ("met" if not failed else "MISSED: " + "; ".join(failed)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DEFAULT_CASES, help="the labelled cases (JSON lines)")
    ap.add_argument("--misses", type=int, default=50, help="print at most this many misses")
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from simplemem.cli.console import quiet_libraries
    from simplemem.runtime import open_runtime

    quiet_libraries()
    runtime = open_runtime(Settings(), scratch_store("simplemem-bench-"))
    print_report(evaluate(runtime.nlp_preparer, load_cases(args.data)), args.misses)
    runtime.close()


if __name__ == "__main__":
    main()
