"""An OpenAI Agents SDK agent with simplemem memory through the Python client: its instructions
are built per run from the context simplemem returns for the user's message, and each exchange is
published after the run.

    SIMPLEMEM_URL=http://127.0.0.1:8080 SIMPLEMEM_KEY=... python recipes/agents_client.py

The model here is a scripted stand-in that records what it is given (give :func:`build_agent` a
model name such as ``"gpt-4.1"`` instead). The script tells the agent a fact in one conversation,
asks about it in another, and prints what the model saw as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from agents import Agent, Model, ModelResponse, RunContextWrapper, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from simplemem.client import AsyncClient, Conversation


@dataclass
class Turn:
    """What one run knows: the user's message (the question memory is asked)."""

    text: str


def build_agent(memory: AsyncClient, model: Model | str) -> Agent[Turn]:
    async def instructions(run: RunContextWrapper[Turn], agent: Agent[Turn]) -> str:
        recalled = (await memory.query(run.context.text)).context
        return f"You are a helpful assistant. What you remember:\n{recalled}"

    return Agent[Turn](name="assistant", instructions=instructions, model=model)


async def chat(memory: AsyncClient, agent: Agent[Turn], conversation: Conversation, text: str) -> str:
    """One exchange: answered with what memory holds, then published (both turns)."""
    result = await Runner.run(agent, text, context=Turn(text))
    reply = str(result.final_output)
    await memory.send(conversation.said(text), conversation.answered(reply))
    return reply


class ScriptedModel(Model):
    """A stand-in for an LLM: answers from ``replies`` in turn, records its instructions and input."""

    def __init__(self, replies: list[str]) -> None:
        self.replies = iter(replies)
        self.seen: list[dict[str, Any]] = []

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        self.seen.append({"instructions": system_instructions, "input": input})
        text = ResponseOutputText(type="output_text", text=next(self.replies), annotations=[])
        message = ResponseOutputMessage(
            id="msg-1", type="message", role="assistant", status="completed", content=[text]
        )
        return ModelResponse(output=[message], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


async def run() -> dict[str, Any]:
    set_tracing_disabled(True)  # traces would go to OpenAI's platform
    model = ScriptedModel(["Noted: Hana lives in Copenhagen.", "She lives in Copenhagen."])
    user = f"riley-{uuid.uuid4().hex[:6]}"
    async with AsyncClient(os.environ["SIMPLEMEM_URL"], os.environ["SIMPLEMEM_KEY"]) as memory:
        agent = build_agent(memory, model)
        await chat(
            memory, agent, Conversation(f"{user}-1", user="Riley"), "My sister Hana lives in Copenhagen."
        )
        answer = await chat(
            memory, agent, Conversation(f"{user}-2", user="Riley"), "Where does my sister live?"
        )
    return {"answer": answer, "seen": model.seen[-1]}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run()), default=str))
