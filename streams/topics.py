"""The topics and their retention: created up front (by `worker`, `publish`), so any client can publish.

``turns`` and ``dlq`` keep everything (replay and lazy migration re-read them); ``units`` and
``outcomes`` are compacted by key (the latest word on a unit or a turn); ``scrubbed`` is an internal
hand-over and expires after a week.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError

from schemas.settings import Settings

log = logging.getLogger(__name__)

WEEK_MS = 7 * 24 * 3600 * 1000
MAX_RECORD_BYTES = 8 * 1024 * 1024  # a session's state with its open window stays well below this


@dataclass(frozen=True)
class TopicSpec:
    name: str
    config: dict[str, str]


def topic_specs(settings: Settings) -> list[TopicSpec]:
    forever = {"retention.ms": "-1", "retention.bytes": "-1"}
    compact = {"cleanup.policy": "compact"}
    big = {"max.message.bytes": str(MAX_RECORD_BYTES)}
    return [
        TopicSpec(settings.topic(settings.turns_topic), forever),
        TopicSpec(settings.topic(settings.scrubbed_topic), {"retention.ms": str(WEEK_MS), **big}),
        TopicSpec(settings.topic(settings.units_topic), compact),
        TopicSpec(settings.topic(settings.outcomes_topic), compact),
        TopicSpec(settings.topic(settings.deletions_topic), forever),
        TopicSpec(settings.topic(settings.dlq_topic), forever),
    ]


async def ensure_topics(settings: Settings) -> list[str]:
    """Create the missing topics; returns the names created."""
    admin = AIOKafkaAdminClient(bootstrap_servers=settings.kafka_endpoint)
    await admin.start()
    created = []
    try:
        existing = set(await admin.list_topics())
        for spec in topic_specs(settings):
            if spec.name in existing:
                continue
            new = NewTopic(
                spec.name, settings.topic_partitions, settings.topic_replication, topic_configs=spec.config
            )
            try:
                await admin.create_topics([new])
                created.append(spec.name)
            except TopicAlreadyExistsError:
                pass
    finally:
        await admin.close()
    if created:
        log.info("created topics %s", ", ".join(created))
    return created
