"""Request bodies above ``api_max_body_bytes`` are refused with 413 before they are read whole."""

from __future__ import annotations

import orjson
from fastapi import HTTPException
from starlette.types import ASGIApp as Asgi
from starlette.types import Message, Receive, Scope, Send


class _TooLarge(HTTPException):
    """Raised while a route reads the body: FastAPI passes HTTP exceptions through as they are."""


def body_limit(app: Asgi, max_bytes: int) -> Asgi:
    reason_text = f"request body over {max_bytes} bytes (SIMPLEMEM_API_MAX_BODY_BYTES)"
    reason = orjson.dumps({"detail": reason_text})

    async def refuse(send: Send) -> None:
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(reason)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": reason})

    async def limited(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > max_bytes:
            await refuse(send)
            return
        seen = 0
        started = False

        async def counting() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > max_bytes:
                    raise _TooLarge(413, reason_text)
            return message

        async def tracking(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await app(scope, counting, tracking)
        except _TooLarge:
            if not started:
                await refuse(send)

    return limited
