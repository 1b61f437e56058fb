"""The recipes of docs/integrations.md run as a user runs them: each a file under recipes/, in an
environment with the framework from PyPI and the client's few dependencies only (no model, nothing
of the pipeline: tests/recipe_env.py), against a real `simplemem serve`, with a scripted model in
place of an LLM. The agent tells a fact in one conversation and asks in another: what the model is
given when it answers must hold the fact (it came from memory, not from the conversation)."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
import uuid
from typing import Any

import orjson
import pytest

from simplemem.client import Client
from simplemem.schemas.settings import REPO_ROOT
from tests.recipe_env import recipes_python
from tests.service_server import ADMIN, ServeProcess

pytestmark = pytest.mark.slow
RECIPES = REPO_ROOT / "recipes"


def run_recipe(name: str, server: ServeProcess) -> dict[str, Any]:
    """The recipe's JSON line, run for a tenant of its own (nothing else in its memory)."""
    with Client(server.url, ADMIN) as admin:
        key = admin.create_key(f"recipe-{uuid.uuid4().hex[:8]}").key
    env = {**os.environ, "SIMPLEMEM_URL": server.url, "SIMPLEMEM_KEY": key, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(
        [str(recipes_python()), str(RECIPES / f"{name}.py")], env=env, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    found: dict[str, Any] = orjson.loads(done.stdout.decode().strip().splitlines()[-1])
    return found


@pytest.mark.parametrize("recipe", ["langgraph_client", "agents_client"])
def test_an_agent_given_memory_through_the_client_is_told_what_it_remembers(
    embedded_service: ServeProcess, recipe: str
) -> None:
    found = run_recipe(recipe, embedded_service)
    seen = found["seen"]  # LangGraph: the prompt's messages; the Agents SDK: instructions and input
    remembered, asked = (
        (seen[0], seen[1:]) if isinstance(seen, list) else (seen["instructions"], seen["input"])
    )
    assert "Hana lives in Copenhagen" in remembered, seen
    assert "Copenhagen" not in orjson.dumps(asked).decode(), "the fact came from memory, not the conversation"


@pytest.mark.parametrize("recipe", ["langgraph_mcp", "agents_mcp"])
def test_an_agent_given_memory_through_mcp_finds_what_it_remembered(
    embedded_service: ServeProcess, recipe: str
) -> None:
    found = run_recipe(recipe, embedded_service)
    assert {"remember", "search_memories"} <= set(found["tools"])
    tool_output = orjson.dumps(found["seen"][-1]).decode()  # what the search tool handed the model
    assert "Hana lives in Copenhagen" in tool_output, tool_output


def pins(requirements: list[str]) -> dict[str, str]:
    return dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", "\n".join(requirements), re.M))


def test_the_recipes_environment_has_the_extras_pins_and_the_clients_locked_versions() -> None:
    """One pin per framework (pyproject's `recipes` extra), and the client runs with the versions the
    project's lock tests."""
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    extra = pins(project["project"]["optional-dependencies"]["recipes"])
    wanted = pins((RECIPES / "requirements.in").read_text().splitlines())
    assert extra.items() <= wanted.items()
    locked = pins((REPO_ROOT / "requirements.lock").read_text().splitlines())
    client = {
        n: v
        for n, v in wanted.items()
        if n in {"httpx", "tenacity", "pydantic", "pydantic-settings", "orjson"}
    }
    assert client and client.items() <= locked.items()
    assert not extra.keys() & locked.keys(), "the frameworks are not in the default install"
