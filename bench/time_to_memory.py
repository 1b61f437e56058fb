"""Time to memory with default pause and idle settings: from a turn accepted by the API (or
published with kcat, in services mode) to the memory listed by ``GET /v1/memories``, for a complete
exchange (``ends_exchange``) and for turns without any marker (decided after
``SIMPLEMEM_PAUSE_SECONDS``); and from the unmodified mem0 client's ``add`` to its ``get_all``. Embedded: one `simplemem serve`; services: one worker and one
`simplemem serve` on the local services (`simplemem infra up`), in a namespace of their own.

    python -m bench.time_to_memory [--turns 30] [--mode embedded|services]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from simplemem.cli.golden import percentile
from simplemem.client import Client, Conversation
from tests.helpers.serving import ServeProcess

FACTS = ["teal", "mango", "cello", "Lisbon", "kayaking", "Brompton", "oolong", "tabby", "Porto", "sourdough"]


Publish = Callable[[dict[str, Any]], None]


def seconds_to_listed(memory: Client, i: int, marked: bool, publish: Publish | None = None) -> float:
    """From the turn sent (through the API, or ``publish``) to its memory listed."""
    word = f"{FACTS[i % len(FACTS)]}{i}"
    turn = Conversation(f"s{i}", user="Robin").said(
        f"My new favourite word is {word}.", message_id=f"m{i}", ends_exchange=marked
    )
    start = time.perf_counter()
    if publish is None:
        assert memory.send(turn).accepted
    else:
        publish(turn.model_dump(mode="json"))
    while True:
        if any(word in m.text for m in memory.memories(limit=1000).memories):
            return time.perf_counter() - start
        if time.perf_counter() - start > 120:
            raise RuntimeError(f"{word} not listed after 120 s")
        time.sleep(0.05)


def report(name: str, times: list[float]) -> None:
    print(
        f"{name}: {len(times)} turns, listed after p50 {percentile(times, 50) * 1000:.0f} ms, "
        f"p99 {percentile(times, 99) * 1000:.0f} ms"
    )


def seconds_to_mem0_listed(url: str, key: str, i: int) -> float:
    """From the unmodified mem0 client's ``add`` to the memory in its ``get_all``."""
    import os

    os.environ["MEM0_TELEMETRY"] = "False"  # the client would otherwise report to its vendor
    from mem0 import MemoryClient

    client = MemoryClient(api_key=key, host=f"{url}/mem0")
    word = f"{FACTS[i % len(FACTS)]}{i}"
    start = time.perf_counter()
    client.add([{"role": "user", "content": f"My new favourite word is {word}."}], user_id=f"u{i}")
    while True:
        listed = client.get_all(filters={"user_id": f"u{i}"})["results"]
        if any(word in m["memory"] for m in listed):
            return time.perf_counter() - start
        if time.perf_counter() - start > 120:
            raise RuntimeError(f"{word} not listed by get_all after 120 s")
        time.sleep(0.05)


def measure(url: str, admin: str, turns: int, publish: Publish | None, via: str) -> None:
    with Client(url, admin) as operator:
        key = operator.create_key("ttm").key
    with Client(url, key, timeout=120) as memory:
        for marked in (True, False):
            offset = (0 if marked else 10_000) + (20_000 if publish else 0)
            times = [seconds_to_listed(memory, i + offset, marked, publish) for i in range(turns)]
            report(f"{via}, {'ends_exchange' if marked else 'no marker (pause)'}", times)
    if publish is None:
        times = [seconds_to_mem0_listed(url, key, i + 40_000) for i in range(turns)]
        report(f"{via.split(',')[0]}, mem0 add -> get_all", times)


def run_services(tmp: Path, admin: str, turns: int) -> None:
    from bench.deployment import local_deployment
    from tests.helpers.kcat import kcat_publish

    with local_deployment("ttm", tmp, admin) as (settings, url):
        measure(url, admin, turns, None, "services, API")

        def publish(event: dict[str, Any]) -> None:
            kcat_publish(settings, [orjson.dumps({**event, "tenant_id": "ttm"})])

        measure(url, admin, turns, publish, "services, kcat")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--mode", choices=["embedded", "services"], default="embedded")
    args = parser.parse_args()
    admin = f"admin-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as tmp:
        if args.mode == "services":
            run_services(Path(tmp), admin, args.turns)
            return
        env = {
            "SIMPLEMEM_MODE": "embedded",
            "SIMPLEMEM_STORE": str(Path(tmp) / "store"),
            "SIMPLEMEM_ADMIN_KEY": admin,
        }
        proc = ServeProcess(env, Path(tmp) / "serve.log").start()
        try:
            proc.wait_ready()
            measure(proc.url, admin, args.turns, None, "embedded, API")
        finally:
            proc.stop()


if __name__ == "__main__":
    main()
