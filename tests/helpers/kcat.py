"""Publishing turns with kcat, as a frontend that is not ours does: keyed by session (Java's murmur2
partitioner, like every client), one record per line."""

from __future__ import annotations

import subprocess

import orjson

from simplemem.infra.stack import ensure_kcat
from simplemem.schemas.keys import SessionKey
from simplemem.schemas.settings import Settings


def kcat_publish(settings: Settings, lines: list[bytes]) -> None:
    """Publish ``lines`` to the turns topic; a line without a session goes under the key ``unkeyed``."""
    payload = b""
    for raw in lines:
        try:
            data = orjson.loads(raw)
            key = SessionKey(data["tenant_id"], data["session_id"]).encode()
        except (orjson.JSONDecodeError, KeyError, TypeError):
            key = b"unkeyed"
        payload += key + b"\t" + raw.rstrip(b"\n") + b"\n"
    cmd = [ensure_kcat(), "-P", "-b", settings.kafka_endpoint, "-t", settings.topic(settings.turns_topic)]
    cmd += ["-K", "\t", "-X", "partitioner=murmur2_random", "-X", "message.max.bytes=2000000"]
    subprocess.run(cmd, input=payload, check=True, timeout=60)
