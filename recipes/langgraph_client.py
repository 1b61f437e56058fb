"""A LangGraph agent with simplemem memory through the Python client: before answering it fetches
the context for the user's message, and after answering it publishes both turns.

    SIMPLEMEM_URL=http://127.0.0.1:8080 SIMPLEMEM_KEY=... python recipes/langgraph_client.py

The model here is a scripted stand-in that records what it is given (pass any LangChain chat model,
e.g. ``ChatOpenAI(model=...)``, to :func:`build_agent` instead). The script tells the agent a fact
in one conversation, asks about it in another, and prints what the model saw as JSON.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable, RunnableLambda
from langgraph.graph import END, START, MessagesState, StateGraph

from simplemem.client import Client, Conversation


class State(MessagesState):
    context: str


def build_agent(memory: Client, model: Runnable[list[BaseMessage], AIMessage], chat: Conversation) -> Any:
    """recall -> respond -> remember, over one conversation."""

    def recall(state: State) -> dict[str, Any]:
        question = str(state["messages"][-1].content)
        return {"context": memory.query(question).context}

    def respond(state: State) -> dict[str, Any]:
        system = SystemMessage(f"You are a helpful assistant. What you remember:\n{state['context']}")
        return {"messages": [model.invoke([system, *state["messages"]])]}

    def remember(state: State) -> dict[str, Any]:
        question, reply = state["messages"][-2], state["messages"][-1]
        memory.send(chat.said(str(question.content)), chat.answered(str(reply.content)))
        return {}

    graph = StateGraph(State)
    for name, step in (("recall", recall), ("respond", respond), ("remember", remember)):
        graph.add_node(name, step)
    graph.add_edge(START, "recall")
    graph.add_edge("recall", "respond")
    graph.add_edge("respond", "remember")
    graph.add_edge("remember", END)
    return graph.compile()


def scripted_model(replies: list[str], seen: list[list[str]]) -> Runnable[list[BaseMessage], AIMessage]:
    """A stand-in for an LLM: answers from ``replies`` in turn, records each prompt in ``seen``."""
    script = iter(replies)

    def answer(messages: list[BaseMessage]) -> AIMessage:
        seen.append([str(m.content) for m in messages])
        return AIMessage(next(script))

    return RunnableLambda(answer)


def main() -> None:
    seen: list[list[str]] = []
    model = scripted_model(["Noted: Hana lives in Copenhagen.", "She lives in Copenhagen."], seen)
    user = f"riley-{uuid.uuid4().hex[:6]}"
    with Client(os.environ["SIMPLEMEM_URL"], os.environ["SIMPLEMEM_KEY"]) as memory:
        first = build_agent(memory, model, Conversation(f"{user}-1", user="Riley"))
        first.invoke({"messages": [HumanMessage("My sister Hana lives in Copenhagen.")]})
        later = build_agent(memory, model, Conversation(f"{user}-2", user="Riley"))
        answer = later.invoke({"messages": [HumanMessage("Where does my sister live?")]})
    print(json.dumps({"answer": answer["messages"][-1].content, "seen": seen[-1]}))


if __name__ == "__main__":
    main()
