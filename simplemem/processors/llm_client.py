"""One OpenAI-compatible ``/chat/completions`` client for every LLM step (decomposition, the
consolidation summary, the knowledge-update judge): the HTTP call, the headers, the retries and
the JSON parsing live here once.

Each step asks for JSON matching a pydantic model; anything else raises :class:`MalformedOutput`,
and an endpoint that keeps failing raises ``httpx.HTTPError`` after the retries. The caller catches
:data:`LLM_FAILURES` and falls back to its offline rule, counting the fallback.
"""

from __future__ import annotations

from typing import Any, TypeVar

import httpx
import orjson
from pydantic import BaseModel, ValidationError
from tenacity import retry, retry_if_exception_type, stop_after_attempt, wait_exponential

from simplemem.schemas.settings import Settings

M = TypeVar("M", bound=BaseModel)


class MalformedOutput(ValueError):
    """The model answered, but not with what was asked for."""


LLM_FAILURES = (MalformedOutput, httpx.HTTPError)  # what a step falls back to its offline rule on


class JsonChat:
    """Ask a chat model for one JSON object (temperature 0, JSON response format, retried)."""

    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
        if not settings.llm_base_url:
            raise ValueError("SIMPLEMEM_LLM_BASE_URL is required for an LLM step")
        self.model = settings.llm_model
        headers = {"Authorization": f"Bearer {settings.llm_api_key}"} if settings.llm_api_key else {}
        self.client = client or httpx.Client(
            base_url=settings.llm_base_url.rstrip("/"), headers=headers, timeout=settings.llm_timeout_seconds
        )
        self._complete = retry(
            stop=stop_after_attempt(settings.llm_max_retries + 1),
            wait=wait_exponential(multiplier=0.5, max=8),
            retry=retry_if_exception_type((httpx.TransportError, httpx.HTTPStatusError)),
            reraise=True,
        )(self._post)

    def _post(self, messages: list[dict[str, str]]) -> str:
        response = self.client.post(
            "/chat/completions",
            json={
                "model": self.model,
                "messages": messages,
                "temperature": 0,
                "response_format": {"type": "json_object"},
            },
        )
        response.raise_for_status()
        try:
            body: Any = response.json()
            return str(body["choices"][0]["message"]["content"])
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MalformedOutput(f"not a chat completion: {exc!r}") from None

    def ask(self, system: str, user: str, answer: type[M]) -> M:
        """The model's answer to ``user`` under the ``system`` prompt, as an ``answer``."""
        raw = self._complete([{"role": "system", "content": system}, {"role": "user", "content": user}])
        try:
            return answer.model_validate(orjson.loads(raw))
        except (orjson.JSONDecodeError, ValidationError) as exc:
            raise MalformedOutput(f"not the expected JSON: {exc}") from None
