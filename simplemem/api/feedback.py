"""The feedback loop's log: answers an agent called wrong, with the complexity and k that produced
them (classifier misses, kept for tuning; ``simplemem feedback export`` writes them out).

The query text is scrubbed before it is logged: the log is durable. Embedded mode appends to
``<store>/feedback.jsonl``; services mode to a Redis list that every replica shares.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from simplemem.processors.stores.private import private_file
from simplemem.processors.stores.redis_keys import RedisKeys
from simplemem.schemas.api import FeedbackRecord
from simplemem.schemas.settings import Settings

if TYPE_CHECKING:
    import redis

FEEDBACK_FILE = "feedback.jsonl"


class FeedbackLog(Protocol):
    def add(self, record: FeedbackRecord) -> None: ...

    def export(self) -> list[FeedbackRecord]: ...


class FileFeedbackLog:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def add(self, record: FeedbackRecord) -> None:
        private_file(self.path)
        with self._lock, self.path.open("ab") as out:
            out.write(record.model_dump_json().encode() + b"\n")

    def export(self) -> list[FeedbackRecord]:
        if not self.path.exists():
            return []
        return [FeedbackRecord.model_validate_json(line) for line in self.path.read_bytes().splitlines()]


class RedisFeedbackLog:
    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self._r = client
        self._key = RedisKeys(prefix).feedback()

    def add(self, record: FeedbackRecord) -> None:
        self._r.rpush(self._key, record.model_dump_json())

    def export(self) -> list[FeedbackRecord]:
        return [FeedbackRecord.model_validate_json(raw) for raw in self._r.lrange(self._key, 0, -1)]


def open_feedback_log(settings: Settings, store_dir: Path) -> FeedbackLog:
    if settings.mode == "services":
        import redis

        return RedisFeedbackLog(redis.Redis.from_url(settings.redis_endpoint), settings.redis_key_prefix)
    return FileFeedbackLog(store_dir / FEEDBACK_FILE)
