"""A LangGraph agent with simplemem memory through MCP: the service's tools (``remember``,
``search_memories``...) loaded with langchain-mcp-adapters, called by the model through a ToolNode.

    SIMPLEMEM_URL=http://127.0.0.1:8080 SIMPLEMEM_KEY=... python recipes/langgraph_mcp.py

The model here is a scripted stand-in (it asks for the tools a real model would choose and records
what it is given); pass a chat model with ``bind_tools(tools)`` to :func:`build_agent` instead.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition


def memory_tools_client(url: str, key: str) -> MultiServerMCPClient:
    return MultiServerMCPClient(
        {
            "memory": {
                "transport": "streamable_http",
                "url": f"{url.rstrip('/')}/mcp/",
                "headers": {"Authorization": f"Bearer {key}"},
            }
        }
    )


def build_agent(model: Runnable[list[BaseMessage], AIMessage], tools: list[BaseTool]) -> Any:
    """model <-> tools until the model answers (what ``create_react_agent`` builds)."""
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


def scripted_model(seen: list[list[str]]) -> Runnable[list[BaseMessage], AIMessage]:
    """A stand-in for an LLM: a statement is remembered, a question searched first; each prompt is
    recorded in ``seen``."""

    def answer(messages: list[BaseMessage]) -> AIMessage:
        seen.append([str(m.content) for m in messages])
        last = messages[-1]
        if isinstance(last, ToolMessage):
            return AIMessage("Done." if last.name == "remember" else f"From memory: {last.content}")
        text = str(last.content)
        tool = "search_memories" if text.endswith("?") else "remember"
        args = {"query": text} if tool == "search_memories" else {"text": text, "speaker": "Riley"}
        return AIMessage("", tool_calls=[{"name": tool, "args": args, "id": f"call-{len(seen)}"}])

    return RunnableLambda(answer)


async def run() -> dict[str, Any]:
    seen: list[list[str]] = []
    tools = await memory_tools_client(os.environ["SIMPLEMEM_URL"], os.environ["SIMPLEMEM_KEY"]).get_tools()
    agent = build_agent(scripted_model(seen), tools)
    await agent.ainvoke({"messages": [HumanMessage("My sister Hana lives in Copenhagen.")]})
    answer = await agent.ainvoke({"messages": [HumanMessage("Where does my sister live?")]})
    return {
        "answer": answer["messages"][-1].content,
        "seen": seen[-1],
        "tools": sorted(t.name for t in tools),
    }


if __name__ == "__main__":
    print(json.dumps(asyncio.run(run())))
