"""The durable history: a tenant's scrubbed, analysed turns as retained on the scrubbed topic.

Raw turns expire (``raw_retention_seconds``); the scrubbed topic is kept, so ``replay`` (a rebuilt
store, a migration to new stores or a new version) re-derives memory from it without raw text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import ValidationError

from simplemem.schemas.keys import SessionKey
from simplemem.schemas.settings import Settings
from simplemem.schemas.stream import ScrubbedRecord
from simplemem.schemas.window import AnalyzedMessage
from simplemem.streams.kafka_io import iter_topic


@dataclass
class HistoryCount:
    records: int = 0  # retained records read
    turns: int = 0  # the tenant's turns among them (once each)
    repeated: int = 0  # the same turn written again (a scrub batch replayed after a crash)


def tenant_history(settings: Settings, tenant_id: str, count: HistoryCount) -> Iterator[AnalyzedMessage]:
    """The tenant's turns in the order each session said them, read a fetch at a time."""
    last: dict[SessionKey, tuple[int, int]] = {}  # session -> position of its last turn on `turns`
    for record in iter_topic(settings, settings.topic(settings.scrubbed_topic)):
        count.records += 1
        if record.value is None:
            continue
        try:
            stage = ScrubbedRecord.model_validate_json(record.value)
        except ValidationError:
            continue  # not a stage record (it was dead-lettered when it was first read)
        if stage.tenant_id != tenant_id or stage.message is None or stage.source is None:
            continue
        position = (stage.source.partition, stage.source.offset)
        seen = last.get(stage.session_key)
        if seen is not None and seen[0] == position[0] and position[1] <= seen[1]:
            count.repeated += 1
            continue
        last[stage.session_key] = position
        count.turns += 1
        yield stage.message
