"""Shared fixtures: the real models (loaded once per test session) and a golden store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

GOLDEN = (
    Path(__file__).resolve().parents[1] / "simplemem" / "cli" / "data" / "golden.json"
)  # shipped: never skipped


def outside_data(path: Path) -> Path:
    """``path`` of an optional outside data set (``../shared``): absent, the test skips with the reason
    on a clone without it (even where ``bin/test`` started the services: ``SIMPLEMEM_INTEGRATION=1`` says
    only that the services must answer), and fails in CI (``CI=true``), which has it."""
    if not path.exists():
        reason = f"{path} is not present (an optional outside data set; a clone without ../shared skips this)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@pytest.fixture(scope="session")
def settings():  # type: ignore[no-untyped-def]
    from simplemem.schemas.settings import Settings

    return Settings()


@pytest.fixture(scope="session")
def nlp(settings):  # type: ignore[no-untyped-def]
    from simplemem.processors.language.nlp import load_pipeline

    return load_pipeline(settings.spacy_model)


@pytest.fixture(scope="session")
def scrubber(nlp, settings):  # type: ignore[no-untyped-def]
    from simplemem.processors.pii.scrubber import PiiScrubber

    return PiiScrubber(nlp, settings.pii_entities, settings.pii_score_threshold)


@pytest.fixture(scope="session")
def golden() -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(GOLDEN.read_bytes())
    return data


@pytest.fixture(scope="session")
def golden_runtime(tmp_path_factory, settings, golden) -> Iterator[Any]:  # type: ignore[no-untyped-def]
    """A store with the golden events ingested through the whole embedded pipeline."""
    from simplemem.runtime import open_runtime

    store = tmp_path_factory.mktemp("golden-store")
    rt = open_runtime(settings, store)
    lines = [(f"event {i}", orjson.dumps(e)) for i, e in enumerate(golden["events"])]
    rt.report = rt.pipeline.ingest(lines)
    yield rt
    rt.close()


@pytest.fixture(scope="session")
def embedded_service(tmp_path_factory):  # type: ignore[no-untyped-def]
    """One embedded `simplemem serve` process for the service tests (tests/service_server.py)."""
    from tests.service_server import start_embedded

    yield from start_embedded(tmp_path_factory)
