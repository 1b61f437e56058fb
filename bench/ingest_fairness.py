"""One tenant ingesting long answers at its full quota, another querying: the quiet tenant's query
latency on an embedded `simplemem serve`, before and while the noisy one ingests.

The noisy tenant posts batches of long assistant answers (built from the shipped demo history, about
27,000 characters each) back to back, waiting out each 429's Retry-After, for ``--seconds``; the
quiet tenant meanwhile asks one question after another. Prints p50/p95/max of the quiet tenant's
queries (one every 0.2 s, open loop) alone and during the ingestion, and the characters the noisy tenant got accepted.

    python -m bench.ingest_fairness [--seconds 60] [--batch 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import orjson

from simplemem.schemas.settings import REPO_ROOT
from tests.helpers.serving import ServeProcess

DATA = REPO_ROOT / "simplemem" / "cli" / "data"
QUESTIONS = ["What is Riley allergic to?", "Where does Riley work?", "What languages does Riley write?"]
ANSWER_CHARS = 27_000
PROBE_SECONDS = 0.2


def long_answers(count: int) -> list[str]:
    """Assistant-style answers of about ANSWER_CHARS characters, from the demo history's turns."""
    turns = [
        line.split(": ", 1)[1]
        for line in (DATA / "demo_history.txt").read_text().splitlines()
        if ": " in line and not line.startswith(("#", "|"))
    ]
    answers: list[str] = []
    current, i = "", 0
    while len(answers) < count:
        current += f"{len(current) // 400 + 1}. {turns[i % len(turns)]}\n\n"
        i += 1
        if len(current) >= ANSWER_CHARS:
            answers.append(current)
            current = ""
    return answers


def percentiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"n={len(ordered)} p50 {statistics.median(ordered):.0f} ms, p95 {p95:.0f} ms, max {ordered[-1]:.0f} ms"


def query_loop(api: httpx.Client, key: str, stop: threading.Event, out: list[float]) -> None:
    """Open loop: a question every PROBE_SECONDS whether or not the last one was answered, so a
    stall shows in every probe it holds up, not in one slow sample."""
    headers = {"Authorization": f"Bearer {key}"}

    def ask(question: str) -> None:
        start = time.perf_counter()
        r = api.post("/v1/query", json={"query": question}, headers=headers)
        assert r.status_code == 200, r.text
        out.append((time.perf_counter() - start) * 1000)

    with ThreadPoolExecutor(max_workers=64) as pool:
        i = 0
        while not stop.wait(PROBE_SECONDS):
            pool.submit(ask, QUESTIONS[i % len(QUESTIONS)])
            i += 1


def ingest_loop(api: httpx.Client, key: str, batch: int, seconds: float) -> tuple[int, int]:
    """Post batches for ``seconds``; returns (characters accepted, 429s waited out)."""
    headers = {"Authorization": f"Bearer {key}"}
    answers = long_answers(batch)
    accepted = waits = n = 0
    deadline = time.monotonic() + seconds
    start = datetime.now(UTC) - timedelta(hours=1)
    while time.monotonic() < deadline:
        events = []
        for text in answers:
            n += 1
            ts = (start + timedelta(seconds=n)).isoformat()
            events.append(
                {"session_id": f"s{n // 50}", "message_id": f"m{n}", "speaker": "Assistant"}
                | {"role": "assistant", "text": text, "ts": ts}
            )
        r = api.post("/v1/events", json=events, headers=headers)
        if r.status_code == 429:
            waits += 1
            time.sleep(min(float(r.headers["Retry-After"]), max(0.0, deadline - time.monotonic())))
            continue
        assert r.status_code == 202, r.text
        accepted += sum(len(e["text"]) for e in events if e["message_id"] in r.json()["accepted"])
    return accepted, waits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=60.0, help="how long the noisy tenant ingests")
    ap.add_argument("--batch", type=int, default=8, help="long answers per POST /v1/events")
    args = ap.parse_args()
    admin = uuid.uuid4().hex
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            "SIMPLEMEM_MODE": "embedded",
            "SIMPLEMEM_STORE": f"{tmp}/store",
            "SIMPLEMEM_ADMIN_KEY": admin,
            "SIMPLEMEM_API_QUERY_RATE": "1000000/minute",  # the quiet tenant asks as fast as it is answered
        }
        server = ServeProcess(env, Path(tmp) / "serve.log").start()
        try:
            server.wait_ready()
            with httpx.Client(
                base_url=server.url, timeout=300, limits=httpx.Limits(max_connections=80)
            ) as api:
                keys = {}
                for tenant in ("quiet", "noisy"):
                    made = api.post(
                        "/v1/admin/keys",
                        json={"tenant_id": tenant},
                        headers={"Authorization": f"Bearer {admin}"},
                    )
                    keys[tenant] = made.json()["key"]
                lines = (DATA / "sample_conversation.jsonl").read_bytes().splitlines()
                events = [orjson.loads(line) | {"tenant_id": "quiet"} for line in lines if line.strip()]
                events[-1]["ends_session"] = True
                r = api.post("/v1/events", json=events, headers={"Authorization": f"Bearer {keys['quiet']}"})
                assert r.status_code == 202, r.text
                alone: list[float] = []
                stop = threading.Event()
                timer = threading.Timer(15, stop.set)
                timer.start()
                query_loop(api, keys["quiet"], stop, alone)
                during: list[float] = []
                stop = threading.Event()
                with httpx.Client(
                    base_url=server.url, timeout=300, limits=httpx.Limits(max_connections=80)
                ) as other:
                    quiet = threading.Thread(target=query_loop, args=(other, keys["quiet"], stop, during))
                    quiet.start()
                    chars, waits = ingest_loop(api, keys["noisy"], args.batch, args.seconds)
                    stop.set()
                    quiet.join()
        finally:
            server.stop()
    print(f"quiet tenant's queries alone:             {percentiles(alone)}")
    print(f"quiet tenant's queries while noisy ingests: {percentiles(during)}")
    print(f"noisy tenant: {chars} characters accepted in {args.seconds:.0f} s, {waits} waits on 429")


if __name__ == "__main__":
    main()
