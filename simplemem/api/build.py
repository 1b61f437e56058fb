"""Assembles the service for the configured mode from a runtime that the caller opened (and, in
embedded mode, locked: the serving process owns the store)."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from simplemem.api.app import Service, create_app
from simplemem.api.backends import EmbeddedBackend, MemoryBackend, ServicesBackend
from simplemem.api.directory import open_directory
from simplemem.api.feedback import open_feedback_log
from simplemem.api.forgetting import CallForgetter
from simplemem.api.keys import open_key_store
from simplemem.api.mcp_server import mount_mcp
from simplemem.api.mem0 import mount_mem0
from simplemem.api.mem0_legacy import mount_mem0_legacy
from simplemem.api.metrics import ServiceMetrics
from simplemem.api.quotas import Quotas
from simplemem.api.ui import mount_ui
from simplemem.runtime import Runtime


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
    """The whole app: the API, the mem0-compatible routes, the MCP server and the ``/ui/`` page."""
    service = build_service(rt)
    directory = open_directory(rt.settings, rt.store_dir, service.backend.scrub)
    extras: list[Any] = [mount_mem0(service, directory), mount_mem0_legacy, mount_mcp(service), mount_ui]
    return create_app(service, extras)
