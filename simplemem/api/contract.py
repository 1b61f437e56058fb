"""What the OpenAPI document promises, kept where the framework would say less: a body that is not
JSON is a 422 naming ``body`` (the framework answered a bare 400), a 405 lists every method of its
path, path ids carry their pattern and bound, and ``POST /v1/events`` declares the shapes it takes.
The fuzz test (``tests/test_api_fuzz.py``) holds the service to the document.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import FastAPI, Path, Request, Response, status
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from simplemem.schemas.events import ChatEvent
from simplemem.schemas.keys import MAX_ID_CHARS

JSON_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# An id in a path: a path segment holds no "/", and a segment of dots is not an id. Python's ``\w``
# (letters and digits of any script) is written ``\p{L}\p{N}_``: in a JSON Schema ``\w`` means ASCII.
PATH_ID_PATTERN = r"^[\p{L}\p{N}_:@|+=#~-][\p{L}\p{N}_.:@|+=#~-]*$"
TENANT_PATH_PATTERN = r"^[\p{L}\p{N}_][\p{L}\p{N}_.:@|+=#~-]*$"


def path_id(description: str, pattern: str = PATH_ID_PATTERN) -> Any:
    """A path parameter's schema: the id's pattern and bound (the route checks them and answers
    422 naming the field, as for a body)."""
    return Path(
        description=description,
        json_schema_extra={"pattern": pattern, "minLength": 1, "maxLength": MAX_ID_CHARS},
    )


MessageIdPath = Annotated[str, path_id("a message id")]
MemoryIdPath = Annotated[str, path_id("a memory's id, or the id of the message it came from")]
TenantIdPath = Annotated[str, path_id("a tenant id", TENANT_PATH_PATTERN)]
KeyIdPath = Annotated[str, path_id("a key's id (its second part)")]


def json_bodies(app: ASGIApp, exempt: tuple[str, ...]) -> ASGIApp:
    """Refuse a body that is not JSON with 422 naming ``body`` and why (not UTF-8, a number of
    thousands of digits, nesting past the parser's depth); paths under ``exempt`` parse their own."""

    async def checked(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in JSON_METHODS or scope["path"].startswith(exempt):
            await app(scope, receive, send)
            return
        messages: list[Message] = []
        body = b""
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        problem = _json_problem(body) if body.strip() and _is_json(scope) else None
        if problem is not None:
            await _refuse(send, f"body: {problem}")
            return

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await app(scope, replay, send)

    return checked


def _is_json(scope: Scope) -> bool:
    ctype = dict(scope.get("headers") or []).get(b"content-type", b"application/json").decode("latin-1")
    media = ctype.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json") or media == ""


def _json_problem(body: bytes) -> str | None:
    try:
        json.loads(body)
    except json.JSONDecodeError as exc:
        return f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
    except UnicodeDecodeError as exc:
        return (
            f"not UTF-8 (byte 0x{body[exc.start]:02x} at {exc.start})"
            if exc.start < len(body)
            else "not UTF-8"
        )
    except RecursionError:
        return "invalid JSON: nested too deep"
    except ValueError as exc:  # a number of more digits than Python converts
        return f"invalid JSON: {str(exc).split(':')[0]}"
    return None


async def _refuse(send: Send, detail: str) -> None:
    body = json.dumps({"detail": detail}, ensure_ascii=True).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 422, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def method_not_allowed(request: Request, exc: Exception) -> Response:
    """405 with ``Allow`` listing every method some route serves at this path (the framework named
    only the first route's)."""
    if not isinstance(exc, StarletteHTTPException) or exc.status_code != status.HTTP_405_METHOD_NOT_ALLOWED:
        from fastapi.exception_handlers import http_exception_handler

        return await http_exception_handler(request, exc)  # type: ignore[arg-type]
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches({**request.scope, "method": "GET"})
        if match != Match.NONE and getattr(route, "methods", None):
            methods |= set(route.methods)
    allow = ", ".join(sorted(methods))
    return Response(
        json.dumps({"detail": "Method Not Allowed"}),
        status.HTTP_405_METHOD_NOT_ALLOWED,
        headers={"Allow": allow},
        media_type="application/json",
    )


def events_body(max_events: int) -> dict[str, Any]:
    """``POST /v1/events``'s request body: one event, an array of them, or ``{"events": [...]}``.
    Each item is judged on its own (a bad one is rejected by index in a 202, the rest accepted), so
    an item may be any JSON value; a valid event is what the item schema describes."""
    item: dict[str, Any] = {"anyOf": [{"$ref": "#/components/schemas/ChatEvent"}, {}]}
    batch = {"type": "array", "items": item, "maxItems": max_events}
    return {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "anyOf": [
                        batch,
                        {
                            "type": "object",
                            "properties": {"events": batch},
                            "required": ["events"],
                            "additionalProperties": False,
                        },
                        {"$ref": "#/components/schemas/ChatEvent"},
                        {"type": "object"},
                    ]
                }
            }
        },
    }


def document(app: FastAPI, max_events: int) -> None:
    """The app's OpenAPI document with what routes that read their own body take: the events'."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = build()
            event = ChatEvent.model_json_schema(ref_template="#/components/schemas/{model}")
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for name, definition in event.pop("$defs", {}).items():
                components.setdefault(name, definition)
            components["ChatEvent"] = event
            schema["paths"]["/v1/events"]["post"]["requestBody"] = events_body(max_events)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
