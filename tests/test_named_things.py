"""What counts as a named thing (entity novelty, symbolic index): values such as amounts and shares."""

from datetime import UTC, datetime
from typing import Any

import pytest

from simplemem.schemas.events import ChatEvent

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def preparer(nlp: Any, scrubber: Any) -> Any:
    from simplemem.processors.ingest.analysis import NlpPreparer

    return NlpPreparer(nlp, scrubber)


def test_percentages_are_named_things_like_amounts(preparer: Any) -> None:
    """A reply of shares alone ("midterm 30 percent, problem sets 20, final 50") named nothing, so
    its window earned no entity novelty and was dropped although nothing like it had been said."""
    event = ChatEvent(
        tenant_id="t",
        session_id="s",
        message_id="m1",
        speaker="jay",
        role="user",
        text="the midterm is 30 percent of the grade and the final is 50%",
        ts=datetime(2026, 1, 1, tzinfo=UTC),
    )
    [message] = preparer.prepare([event])
    assert {"30 percent", "50%"} <= set(message.entities)
