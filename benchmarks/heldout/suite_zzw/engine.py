"""Recording backends shared by the suite's agents.

An agent is written once as phases of plain Python that call ``ctx.tool``, ``ctx.code`` and ``ctx.llm``;
the backend records them through its route (trajdebug SDK, a LangGraph StateGraph with the LangChain tracer,
OpenTelemetry spans with OpenInference attributes). The OpenAI Agents SDK agents drive a real ``Agent`` and
``Runner`` through a scripted model (``run_agents``).
"""


import ast
import asyncio
import contextlib
import copy
import json

import kit


class Ctx:
    """Bookkeeping common to every backend: step counts by recorded name, where a switch fired, what raised."""

    def __init__(self):
        self.counts: dict[str, int] = {}
        self.current = None  # (name, occurrence) of the step being executed
        self.root = None
        self.failure = None
        self.state: dict = {}
        kit.HOOK = self._hook

    def _hook(self):
        if self.root is None and self.current is not None:
            self.root = self.current

    @contextlib.contextmanager
    def _track(self, name):
        self.counts[name] = self.counts.get(name, 0) + 1
        outer = self.current
        self.current = (name, self.counts[name])
        try:
            yield
        except Exception as exc:
            if self.failure is None and not isinstance(exc, ConnectionError):
                self.failure = self.current
            raise
        finally:
            self.current = outer

    def tool_retry(self, name, fn, args, attempts=3):
        for attempt in range(attempts):
            try:
                return self.tool(name, fn, args)
            except ConnectionError:
                if attempt == attempts - 1:
                    raise
        return None


def _prompt(tag, payload):
    return f"{tag}\n{json.dumps(payload, sort_keys=True)}"


def chat_policy(brain):
    """A FakeModelServer policy: the last user message is 'TAG\\n{json}'; brain(tag, payload) answers."""

    def policy(request):
        msgs = request.body["messages"]
        text = msgs[-1]["content"]
        if isinstance(text, list):
            text = "".join(part.get("text", "") for part in text)
        tag, _, body = text.partition("\n")
        return brain(tag, json.loads(body))

    return policy


# --------------------------------------------------------------------------------------------- sdk


class SdkCtx(Ctx):
    def __init__(self, client, model, system):
        super().__init__()
        self.client, self.model, self.system = client, model, system
        import trajdebug

        self.td = trajdebug
        self.state = trajdebug.current_run().state

    def tool(self, name, fn, args, kind="tool"):
        with self._track(name), self.td.step(name, kind=kind, input=args) as s:
            s.output = out = fn(**args)
        return out

    def code(self, name, kind, fn, value):
        with self._track(name), self.td.step(name, kind=kind, input=value) as s:
            s.output = out = fn(value)
        return out

    def llm(self, name, tag, payload):
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": _prompt(tag, payload)}]
        with self._track(name), self.td.step(name, kind="llm", input={"messages": messages}) as s:
            resp = self.client.chat.completions.create(model=self.model, messages=messages)
            s.output = text = resp.choices[0].message.content
            s.usage(prompt_tokens=resp.usage.prompt_tokens, completion_tokens=resp.usage.completion_tokens) if resp.usage else None
        return text

    @contextlib.contextmanager
    def group(self, name):
        with self._track(name), self.td.step(name, kind="agent"):
            yield


def run_phases(ctx, phases, data):
    for phase in phases:
        name, body = phase[0], phase[1]
        mode = phase[2] if len(phase) > 2 else None
        if mode == "loop":
            for i in range(len(data["items"])):
                data["_i"] = i
                body(ctx, data)
        elif mode == "sub":
            with ctx.group(name):
                for _sub_name, sub_body in body:
                    sub_body(ctx, data)
        else:
            body(ctx, data)
    return data


def record_sdk(agent, server, request, path):
    import trajdebug
    from openai import OpenAI

    server.use(chat_policy(agent.brain))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    ctx = None
    try:
        with trajdebug.run(agent.NAME, task=request["task"], path=path):
            ctx = SdkCtx(client, server.model, agent.SYSTEM)
            run_phases(ctx, agent.phases(), {"request": request})
    except Exception:
        pass
    return ctx


# --------------------------------------------------------------------------------------------- otlp


class OtlpCtx(Ctx):
    KINDS = {"tool": "TOOL", "retrieval": "RETRIEVER", "agent": "AGENT"}

    def __init__(self, tracer, client, model, system):
        super().__init__()
        self.tracer, self.client, self.model, self.system = tracer, client, model, system

    def _span(self, name, kind, value):
        attrs = {"openinference.span.kind": self.KINDS.get(kind, "CHAIN")}
        if value is not None:
            attrs["input.value"] = json.dumps(value, sort_keys=True)
            attrs["input.mime_type"] = "application/json"
        return self.tracer.start_as_current_span(name, attributes=attrs)

    def tool(self, name, fn, args, kind="tool"):
        with self._track(name), self._span(name, kind, args) as sp:
            out = fn(**args)
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True))
            sp.set_attribute("output.mime_type", "application/json")
        return out

    def code(self, name, kind, fn, value):
        with self._track(name), self._span(name, kind, value) as sp:
            out = fn(value)
            sp.set_attribute("output.value", json.dumps(out, sort_keys=True))
            sp.set_attribute("output.mime_type", "application/json")
        return out

    def llm(self, name, tag, payload):
        messages = [{"role": "system", "content": self.system}, {"role": "user", "content": _prompt(tag, payload)}]
        with self._track("ChatCompletion"):
            resp = self.client.chat.completions.create(model=self.model, messages=messages)
        return resp.choices[0].message.content

    @contextlib.contextmanager
    def group(self, name):
        with self._track(name), self._span(name, "agent", None):
            yield


class OtlpRecorder:
    def __init__(self):
        from openinference.instrumentation.openai import OpenAIInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider(resource=Resource.create({"service.name": "field-agents"}))
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.instrumentor = OpenAIInstrumentor()
        self.instrumentor.instrument(tracer_provider=self.provider)

    def close(self):
        self.instrumentor.uninstrument()


def record_otlp(agent, server, request, path, recorder):
    from google.protobuf.json_format import MessageToDict
    from openai import OpenAI
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    server.use(chat_policy(agent.brain))
    client = OpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    recorder.spans.clear()
    tracer = recorder.provider.get_tracer(agent.NAME)
    ctx = OtlpCtx(tracer, client, server.model, agent.SYSTEM)
    try:
        with tracer.start_as_current_span(agent.NAME, attributes={
                "openinference.span.kind": "AGENT", "agent.name": agent.NAME,
                "input.value": request["task"]}):
            run_phases(ctx, agent.phases(), {"request": request})
    except Exception:
        pass
    envelope = MessageToDict(encode_spans(recorder.spans.get_finished_spans()))
    with open(path, "w") as f:
        json.dump(envelope, f)
    return ctx


# --------------------------------------------------------------------------------------------- langgraph


class GraphCtx(Ctx):
    def __init__(self, llm, system):
        super().__init__()
        self.llm_model, self.system = llm, system
        self.config = None

    def tool(self, name, fn, args, kind="tool"):
        from langchain_core.tools import StructuredTool

        t = StructuredTool.from_function(func=fn, name=name, description=(fn.__doc__ or name))
        with self._track(name):
            return t.invoke(args, config=self.config)

    def code(self, name, kind, fn, value):
        from langchain_core.runnables import RunnableLambda

        with self._track(name):
            return RunnableLambda(fn, name=name).invoke(value, config=self.config)

    def llm(self, name, tag, payload):
        from langchain_core.messages import HumanMessage, SystemMessage

        with self._track(name):
            msg = self.llm_model.invoke([SystemMessage(self.system), HumanMessage(_prompt(tag, payload))],
                                        config={**(self.config or {}), "run_name": name})
        return msg.content


def build_graph(agent, ctx):
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        data: dict

    def node_of(body, track_name=None):
        def node(state: State, config) -> dict:
            data = copy.deepcopy(state["data"])
            ctx.config = config
            if track_name:
                with ctx._track(track_name):
                    body(ctx, data)
            else:
                body(ctx, data)
            return {"data": data}

        return node

    g = StateGraph(State)
    names = []
    for phase in agent.phases():
        name, body = phase[0], phase[1]
        mode = phase[2] if len(phase) > 2 else None
        if mode == "sub":
            sg = StateGraph(State)
            prev = START
            for sub_name, sub_body in body:
                sg.add_node(sub_name, node_of(sub_body, sub_name))
                sg.add_edge(prev, sub_name)
                prev = sub_name
            sg.add_edge(prev, END)
            g.add_node(name, sg.compile(name=name))
        elif mode == "loop":
            def loop_body(c, data, _body=body):
                data["_i"] = data.get("_i", -1) + 1
                _body(c, data)

            g.add_node(name, node_of(loop_body, name))
        else:
            g.add_node(name, node_of(body, name))
        names.append((name, mode))
    g.add_edge(START, names[0][0])
    for (a, mode), (b, _m) in zip(names, names[1:]):
        if mode == "loop":
            def more(state: State, _a=a, _b=b) -> str:
                d = state["data"]
                return _a if d["_i"] + 1 < len(d["items"]) else _b

            g.add_conditional_edges(a, more, [a, b])
        else:
            g.add_edge(a, b)
    g.add_edge(names[-1][0], END)
    return g.compile()


def record_langgraph(agent, server, request, path):
    from langchain_openai import ChatOpenAI

    from trajdebug.integrations.langchain import TrajdebugTracer

    server.use(chat_policy(agent.brain))
    llm = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model, max_retries=0)
    ctx = GraphCtx(llm, agent.SYSTEM)
    graph = build_graph(agent, ctx)
    tracer = TrajdebugTracer(path=path, name=agent.NAME, task=request["task"])
    try:
        graph.invoke({"data": {"request": request}},
                     config={"callbacks": [tracer], "recursion_limit": 200, "run_name": agent.NAME})
    except Exception:
        pass
    return ctx


# --------------------------------------------------------------------------------------------- openai agents


class AgentsCtx(Ctx):
    def ftool(self, fn, fatal=False):
        """A function tool whose calls are counted under the tool's name."""
        import functools

        from agents import function_tool

        @functools.wraps(fn)
        def wrapped(*a, **k):
            with self._track(fn.__name__):
                return fn(*a, **k)

        if fatal:
            return function_tool(wrapped, failure_error_function=None)
        return function_tool(wrapped)


def _outputs(request):
    outs = []
    for item in request.body.get("input", []):
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            try:
                outs.append(ast.literal_eval(item["output"]))
            except (ValueError, SyntaxError):
                outs.append(item["output"])
    return outs


def agents_policy(ctx, flows, response_name):
    """flows: {instructions prefix: generator function(request_text) yielding (tool, args) or a final str}."""
    from trajdebug.testing import Reply, tool_call

    def policy(request):
        instructions = request.body.get("instructions") or ""
        key = next(k for k in flows if instructions.startswith(k))
        user = next((it for it in request.body["input"] if isinstance(it, dict) and it.get("role") == "user"), None)
        text = user["content"] if isinstance(user["content"], str) else user["content"][0]["text"]
        outs = _outputs(request)
        ctx.counts[response_name] = ctx.counts.get(response_name, 0) + 1
        here = (response_name, ctx.counts[response_name])
        gen = flows[key](text)
        step = None
        try:
            ctx.current = here if not outs else None
            step = next(gen)
            for k, out in enumerate(outs):
                if k == len(outs) - 1:
                    ctx.current = here
                step = gen.send(out)
        except StopIteration as stop:
            step = stop.value
        ctx.current = None
        if isinstance(step, tuple):
            return Reply(tool_calls=(tool_call(step[0], step[1]),))
        return step

    return policy


def record_agents(agent, server, request, path):
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client, set_tracing_disabled
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    ctx = AgentsCtx()
    set_tracing_disabled(False)
    client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
    set_default_openai_client(client)
    set_default_openai_api("responses")
    if hasattr(agent, "prepare"):
        agent.prepare(request)
    main, flows = agent.build(ctx, server.model)
    server.use(agents_policy(ctx, flows, agent.RESPONSE_NAME))
    set_trace_processors([TrajdebugProcessor(path=path, task=request["task"])])
    async def go():
        try:
            await Runner.run(main, request["task"], max_turns=80, run_config=RunConfig(workflow_name=agent.NAME))
        finally:
            await client.close()

    try:
        asyncio.run(go())
    except Exception:
        pass
    finally:
        set_trace_processors([])
    return ctx
