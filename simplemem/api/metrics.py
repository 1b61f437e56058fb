"""Prometheus metrics of the query service: latency and responses by route template and status.

Routes are labelled by their template (``/v1/messages/{message_id}``), never by the path itself:
ids would grow the label set without bound and could carry what a tenant wrote.
"""

from __future__ import annotations

import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

Asgi = ASGIApp


class ServiceMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.latency = Histogram(
            "simplemem_api_request_seconds",
            "request latency by route template, method and status",
            ["route", "method", "status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.errors = Counter(
            "simplemem_api_errors_total",
            "responses with a 4xx or 5xx status, by route template and status",
            ["route", "status"],
            registry=self.registry,
        )
        self.events = Counter(
            "simplemem_api_events_total", "events by result", ["result"], registry=self.registry
        )

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST

    def middleware(self, app: Asgi) -> Asgi:
        """ASGI middleware timing each HTTP request."""

        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != "http":
                await app(scope, receive, send)
                return
            start = time.perf_counter()
            status = 500

            async def send_status(message: Message) -> None:
                nonlocal status
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                await send(message)

            try:
                await app(scope, receive, send_status)
            finally:
                route = scope.get("route")
                template = getattr(route, "path", None) or "unmatched"
                self.latency.labels(template, scope.get("method", ""), str(status)).observe(
                    time.perf_counter() - start
                )
                if status >= 400:
                    self.errors.labels(template, str(status)).inc()

        return timed
