"""The Python client's own logic, against a stand-in transport (httpx.MockTransport): which answers
it retries and how long it waits (``Retry-After`` first), the reason its errors carry, how batches
are cut and their rejections numbered; and that importing it loads none of the pipeline's models."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from simplemem.client import (
    AsyncClient,
    Client,
    Conversation,
    Forbidden,
    InvalidRequest,
    RateLimited,
    RetryPolicy,
    ServiceError,
    Unavailable,
)
from simplemem.client.retry import retry_after_seconds

REPO = Path(__file__).resolve().parents[1]
Handler = Callable[[httpx.Request], httpx.Response]
QUERY_ANSWER = {
    "id": None,
    "query": "q",
    "complexity": 0.2,
    "k": 3,
    "memories": [],
    "context": "Riley is allergic to peanuts.",
    "context_tokens": 7,
}


def scripted(*answers: httpx.Response) -> tuple[Handler, list[httpx.Request]]:
    """A transport answering in turn; the requests it saw."""
    seen: list[httpx.Request] = []
    queue = list(answers)

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return queue.pop(0)

    return handler, seen


def client(handler: Handler, policy: RetryPolicy | None = None, **options: Any) -> Client:
    transport = httpx.MockTransport(handler)
    return Client("http://memory.test", "k", transport=transport, retry=policy or Recorded(), **options)


@dataclass(frozen=True)
class Recorded(RetryPolicy):
    """The policy with its waits recorded instead of slept."""

    waits: list[float] = field(default_factory=list)

    def pause(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def pause_async(self, seconds: float) -> None:
        self.waits.append(seconds)


def test_a_429_is_retried_after_its_retry_after_and_the_answer_is_typed() -> None:
    refused = httpx.Response(429, headers={"Retry-After": "7"}, json={"detail": "quota used up"})
    handler, seen = scripted(refused, httpx.Response(200, json=QUERY_ANSWER))
    policy = Recorded()
    result = client(handler, policy).query("What is Riley allergic to?")
    assert result.context == "Riley is allergic to peanuts." and result.k == 3
    assert len(seen) == 2 and policy.waits == [7.0]
    assert seen[0].headers["Authorization"] == "Bearer k"
    assert orjson.loads(seen[0].content) == {"query": "What is Riley allergic to?", **_default_filters()}


def _default_filters() -> dict[str, Any]:
    return {"persons": [], "kinds": [], "include_archived": False, "sessions": []}


def test_a_503_without_retry_after_backs_off_and_gives_up_with_the_reason() -> None:
    down = [httpx.Response(503, json={"detail": "opensearch is down"}) for _ in range(3)]
    handler, seen = scripted(*down)
    policy = Recorded(attempts=3, first_backoff=0.5, max_backoff=4)
    with pytest.raises(Unavailable, match="opensearch is down") as raised:
        client(handler, policy).query("q")
    assert raised.value.status == 503 and len(seen) == 3
    assert len(policy.waits) == 2 and all(0 < w <= 4 for w in policy.waits)


def test_a_retry_after_longer_than_the_policy_waits_is_raised_at_once() -> None:
    handler, seen = scripted(httpx.Response(429, headers={"Retry-After": "3600"}, json={"detail": "later"}))
    policy = Recorded()
    with pytest.raises(RateLimited) as raised:
        client(handler, policy).query("q")
    assert raised.value.retry_after == 3600 and len(seen) == 1 and policy.waits == []


@pytest.mark.parametrize(
    ("status", "kind"), [(422, InvalidRequest), (413, InvalidRequest), (403, Forbidden), (500, Unavailable)]
)
def test_refusals_are_not_retried_and_carry_the_services_reason(
    status: int, kind: type[ServiceError]
) -> None:
    handler, seen = scripted(httpx.Response(status, json={"detail": "query: field required"}))
    policy = Recorded()
    with pytest.raises(kind) as raised:
        client(handler, policy).memories()
    assert raised.value.reason == "query: field required" and raised.value.status == status
    assert len(seen) == 1 and policy.waits == []


def test_an_answer_that_is_not_the_contract_is_an_error_not_a_crash() -> None:
    handler, _ = scripted(
        httpx.Response(200, text="<html>proxy</html>"), httpx.Response(200, json={"context": "x"})
    )
    memory = client(handler)
    for _ in range(2):
        with pytest.raises(ServiceError, match="cannot read"):
            memory.query("q")


def test_a_connection_that_fails_is_retried_and_then_raised() -> None:
    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.ConnectError("refused", request=request)

    policy = Recorded(attempts=2)
    with pytest.raises(Unavailable, match="cannot connect") as raised:
        client(handler, policy).health()
    assert raised.value.status is None and len(calls) == 2 and len(policy.waits) == 1


def test_many_turns_go_in_batches_and_rejections_keep_their_place() -> None:
    chat = Conversation("s1", user="Riley")
    turns = [chat.said(f"turn {i}") for i in range(5)]
    bodies: list[list[dict[str, Any]]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        batch = orjson.loads(request.content)
        bodies.append(batch)
        rejected = (
            [{"index": 1, "message_id": batch[1]["message_id"], "reason": "text: bad"}]
            if len(batch) > 1
            else []
        )
        accepted = [e["message_id"] for i, e in enumerate(batch) if not (rejected and i == 1)]
        return httpx.Response(202, json={"accepted": accepted, "rejected": rejected})

    answer = client(handler, batch_size=2).send(turns)
    assert [len(b) for b in bodies] == [2, 2, 1]
    assert [r.index for r in answer.rejected] == [1, 3]
    assert answer.accepted == [turns[i].message_id for i in (0, 2, 4)]
    assert "tenant_id" not in bodies[0][0] and bodies[0][0]["session_id"] == "s1"


def test_a_conversation_names_its_speakers_and_an_answer_ends_the_exchange() -> None:
    clock = iter([datetime(2026, 3, 1, 9, tzinfo=UTC) + timedelta(minutes=i) for i in range(3)])
    chat = Conversation("trip", user="Riley", assistant="Guide", clock=lambda: next(clock))
    said, answered = chat.said("I fly to Lima on May 3."), chat.answered("Have a good trip!")
    assert (said.speaker, said.role, said.ends_exchange) == ("Riley", "user", False)
    assert (answered.speaker, answered.role, answered.ends_exchange) == ("Guide", "assistant", True)
    assert said.message_id != answered.message_id and answered.ts > said.ts


def test_the_async_client_retries_and_reads_the_same_answers() -> None:
    refused = httpx.Response(503, headers={"Retry-After": "2"}, json={"detail": "warming up"})
    handler, seen = scripted(refused, httpx.Response(200, json=QUERY_ANSWER))

    policy = Recorded()

    async def run() -> str:
        transport = httpx.MockTransport(handler)
        async with AsyncClient("http://memory.test", "k", transport=transport, retry=policy) as memory:
            return (await memory.query("q")).context

    assert asyncio.run(run()) == QUERY_ANSWER["context"]
    assert len(seen) == 2 and policy.waits == [2.0]


def test_retry_after_reads_seconds_and_http_dates() -> None:
    now = datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert retry_after_seconds("12") == 12.0
    assert retry_after_seconds(format_datetime(now + timedelta(seconds=30), usegmt=True), now) == 30.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


# Third-party packages the client may load (httpx's own, tenacity, pydantic's, orjson); anything
# else (numpy, onnxruntime, spaCy, Presidio, the store clients, FastAPI) is the pipeline's or the
# service's.
CLIENT_PACKAGES = {
    "httpx", "httpcore", "h11", "anyio", "sniffio", "idna", "certifi", "tenacity", "pydantic",
    "pydantic_core", "pydantic_settings", "annotated_types", "typing_extensions", "typing_inspection",
    "orjson", "dotenv", "click", "rich", "pygments", "markdown_it", "mdurl", "_distutils_hack",
}  # fmt: skip


def test_importing_the_client_loads_no_model_and_nothing_of_the_pipeline() -> None:
    probe = (
        "import sys, json, simplemem.client\n"
        "print(json.dumps(sorted(m for m in sys.modules if '.' not in m or m.startswith('simplemem.'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env={"PYTHONPATH": str(REPO)},
        capture_output=True,
        check=True,
    )
    loaded = orjson.loads(out.stdout)
    ours = {m for m in loaded if m.startswith("simplemem.")}
    assert {m.split(".")[1] for m in ours} == {"client", "schemas"}, sorted(ours)
    stdlib = {*sys.stdlib_module_names, "__main__"}
    third_party = {
        m for m in loaded if "." not in m and m not in stdlib and not m.startswith("_sysconfigdata")
    }
    third_party.discard("simplemem")
    assert third_party - CLIENT_PACKAGES == set()
