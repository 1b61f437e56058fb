"""LLM decomposer contract: JSON units are used; malformed output falls back to offline and is counted.

The HTTP endpoint is a stand-in (httpx.MockTransport): this tests our parsing and fallback logic,
not a model.
"""

from __future__ import annotations

import httpx
import orjson

from simplemem.processors.ingest.llm_decompose import LlmDecomposer
from simplemem.schemas.settings import Settings
from simplemem.schemas.window import Sentence, Window
from tests.helpers import message


def window() -> Window:
    m = message(1)
    m.prose = "I adopted a cat named Miso."
    m.sentences = [
        Sentence(
            text=m.prose,
            tokens=[
                ("I", " ", "PRON", "PRP", ""),
                ("adopted", " ", "VERB", "VBD", ""),
                ("a", " ", "DET", "DT", ""),
                ("cat", " ", "NOUN", "NN", ""),
                ("named", " ", "VERB", "VBN", ""),
                ("Miso", "", "PROPN", "NNP", "B-PERSON"),
                (".", "", "PUNCT", ".", ""),
            ],
        )
    ]
    return Window(tenant_id="t1", session_id="s1", messages=[m])


def decomposer(reply: str, status: int = 200) -> tuple[LlmDecomposer, list[dict]]:
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(orjson.loads(request.content))
        body = {"choices": [{"message": {"content": reply}}]}
        return httpx.Response(status, json=body)

    settings = Settings(decomposer="llm", llm_base_url="http://llm.test/v1", llm_max_retries=1)
    client = httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(handler))
    return LlmDecomposer(settings, client=client), seen


def test_valid_json_becomes_units() -> None:
    reply = orjson.dumps(
        {
            "units": [
                {
                    "text": "Jordan adopted a cat named Miso on 2026-01-05.",
                    "event_time": "2026-01-05",
                    "persons": ["Jordan"],
                    "source_ids": ["s1:m1"],
                }
            ]
        }
    ).decode()
    dec, seen = decomposer(reply)
    result = dec.decompose(window())
    assert result.fallbacks == 0
    assert [d.unit.text for d in result.units] == ["Jordan adopted a cat named Miso on 2026-01-05."]
    assert result.units_per_message == {"s1:m1": 1}
    assert seen[0]["response_format"] == {"type": "json_object"}


def test_malformed_output_falls_back_and_is_counted() -> None:
    dec, _ = decomposer("this is not json")
    result = dec.decompose(window())
    assert result.fallbacks == 1
    assert [d.unit.text for d in result.units] == ["Jordan adopted a cat named Miso."]


def test_citing_a_message_outside_the_window_is_malformed() -> None:
    reply = orjson.dumps({"units": [{"text": "x", "source_ids": ["elsewhere"]}]}).decode()
    dec, _ = decomposer(reply)
    assert dec.decompose(window()).fallbacks == 1


def test_server_errors_are_retried_then_fall_back() -> None:
    dec, seen = decomposer("{}", status=503)
    result = dec.decompose(window())
    assert len(seen) == 2  # one try + one retry
    assert result.fallbacks == 1
