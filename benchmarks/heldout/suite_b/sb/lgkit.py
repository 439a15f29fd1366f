"""LangGraph plumbing shared by the route-1 agents: a chat model on the fake server, a ReAct loop."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from sb.env import ENV
from trajdebug.integrations.langchain import TrajdebugTracer


def chat_model(model: str = "gpt-4o-mini", **kw: Any) -> ChatOpenAI:
    return ChatOpenAI(
        model=model,
        base_url=ENV.server.base_url,
        api_key="sk-heldout-b-fake",
        temperature=0,
        max_retries=0,
        timeout=30,
        **kw,
    )


class ReactState(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def react_graph(
    system: str,
    tools: list[Any],
    *,
    finish: Callable[[ReactState], dict[str, Any]] | None = None,
    finish_name: str = "finish",
    model: str = "gpt-4o-mini",
) -> Any:
    """A hand-built ReAct graph: agent <-> tools, then an optional finishing node that may reject the result."""
    llm = chat_model(model).bind_tools(tools)

    def agent(state: ReactState) -> dict[str, Any]:
        msgs = state["messages"]
        if not msgs or not isinstance(msgs[0], SystemMessage):
            msgs = [SystemMessage(system), *msgs]
        return {"messages": [llm.invoke(msgs)]}

    g = StateGraph(ReactState)
    g.add_node("agent", agent)
    # Tool failures must stop the run: no error text handed back to the model.
    g.add_node("tools", ToolNode(tools, handle_tool_errors=False))
    g.add_edge(START, "agent")
    if finish is not None:
        g.add_node(finish_name, finish)
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: finish_name})
        g.add_edge(finish_name, END)
    else:
        g.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    g.add_edge("tools", "agent")
    return g.compile()


def invoke(app: Any, inputs: dict[str, Any], path: Path, run_name: str, tags: list[str] | None = None) -> Any:
    tracer = TrajdebugTracer(path=path)
    return app.invoke(
        inputs,
        config={"callbacks": [tracer], "run_name": run_name, "tags": tags or [], "recursion_limit": 40},
    )


def ask(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}
