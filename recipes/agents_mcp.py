"""An OpenAI Agents SDK agent with simplemem memory through MCP: the service's MCP server
(Streamable HTTP at ``/mcp/``, the tenant's key in the header) gives the agent its tools
(``remember``, ``search_memories``, ``list_memories``, ``forget_message``).

    SIMPLEMEM_URL=http://127.0.0.1:8080 SIMPLEMEM_KEY=... python recipes/agents_mcp.py

The model here is a scripted stand-in (it calls the tools a real model would choose and records
what it is given); give :func:`build_agent` a model name such as ``"gpt-4.1"`` instead.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

INSTRUCTIONS = (
    "You are a helpful assistant with a long-term memory. Remember what the user tells you about "
    "themselves with `remember`; search your memory with `search_memories` before answering a question."
)


def memory_server(url: str, key: str) -> MCPServerStreamableHttp:
    params = {"url": f"{url.rstrip('/')}/mcp/", "headers": {"Authorization": f"Bearer {key}"}}
    return MCPServerStreamableHttp(params=params, name="simplemem", cache_tools_list=True)  # type: ignore[arg-type]


def build_agent(server: MCPServerStreamableHttp, model: Model | str) -> Agent[Any]:
    return Agent(name="assistant", instructions=INSTRUCTIONS, mcp_servers=[server], model=model)


class ScriptedModel(Model):
    """A stand-in for an LLM: a statement is remembered, a question searched first, then answered
    from the tool's output; each input is recorded in ``seen``."""

    def __init__(self) -> None:
        self.seen: list[Any] = []

    async def get_response(
        self, system_instructions: str | None, input: Any, *args: Any, **kw: Any
    ) -> ModelResponse:
        self.seen.append(input)
        last = input[-1] if isinstance(input, list) else {"role": "user", "content": input}
        if last.get("type") == "function_call_output":
            return _reply(f"From memory: {last['output']}")
        text = str(last["content"])
        name, args = (
            ("search_memories", {"query": text}) if text.endswith("?") else ("remember", {"text": text})
        )
        call = ResponseFunctionToolCall(
            type="function_call", call_id=f"call-{len(self.seen)}", name=name, arguments=json.dumps(args)
        )
        return ModelResponse(output=[call], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kw: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


def _reply(text: str) -> ModelResponse:
    content = ResponseOutputText(type="output_text", text=text, annotations=[])
    message = ResponseOutputMessage(
        id="msg-1", type="message", role="assistant", status="completed", content=[content]
    )
    return ModelResponse(output=[message], usage=Usage(), response_id=None)


async def run() -> dict[str, Any]:
    set_tracing_disabled(True)  # traces would go to OpenAI's platform
    model = ScriptedModel()
    async with memory_server(os.environ["SIMPLEMEM_URL"], os.environ["SIMPLEMEM_KEY"]) as server:
        agent = build_agent(server, model)
        await Runner.run(agent, "My sister Hana lives in Copenhagen.")
        answer = await Runner.run(agent, "Where does my sister live?")
        tools = sorted(t.name for t in await server.list_tools())
    return {"answer": answer.final_output, "seen": model.seen[-1], "tools": tools}


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run()), default=str))
