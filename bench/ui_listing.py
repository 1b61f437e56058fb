"""The /ui/ page's reads on a large tenant: a `simplemem serve` (embedded) over a store holding one tenant
with N synthetic memory units (three statements a message, sharing its text; a code block every 50th
message; a tenth superseded), timed over HTTP and, when Chromium is installed, in the page itself.

    python -m bench.ui_listing [--units 100000] [--store DIR] [--repeat 5]

Prints, per filter, the median and slowest of ``--repeat`` requests of its first page and of its counts
(``/v1/browse/counts``): no filter, a session stated first and one stated last, a rare and a common kind,
each state, a date range, combinations, a text search; then a memory's provenance and the page's time
from "Sign in" to its first rows.
The units are written straight into the store's lexical file (no models: the listing reads no vector).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
import uuid
from pathlib import Path

import httpx

from bench.common import scratch_store
from simplemem.runtime import LEXICAL_FILE
from simplemem.schemas.memory import MemoryKind, MemoryUnit
from tests.helpers.serving import ServeProcess

TENANT = "bench-ui"
PER_SESSION_MESSAGES = 34  # about 100 units a session
WORDS = (
    "garden train museum violin coffee ticket invoice hiking recipe doctor budget laptop festival "
    "library bicycle concert passport birthday kitchen market beach office neighbour dentist "
    "project deadline meeting holiday sister brother cousin yoga marathon guitar painting"
).split()
NAMES = ["Ana", "Marco", "Hana", "Riley", "Zed", "Lucia", "Tomas"]


def fill(store: Path, units: int, seed: int = 7) -> None:
    from simplemem.processors.stores.sqlite_lexical import SqliteLexicalStore

    rng = random.Random(seed)
    lexical = SqliteLexicalStore(store / LEXICAL_FILE)
    batch: list[MemoryUnit] = []
    made, message = 0, 0
    start = time.perf_counter()
    while made < units:
        message += 1
        session = f"s{message // PER_SESSION_MESSAGES:05d}"
        day = 1 + (message // 200) % 28
        month = 1 + (message // 5600) % 12
        stated = f"2025-{month:02d}-{day:02d}T{message % 24:02d}:{message % 60:02d}:00+00:00"
        speaker = rng.choice(NAMES)
        said = [
            f"{speaker} {rng.choice(['likes', 'booked', 'mentioned', 'fixed'])} the "
            + " ".join(rng.sample(WORDS, 4))
            for _ in range(3)
        ]
        prose = ". ".join(said) + "."
        kinds = [MemoryKind.CODE] if message % 50 == 0 else [MemoryKind.FACT] * 3
        for i, kind in enumerate(kinds):
            text = f"def f{message}():\n    return {message}" if kind == MemoryKind.CODE else said[i] + "."
            unit = MemoryUnit.build(
                tenant_id=TENANT,
                text=text,
                kind=kind,
                source_ids=[f"m{message}"],
                stated_at=stated,
                speaker=speaker,
                persons=[speaker],
                keywords=rng.sample(WORDS, 3),
                session_id=session,
                context=prose if kind == MemoryKind.FACT else f"{speaker}: my helper",
            )
            if rng.random() < 0.1:
                unit = unit.model_copy(update={"superseded_by": "0" * 32})
            batch.append(unit)
            made += 1
        if len(batch) >= 3000 or made >= units:
            lexical.upsert(batch)
            batch = []
    lexical.close()
    print(f"wrote {made} units ({message} messages) in {time.perf_counter() - start:.1f} s")


def timed(
    client: httpx.Client, repeat: int, method: str, path: str, **kw: object
) -> tuple[float, float, object]:
    times, body = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        r = client.request(method, path, **kw)  # type: ignore[arg-type]
        times.append((time.perf_counter() - start) * 1000)
        assert r.status_code < 300, r.text
        body = r.json()
    return statistics.median(times), max(times), body


def page_first_rows_ms(url: str, key: str, repeat: int) -> list[float] | None:
    import shutil

    if shutil.which("chromium") is None:
        return None
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        for _ in range(repeat):
            page = browser.new_context().new_page()
            page.goto(f"{url}/ui/")
            page.get_by_test_id("key").fill(key)
            start = time.perf_counter()
            page.get_by_test_id("sign-in").click()
            page.get_by_test_id("memory-row").first.wait_for()
            out.append((time.perf_counter() - start) * 1000)
            page.context.close()
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--units", type=int, default=100_000)
    ap.add_argument("--store", type=Path, default=None, help="reuse (or fill) this store folder")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    store = args.store or scratch_store("ui-listing")
    store.mkdir(parents=True, exist_ok=True)
    if not (store / LEXICAL_FILE).exists():
        fill(store, args.units)
    admin = uuid.uuid4().hex
    env = {
        "SIMPLEMEM_MODE": "embedded",
        "SIMPLEMEM_STORE": str(store),
        "SIMPLEMEM_ADMIN_KEY": admin,
        "SIMPLEMEM_API_QUERY_RATE": "100000/minute",
    }
    server = ServeProcess(env, store / "serve.log").start()
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=300) as client:
            made = client.post(
                "/v1/admin/keys", json={"tenant_id": TENANT}, headers={"Authorization": f"Bearer {admin}"}
            )
            key = made.json()["key"]
            headers = {"Authorization": f"Bearer {key}"}
            last = client.get(
                "/v1/browse", params={"offset": args.units - 1, "limit": 1}, headers=headers
            ).json()
            last_session = last["memories"][0]["session_id"]
            reads = [
                ("no filter", {}),
                ("session stated first", {"session": "s00000"}),
                ("session stated last", {"session": last_session}),
                ("kind=code (1 in 100)", {"kind": "code"}),
                ("kind=fact", {"kind": "fact"}),
                ("state=active", {"state": "active"}),
                ("state=superseded", {"state": "superseded"}),
                ("state=archived (none)", {"state": "archived"}),
                ("date range (one month)", {"since": "2025-06-01", "until": "2025-06-30"}),
                ("date range (no match)", {"since": "2025-12-01", "until": "2025-12-31"}),
                ("session last + kind=fact", {"session": last_session, "kind": "fact"}),
                ("session last + superseded", {"session": last_session, "state": "superseded"}),
                ("kind=code + June", {"kind": "code", "since": "2025-06-01", "until": "2025-06-30"}),
                ("text search", {"q": "violin passport"}),
                ("text search + session last", {"q": "violin passport", "session": last_session}),
            ]
            print(f"{'filter':30} {'page med':>9} {'max':>7} {'counts med':>11} {'max':>7}  rows  matching")
            first_id = None
            for name, params in reads:
                med, worst, body = timed(
                    client, args.repeat, "GET", "/v1/browse", params={**params, "limit": 50}, headers=headers
                )
                cmed, cworst, counted = timed(
                    client, args.repeat, "GET", "/v1/browse/counts", params=params, headers=headers
                )
                assert isinstance(body, dict) and isinstance(counted, dict)
                if body["memories"]:
                    first_id = first_id or body["memories"][0]["id"]
                print(
                    f"{name:30} {med:9.1f} {worst:7.1f} {cmed:11.1f} {cworst:7.1f}  "
                    f"{len(body['memories']):4}  {counted['matching']}"
                )
            med, worst, _ = timed(
                client, args.repeat, "GET", f"/v1/browse/memories/{first_id}", headers=headers
            )
            print(f"{'provenance of a memory':32} {med:10.1f} {worst:8.1f}")
            shown = page_first_rows_ms(server.url, key, args.repeat)
            if shown is None:
                print("page: chromium not installed, not timed")
            else:
                print(
                    f"{'page: sign in -> first rows':32} {statistics.median(shown):10.1f} {max(shown):8.1f}"
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
