"""Recording routes: the trajdebug SDK, LangGraph + tracer, the OpenAI Agents SDK + processor, OTLP/JSON."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any, Callable

import trajdebug
from openai import OpenAI


def _js(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def chat_messages(op: str, payload: Any, system: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": f"OP: {op}\n{_js(payload)}"}]


def read_op(request) -> tuple[str, Any]:
    """What a scripted policy reads from a Chat Completions request: the op line and its JSON payload."""
    msgs = request.body.get("messages") or []
    text = ""
    for m in reversed(msgs):
        if m.get("role") == "user":
            c = m.get("content")
            text = c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
            break
    first, _, rest = text.partition("\n")
    return first.removeprefix("OP: ").strip(), json.loads(rest) if rest.strip() else None


class SdkHarness:
    """Steps through the trajdebug recording SDK."""

    def __init__(self, run, base_url: str) -> None:
        self.run = run
        self.client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)

    def llm(self, name: str, payload: Any, system: str) -> Any:
        msgs = chat_messages(name, payload, system)
        with trajdebug.step(name, kind="llm", input={"messages": msgs, "context": payload}) as s:
            r = self.client.chat.completions.create(model="scripted-planner", messages=msgs)
            text = r.choices[0].message.content
            s.output = {"role": "assistant", "content": text}
            s.usage(model=r.model, prompt_tokens=r.usage.prompt_tokens, completion_tokens=r.usage.completion_tokens)
        return json.loads(text)

    def tool(self, name: str, args: dict, fn: Callable[..., Any], kind: str = "tool") -> Any:
        with trajdebug.step(name, kind=kind, input=args) as s:
            out = fn(**args)
            s.output = out
        return out

    def retrieve(self, name: str, query: str, fn: Callable[[str], Any]) -> Any:
        return self.tool(name, {"query": query}, lambda query: fn(query), kind="retrieval")

    def step(self, name: str, kind: str, fn: Callable[..., Any], **inp: Any) -> Any:
        with trajdebug.step(name, kind=kind, input=inp) as s:
            out = fn(**inp)
            s.output = out
        return out

    def remember(self, name: str, key: str, fn: Callable[..., Any], **inp: Any) -> Any:
        with trajdebug.step(name, kind="state", input=inp) as s:
            value = self.run.state[key] = fn(**inp)
            s.output = {key: value}
        return value

    def recall(self, key: str) -> Any:
        return self.run.state[key]

    @contextlib.contextmanager
    def sub(self, name: str, **inp: Any):
        with trajdebug.step(name, kind="agent", input=inp) as s:
            box: dict = {}
            yield box
            s.output = box.get("result")


def record_sdk(agent, inp_name: str, path: Path, base_url: str) -> None:
    inp = agent.INPUTS[inp_name]
    try:
        with trajdebug.run(agent.NAME, path=str(path), task=agent.task(inp)) as run:
            agent.flow(SdkHarness(run, base_url), inp)
    except agent.Rejected:
        pass


# --------------------------------------------------------------------------- OTLP / OpenInference
class OtlpHarness:
    """OpenTelemetry spans with OpenInference attributes, the model called over HTTP."""

    def __init__(self, tracer, base_url: str) -> None:
        self.tracer = tracer
        self.client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
        self.state: dict = {}

    def _span(self, name: str, kind: str, inp: Any):
        return self.tracer.start_as_current_span(
            name,
            attributes={"openinference.span.kind": kind, "input.value": _js(inp), "input.mime_type": "application/json"},
        )

    def llm(self, name: str, payload: Any, system: str) -> Any:
        msgs = chat_messages(name, payload, system)
        with self._span(name, "LLM", {"messages": msgs}) as sp:
            for i, m in enumerate(msgs):
                sp.set_attribute(f"llm.input_messages.{i}.message.role", m["role"])
                sp.set_attribute(f"llm.input_messages.{i}.message.content", m["content"])
            r = self.client.chat.completions.create(model="scripted-planner", messages=msgs)
            text = r.choices[0].message.content
            sp.set_attribute("llm.model_name", r.model)
            sp.set_attribute("llm.output_messages.0.message.role", "assistant")
            sp.set_attribute("llm.output_messages.0.message.content", text)
            sp.set_attribute("llm.token_count.prompt", r.usage.prompt_tokens)
            sp.set_attribute("llm.token_count.completion", r.usage.completion_tokens)
            sp.set_attribute("output.value", text)
        return json.loads(text)

    def tool(self, name: str, args: dict, fn: Callable[..., Any], kind: str = "TOOL") -> Any:
        with self._span(name, kind, args) as sp:
            sp.set_attribute("tool.name", name)
            out = fn(**args)
            sp.set_attribute("output.value", _js(out))
            sp.set_attribute("output.mime_type", "application/json")
        return out

    def retrieve(self, name: str, query: str, fn: Callable[[str], Any]) -> Any:
        with self._span(name, "RETRIEVER", {"query": query}) as sp:
            out = fn(query)
            for i, d in enumerate(out):
                sp.set_attribute(f"retrieval.documents.{i}.document.content", _js(d))
            sp.set_attribute("output.value", _js(out))
            sp.set_attribute("output.mime_type", "application/json")
        return out

    def step(self, name: str, kind: str, fn: Callable[..., Any], **inp: Any) -> Any:
        with self._span(name, "CHAIN", inp) as sp:
            out = fn(**inp)
            sp.set_attribute("output.value", _js(out))
            sp.set_attribute("output.mime_type", "application/json")
        return out

    def remember(self, name: str, key: str, fn: Callable[..., Any], **inp: Any) -> Any:
        with self._span(name, "CHAIN", inp) as sp:
            value = self.state[key] = fn(**inp)
            sp.set_attribute("output.value", _js({key: value}))
        return value

    def recall(self, key: str) -> Any:
        return self.state[key]

    @contextlib.contextmanager
    def sub(self, name: str, **inp: Any):
        with self._span(name, "AGENT", inp) as sp:
            sp.set_attribute("agent.name", name)
            box: dict = {}
            yield box
            sp.set_attribute("output.value", _js(box.get("result")))


def record_otlp(agent, inp_name: str, base_url: str) -> list:
    """One run as a list of resourceSpans (protobuf JSON mapping)."""
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    inp = agent.INPUTS[inp_name]
    spans = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": agent.NAME}))
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer(agent.NAME)
    h = OtlpHarness(tracer, base_url)
    try:
        with tracer.start_as_current_span(
            agent.NAME,
            attributes={"openinference.span.kind": "AGENT", "agent.name": agent.NAME,
                        "input.value": agent.task(inp)},
        ) as top:
            out = agent.flow(h, inp)
            top.set_attribute("output.value", _js(out))
    except agent.Rejected:
        pass
    provider.shutdown()
    return MessageToDict(encode_spans(spans.get_finished_spans()))["resourceSpans"]


# --------------------------------------------------------------------------- LangGraph
class LangGraphHarness:
    """Steps as LangChain runnables called inside LangGraph nodes (the tracer sees each one)."""

    def __init__(self, base_url: str) -> None:
        from langchain_openai import ChatOpenAI

        self.chat = ChatOpenAI(base_url=base_url, api_key="not-needed", model="scripted-planner", max_retries=0)

    def llm(self, name: str, payload: Any, system: str) -> Any:
        msgs = chat_messages(name, payload, system)
        reply = self.chat.invoke([(m["role"], m["content"]) for m in msgs], config={"run_name": name})
        return json.loads(reply.content)

    def tool(self, name: str, args: dict, fn: Callable[..., Any]) -> Any:
        from langchain_core.tools import StructuredTool

        t = StructuredTool.from_function(func=fn, name=name, description=f"{name} tool")
        out = t.invoke(args)
        return out

    def retrieve(self, name: str, query: str, fn: Callable[[str], Any]) -> Any:
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever

        class _Index(BaseRetriever):
            def _get_relevant_documents(self, q, *, run_manager=None):
                return [Document(page_content=_js(d)) for d in fn(q)]

        docs = _Index().invoke(query, config={"run_name": name})
        return [json.loads(d.page_content) for d in docs]

    def step(self, name: str, kind: str, fn: Callable[..., Any], **inp: Any) -> Any:
        from langchain_core.runnables import RunnableLambda

        if kind == "retrieval":
            return self.retrieve(name, _js(inp), lambda q: fn(**json.loads(q)))

        return RunnableLambda(lambda x: fn(**x), name=name).invoke(inp, config={"run_name": name})


def record_langgraph(agent, inp_name: str, path: Path, base_url: str) -> None:
    from trajdebug.integrations.langchain import TrajdebugTracer

    inp = agent.INPUTS[inp_name]
    tracer = TrajdebugTracer(path=str(path), name=agent.NAME, task=agent.task(inp))
    graph = agent.build_graph(LangGraphHarness(base_url))
    try:
        graph.invoke(agent.initial_state(inp), config={"callbacks": [tracer], "recursion_limit": 80})
    except agent.Rejected:
        pass


# --------------------------------------------------------------------------- OpenAI Agents SDK
def record_agents(agent, inp_name: str, path: Path, base_url: str) -> None:
    from agents import RunConfig, Runner, set_trace_processors, set_tracing_disabled
    from agents.exceptions import AgentsException
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    inp = agent.INPUTS[inp_name]
    proc = TrajdebugProcessor(path=str(path), name=agent.NAME, task=agent.task(inp))
    set_tracing_disabled(False)
    set_trace_processors([proc])
    client = AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    top = agent.build_agents(client, inp)
    try:
        Runner.run_sync(top, agent.task(inp), run_config=RunConfig(workflow_name=agent.NAME,
                                                                   tracing_disabled=False), max_turns=40)
    except (agent.Rejected, AgentsException):
        pass
    proc.force_flush() if hasattr(proc, "force_flush") else None
    set_trace_processors([])


def agent_history(request) -> tuple[str, list]:
    """(system prompt, [(tool name, arguments, result)]) of a Chat Completions request from the Agents SDK."""
    msgs = request.body.get("messages") or []
    system = msgs[0]["content"] if msgs and msgs[0].get("role") == "system" else ""
    calls: dict = {}
    done = []
    for m in msgs:
        for tc in m.get("tool_calls") or []:
            calls[tc["id"]] = (tc["function"]["name"], tc["function"]["arguments"])
        if m.get("role") == "tool" and m.get("tool_call_id") in calls:
            name, args = calls[m["tool_call_id"]]
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(part.get("text", "") for part in content)
            for decode in (json.loads, __import__("ast").literal_eval):
                try:
                    content = decode(content)
                    break
                except (TypeError, ValueError, SyntaxError):
                    continue
            done.append((name, json.loads(args or "{}"), content))
    return system, done


def agents_model(client):
    from agents import OpenAIChatCompletionsModel

    return OpenAIChatCompletionsModel(model="scripted-planner", openai_client=client)
