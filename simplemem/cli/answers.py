"""``simplemem query``'s plumbing: requests read from the command line or a batch line, answered with
the tenant's lazy migration (if one is configured) started on its first query."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING

from pydantic import ValidationError

from simplemem.cli.console import json_line
from simplemem.cli.errors import CliError, ExitCode
from simplemem.schemas.events import describe_errors, load_json_line
from simplemem.schemas.query import QueryRequest, QueryResult

if TYPE_CHECKING:
    from simplemem.runtime import Runtime

Answer = Callable[[QueryRequest], QueryResult]


def single_request(text: str | None, tenant: str | None, as_of: str | None) -> QueryRequest:
    if text is None or tenant is None:
        raise CliError("give TEXT and --tenant, or --batch FILE", ExitCode.USAGE)
    try:
        return QueryRequest(tenant_id=tenant, query=text, as_of=as_of)
    except ValidationError as exc:
        raise CliError(f"invalid query: {describe_errors(exc)}", ExitCode.USAGE) from None


def batch_request(where: str, raw: bytes) -> QueryRequest | dict[str, object]:
    """The request on a batch line, or the error line that answers it (with the line's ``id`` when it
    has one: the caller matches answers by id)."""
    try:
        data = load_json_line(raw)
    except ValueError as exc:
        return {"id": None, "error": f"{where}: {exc}"}
    try:
        return QueryRequest.model_validate(data)
    except ValidationError as exc:
        qid = data.get("id") if isinstance(data, dict) else None
        return {"id": qid if isinstance(qid, str) else None, "error": f"{where}: {describe_errors(exc)}"}


def answer_batch(lines: Iterable[tuple[str, bytes]], answer: Answer) -> None:
    """One JSON line per question line, in order; a line that is not a request gets an error line."""
    for where, raw in lines:
        request = batch_request(where, raw)
        line = answer(request).to_json() if isinstance(request, QueryRequest) else request
        json_line(line)


def answerer(rt: Runtime, stack: ExitStack) -> Answer:
    """Answers from ``rt``'s retriever; a tenant's first query starts its lazy migration, which the
    process lets finish (once the answers are out) when ``stack`` closes."""
    from simplemem.processors.lifecycle.migration import MigrationState
    from simplemem.runtime import freeze_heap
    from simplemem.streams.lazy import lazy_migration

    retriever = rt.retriever
    freeze_heap()  # a batch is thousands of queries
    migration = lazy_migration(rt)
    if migration is not None:
        stack.callback(migration.wait)
        stack.callback(sys.stdout.flush)  # runs first: the answers are out before the wait

    def answer(request: QueryRequest) -> QueryResult:
        state = migration.ensure(request.tenant_id) if migration else None
        result = retriever.query(request)
        if state == MigrationState.IN_PROGRESS:
            result.migration = state.value
        return result

    return answer
