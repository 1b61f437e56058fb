"""Assembles the service for the configured mode from a runtime that the caller opened (and, in
embedded mode, locked: the serving process owns the store)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from processors.runtime import Runtime
from service.app import Service, create_app
from service.backends import EmbeddedBackend, MemoryBackend, ServicesBackend
from service.directory import open_directory
from service.feedback import open_feedback_log
from service.forgetting import CallForgetter
from service.keys import open_key_store
from service.mcp_server import mount_mcp
from service.mem0 import mount_mem0
from service.metrics import ServiceMetrics
from service.quotas import Quotas


def build_service(rt: Runtime) -> Service:
    s = rt.settings
    backend: MemoryBackend
    if s.mode == "services":
        backend = ServicesBackend(rt)
    else:  # the serving process owns the embedded store: it runs the forget cascade itself
        backend = EmbeddedBackend(rt, forgetter=CallForgetter(rt.forget))
    return Service(
        settings=s,
        backend=backend,
        keys=open_key_store(s, rt.store_dir),
        quotas=Quotas(s),
        feedback=open_feedback_log(s, rt.store_dir),
        metrics=ServiceMetrics(),
    )


def build_app(rt: Runtime) -> FastAPI:
    """The whole app: the API, the mem0-compatible routes and the MCP server."""
    service = build_service(rt)
    extras: list[Any] = [mount_mem0(service, open_directory(rt.settings, rt.store_dir)), mount_mcp(service)]
    return create_app(service, extras)
