"""Time to memory, embedded `simplemem serve` with default pause and idle settings: from a turn
accepted by the API to the memory listed by ``GET /v1/memories``, for a complete exchange
(``ends_exchange``) and for turns without any marker (decided after ``SIMPLEMEM_PAUSE_SECONDS``).

    python -m bench.time_to_memory [--turns 30]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from bench.harness.serving import ServeProcess
from simplemem.cli.golden import percentile

FACTS = ["teal", "mango", "cello", "Lisbon", "kayaking", "Brompton", "oolong", "tabby", "Porto", "sourdough"]


def seconds_to_listed(api: httpx.Client, headers: dict[str, str], i: int, marked: bool) -> float:
    word = f"{FACTS[i % len(FACTS)]}{i}"
    event: dict[str, Any] = {
        "session_id": f"s{i}",
        "message_id": f"m{i}",
        "speaker": "Robin",
        "role": "user",
        "text": f"My new favourite word is {word}.",
        "ts": datetime.now(UTC).isoformat(),
        "ends_exchange": marked,
    }
    start = time.perf_counter()
    assert api.post("/v1/events", json=event, headers=headers).status_code == 202
    while True:
        page = api.get("/v1/memories", params={"limit": 1000}, headers=headers).json()
        if any(word in m["text"] for m in page["memories"]):
            return time.perf_counter() - start
        if time.perf_counter() - start > 120:
            raise RuntimeError(f"{word} not listed after 120 s")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    args = parser.parse_args()
    admin = f"admin-{uuid.uuid4().hex}"
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "SIMPLEMEM_MODE": "embedded",
            "SIMPLEMEM_STORE": str(Path(tmp) / "store"),
            "SIMPLEMEM_ADMIN_KEY": admin,
        }
        proc = ServeProcess(env, Path(tmp) / "serve.log").start()
        try:
            proc.wait_ready()
            with httpx.Client(base_url=proc.url, timeout=120) as api:
                made = api.post(
                    "/v1/admin/keys", json={"tenant_id": "ttm"}, headers={"Authorization": f"Bearer {admin}"}
                )
                headers = {"Authorization": f"Bearer {made.json()['key']}"}
                for marked in (True, False):
                    times = [
                        seconds_to_listed(api, headers, i + (0 if marked else 10_000), marked)
                        for i in range(args.turns)
                    ]
                    name = "ends_exchange" if marked else "no marker (pause)"
                    print(
                        f"{name}: {len(times)} turns, listed after p50 {percentile(times, 50) * 1000:.0f} ms, "
                        f"p99 {percentile(times, 99) * 1000:.0f} ms"
                    )
        finally:
            proc.stop()


if __name__ == "__main__":
    main()
