"""`simplemem golden --url URL --key ADMIN_KEY [FILE]`: the daily check of a deployment.

Ingests the golden facts into a scratch tenant through the API, waits until they are queryable,
asks every golden question, and prints found/expected, leaks and latency; a second scratch tenant
asks too and must see nothing. Both tenants are deleted at the end. Exits 1 below
``SIMPLEMEM_GOLDEN_MIN_FOUND`` or on any leak.
"""

from __future__ import annotations

import calendar
import re
import time
import uuid
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from simplemem.cli.console import out, plain
from simplemem.cli.errors import CliError, one_line_errors
from simplemem.schemas.settings import Settings, get_settings

if TYPE_CHECKING:  # the client (httpx) is imported when the check runs, not with every command
    from simplemem.client import Client

DEFAULT_FILE = Path(__file__).resolve().parent / "data" / "golden.json"  # the project's own set
REQUEST_TIMEOUT_SECONDS = 60.0
POLL_SECONDS = 2.0
PERCENTILES = (50, 95, 99)


class GoldenSettings(BaseSettings):
    """The check's own settings (not the service's): ``SIMPLEMEM_GOLDEN_MIN_FOUND``,
    ``SIMPLEMEM_GOLDEN_WAIT_SECONDS``."""

    model_config = SettingsConfigDict(env_prefix="SIMPLEMEM_GOLDEN_", extra="ignore", frozen=True)

    min_found: float = Field(
        0.9, ge=0.0, le=1.0, description="the check fails below this share of found strings"
    )
    wait_seconds: float = Field(300.0, gt=0, description="how long it waits for the facts to be queryable")


def spellings(iso_day: str) -> re.Pattern[str]:
    """The ways a context may write a day: ISO, "January 11", "Jan 11th", "11 January"."""
    day = date.fromisoformat(iso_day)
    month = f"(?:{calendar.month_name[day.month]}|{calendar.month_abbr[day.month]}\\.?)"
    num = f"0?{day.day}(?:st|nd|rd|th)?"
    return re.compile(rf"{re.escape(iso_day)}|\b{month}\s+{num}\b|\b{num}\s+(?:of\s+)?{month}\b", re.I)


def found_in(context: str, expected: str) -> bool:
    if expected.lower() in context.lower():
        return True
    return bool(re.fullmatch(r"\d{4}-\d{2}-\d{2}", expected)) and bool(spellings(expected).search(context))


@dataclass
class Round:
    found: int = 0
    expected: int = 0
    leaks: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    misses: list[tuple[str, str]] = field(default_factory=list)


def ask_all(memory: Client, queries: list[dict[str, Any]]) -> Round:
    result = Round()
    for q in queries:
        start = time.perf_counter()
        answer = memory.query(q["query"], as_of=_time(q.get("as_of")), id=q.get("id"))
        result.latencies_ms.append((time.perf_counter() - start) * 1000)
        dumped = answer.model_dump_json()
        for expected in q.get("expected", []):
            result.expected += 1
            if found_in(answer.context, expected):
                result.found += 1
            else:
                result.misses.append((q["query"], expected))
        result.leaks += [a for a in q.get("absent", []) if a in dumped]
    return result


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value else None


def other_tenant_leaks(memory: Client, queries: list[dict[str, Any]]) -> list[str]:
    """Questions for which a tenant that stored nothing gets something back."""
    leaks = []
    for q in queries:
        answer = memory.query(q["query"], as_of=_time(q.get("as_of")))
        if answer.memories or answer.context:
            leaks.append(f"another tenant saw memories for {q['query']!r}")
    return leaks


def ended_sessions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The golden conversations are over: each session's last event says so, so that a deployment
    decides their last windows now instead of after its idle time."""
    last = {e["session_id"]: i for i, e in enumerate(events)}
    return [dict(e, ends_session=True) if last[e["session_id"]] == i else e for i, e in enumerate(events)]


def check(url: str, admin_key: str, golden: dict[str, Any], settings: Settings, wait_seconds: float) -> Round:
    from simplemem.client import Client

    scratch = f"golden-check-{uuid.uuid4().hex[:12]}"
    other = f"golden-other-{uuid.uuid4().hex[:12]}"
    admin = Client(url, admin_key, timeout=REQUEST_TIMEOUT_SECONDS)
    try:
        key, other_key = admin.create_key(scratch).key, admin.create_key(other).key
        with (
            Client(
                url, key, timeout=REQUEST_TIMEOUT_SECONDS, batch_size=settings.api_max_batch_events
            ) as memory,
            Client(url, other_key, timeout=REQUEST_TIMEOUT_SECONDS) as stranger,
        ):
            events = ended_sessions([dict(e, tenant_id=scratch) for e in golden["events"]])
            rejected = memory.send(events).rejected
            if rejected:
                raise CliError(f"{len(rejected)} golden events rejected: {rejected[0].reason}")
            queries = golden["queries"]
            deadline = time.monotonic() + wait_seconds
            while True:  # the facts are queryable once every expected string is found, or time is up
                result = ask_all(memory, queries)
                if result.found == result.expected or time.monotonic() > deadline:
                    break
                time.sleep(POLL_SECONDS)
            result.leaks += other_tenant_leaks(stranger, queries)
            return result
    finally:
        for tenant in (scratch, other):
            admin.forget_tenant(tenant)
        admin.close()


def percentile(values: list[float], pct: int) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = max(0, min(len(ordered) - 1, round(pct / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


@one_line_errors
def golden(
    url: Annotated[str, typer.Option("--url", help="the query service, e.g. http://127.0.0.1:8080")],
    key: Annotated[str, typer.Option("--key", help="the admin key (SIMPLEMEM_ADMIN_KEY of the service)")],
    file: Annotated[Path, typer.Argument(help="golden facts JSON {events, queries}")] = DEFAULT_FILE,
) -> None:
    """Check a deployment against the golden facts; exit 1 below the threshold or on a leak."""
    settings, own = get_settings(), GoldenSettings()
    try:
        data = orjson.loads(file.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CliError(f"cannot read {file}: {exc}") from None
    from simplemem.client import ServiceError

    try:
        result = check(url, key, data, settings, own.wait_seconds)
    except ServiceError as exc:
        raise CliError(str(exc)) from None
    share = result.found / result.expected if result.expected else 1.0
    lat = ", ".join(f"p{p} {percentile(result.latencies_ms, p):.0f} ms" for p in PERCENTILES)
    out.print(
        f"found {result.found}/{result.expected} ({share:.0%}); leaks {len(result.leaks)}; latency {lat}"
    )
    for query, expected in result.misses:
        plain(f"  missing {expected!r} for {query!r}")
    for leak in result.leaks:
        plain(f"  leak: {leak}")
    if share < own.min_found or result.leaks:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command()(golden)
