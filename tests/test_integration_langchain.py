"""Tests for the LangChain tracer, on real langchain-core runnables and its fake chat models (no network)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest


pytest.importorskip("langchain_core", reason="langchain-core is not installed")

from langchain_core.language_models.fake import FakeListLLM
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import ToolException, tool

from trajdebug.core.jsonl import read_jsonl
from trajdebug.integrations.langchain import TrajdebugTracer, is_control_flow


@tool
def lookup(name: str) -> str:
    """Find a user's id by name."""
    if name != "ana":
        raise ToolException(f"no user named {name}")
    return "u-123"


lookup.handle_tool_error = True


def _by_name(run: Any, name: str) -> Any:
    return next(s for s in run.steps if s.name == name)


class TestPipelines:
    """Chains, chat models, tools and parsers become steps with edges."""

    def test_sequence_steps_and_edges(self, tmp_path: Path) -> None:
        """prompt | chat model | parser: three steps under the sequence, each fed by the previous one."""
        tracer = TrajdebugTracer(path=tmp_path / "runs.jsonl")
        model = FakeMessagesListChatModel(responses=[AIMessage(content="Paris")])
        chain = (
            ChatPromptTemplate.from_messages([("human", "Capital of {country}?")]) | model | StrOutputParser()
        )
        assert chain.invoke({"country": "France"}, config={"callbacks": [tracer]}) == "Paris"
        run = tracer.to_run()
        seq = _by_name(run, "RunnableSequence")
        prompt, llm, parser = (
            _by_name(run, n) for n in ("ChatPromptTemplate", "FakeMessagesListChatModel", "StrOutputParser")
        )
        assert (seq.kind, llm.kind, parser.kind) == ("agent", "llm", "parse")
        assert {prompt.parent_id, llm.parent_id, parser.parent_id} == {seq.step_id}
        assert any(d.step_id == prompt.step_id and d.origin == "declared" for d in llm.deps)
        assert any(d.step_id == llm.step_id and d.origin == "declared" for d in parser.deps)
        assert llm.input == {"messages": [{"role": "user", "content": "Capital of France?"}]}
        assert llm.output == {"role": "assistant", "content": "Paris", "tool_calls": []}
        assert run.outcome == "success"
        assert run.metadata["langchain_run_id"] == seq.step_id
        [saved] = read_jsonl(tmp_path / "runs.jsonl").runs
        assert saved.steps == run.steps

    def test_tool_call_ids_link_llm_tool_llm(self) -> None:
        """A tool call id links the model that asked, the tool that ran, and the model that read the result."""
        tracer = TrajdebugTracer()
        model = FakeMessagesListChatModel(
            responses=[
                AIMessage(
                    content="", tool_calls=[{"name": "lookup", "args": {"name": "ana"}, "id": "call_1"}]
                ),
                AIMessage(content="ana is u-123"),
            ]
        )

        def agent(question: str, config: RunnableConfig) -> str:
            history: list[Any] = [HumanMessage(question)]
            ai = model.invoke(history, config)
            history += [ai, lookup.invoke(ai.tool_calls[0], config)]
            return str(model.invoke(history, config).content)

        RunnableLambda(agent).invoke("who is ana?", config={"callbacks": [tracer]})
        run = tracer.to_run()
        first, second = (s for s in run.steps if s.kind == "llm")
        tool_step = _by_name(run, "lookup")
        assert tool_step.kind == "tool"
        assert tool_step.attributes["tool_call_id"] == "call_1"
        assert tool_step.output == "u-123"
        assert any(d.step_id == first.step_id and d.origin == "declared" for d in tool_step.deps)
        assert any(d.step_id == tool_step.step_id and d.origin == "declared" for d in second.deps)


class TestErrors:
    """Errors counted once, handled tool errors, control flow, retries."""

    def test_exception_is_one_error_that_propagates(self) -> None:
        """An exception raised in a step is one error: occurred there, propagated through the sequence, failed the run."""
        tracer = TrajdebugTracer()

        def boom(x: str) -> str:
            raise ValueError(f"bad input {x}")

        chain = RunnableLambda(lambda x: x.upper()) | RunnableLambda(boom)
        with pytest.raises(ValueError, match="bad input"):
            chain.invoke("a", config={"callbacks": [tracer]})
        run = tracer.to_run()
        [err] = run.errors
        failing = _by_name(run, "boom")
        assert err.step_id == failing.step_id
        assert (err.type, err.message) == ("ValueError", "bad input A")
        assert [c.stage for c in err.stages] == ["occurred", "propagated", "failed"]
        assert run.outcome == "failure"
        assert run.failure_reason == "bad input A"
        assert failing.error is not None
        assert "Traceback" in (failing.error.traceback or "")
        assert all(s.error is None or s.error.error_id == err.error_id for s in run.steps)

    def test_handled_tool_error_reported_through_on_tool_end(self) -> None:
        """A tool error turned into a ToolMessage(status='error') is an error, recovered, and the run succeeds."""
        tracer = TrajdebugTracer()
        out = lookup.invoke(
            {"name": "lookup", "args": {"name": "bob"}, "id": "call_9", "type": "tool_call"},
            config={"callbacks": [tracer]},
        )
        assert isinstance(out, ToolMessage)
        assert out.status == "error"
        run = tracer.to_run()
        [step] = run.steps
        [err] = run.errors
        assert step.status == "error"
        assert step.error is not None
        assert step.error.type == "ToolError"
        assert err.message == "no user named bob"
        assert [c.stage for c in err.stages] == ["occurred", "recovered"]
        assert run.outcome == "success"

    def test_graph_control_flow_is_not_an_error(self) -> None:
        """An exception of LangGraph's GraphBubbleUp family (an interrupt) is control flow, not an error."""

        class GraphBubbleUp(Exception):  # the names langgraph.errors uses; langgraph itself is not needed
            pass

        class GraphInterrupt(GraphBubbleUp):
            pass

        def ask_human(x: str) -> str:
            raise GraphInterrupt("waiting for approval")

        tracer = TrajdebugTracer()
        with pytest.raises(GraphInterrupt):
            (RunnableLambda(lambda x: x) | RunnableLambda(ask_human)).invoke(
                "go", config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        assert is_control_flow(GraphInterrupt())
        assert not is_control_flow(ValueError())
        assert run.errors == ()
        assert all(s.status == "ok" for s in run.steps)
        assert _by_name(run, "ask_human").attributes["control_flow"] == "GraphInterrupt"

    def test_runnable_retry_attempts(self) -> None:
        """with_retry: each attempt is a step retrying the previous one, whose error the retry recovers."""
        calls = {"n": 0}

        def flaky(x: str) -> str:
            calls["n"] += 1
            if calls["n"] < 3:
                raise ConnectionError(f"attempt {calls['n']} failed")
            return x

        tracer = TrajdebugTracer()
        RunnableLambda(flaky).with_retry(stop_after_attempt=3, wait_exponential_jitter=False).invoke(
            "x", config={"callbacks": [tracer]}
        )
        run = tracer.to_run()
        attempts = [
            s for s in run.steps if s.name == "flaky" and s.parent_id is not None
        ]  # under the RunnableRetry
        assert [s.attempt for s in attempts] == [1, 2, 3]
        assert [s.retry_of for s in attempts] == [None, attempts[0].step_id, attempts[1].step_id]
        assert [[c.stage for c in e.stages] for e in run.errors] == [["occurred", "recovered"]] * 2
        assert [e.stages[1].step_id for e in run.errors] == [attempts[1].step_id, attempts[2].step_id]
        assert run.outcome == "success"

    def test_on_retry_events_inside_an_llm_call(self) -> None:
        """Failed attempts an LLM retries internally (reported through on_retry) are errors recovered by the retry."""
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt, wait_none

        class FlakyLLM(FakeListLLM):
            failures: int = 2

            def _call(self, prompt: str, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
                def attempt() -> str:
                    if self.failures:
                        self.failures -= 1
                        raise TimeoutError("provider timed out")
                    return super(FlakyLLM, self)._call(prompt, stop, run_manager, **kwargs)

                retrying = Retrying(
                    stop=stop_after_attempt(3),
                    wait=wait_none(),
                    retry=retry_if_exception_type(TimeoutError),
                    before_sleep=run_manager.on_retry if run_manager else None,
                    reraise=True,
                )
                return retrying(attempt)

        tracer = TrajdebugTracer()
        assert FlakyLLM(responses=["ok"]).invoke("hi", config={"callbacks": [tracer]}) == "ok"
        run = tracer.to_run()
        [step] = run.steps
        assert step.kind == "llm"
        assert step.status == "ok"
        assert step.attributes["retries"] == 2
        assert [(e.type, e.attempt, e.stage) for e in run.errors] == [
            ("TimeoutError", 1, "recovered"),
            ("TimeoutError", 2, "recovered"),
        ]


class TestRetrievers:
    """Retrievers are retrieval steps whose documents feed what reads them."""

    def test_retriever_step_and_documents(self) -> None:
        """A retriever in a chain is a retrieval step with its documents as output, feeding the next step."""
        from langchain_core.documents import Document
        from langchain_core.retrievers import BaseRetriever

        class KeywordRetriever(BaseRetriever):
            docs: list[str]

            def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
                words = set(query.lower().split())
                return [Document(page_content=d) for d in self.docs if words & set(d.lower().split())]

        retriever = KeywordRetriever(docs=["Refunds take 5 days.", "Shipping is free over $50."])
        tracer = TrajdebugTracer()

        def first_text(docs: list[Document]) -> str:
            return docs[0].page_content

        chain = retriever | RunnableLambda(first_text)
        answer = chain.invoke("is shipping free", config={"callbacks": [tracer]})
        run = tracer.to_run()
        step = next(s for s in run.steps if s.kind == "retrieval")
        assert step.input == {"query": "is shipping free"}
        assert [d["page_content"] for d in step.output] == [answer]
        reader = next(s for s in run.steps if s.name == "first_text")
        assert any(d.step_id == step.step_id and d.origin == "declared" for d in reader.deps)


class TestJoinsTheActiveRun:
    def test_chain_inside_a_trajdebug_run_joins_it(self) -> None:
        """With no store or path, a chain traced inside `trajdebug.run` adds its steps to that run."""
        import trajdebug
        from trajdebug.record import MemorySink

        tracer = TrajdebugTracer()
        model = FakeMessagesListChatModel(responses=[AIMessage(content="Paris")])
        chain = (
            ChatPromptTemplate.from_messages([("human", "Capital of {country}?")]) | model | StrOutputParser()
        )
        with (
            trajdebug.run("agent", sinks=[MemorySink()]) as h,
            trajdebug.step("answer", kind="agent") as outer,
        ):
            outer.output = chain.invoke({"country": "France"}, config={"callbacks": [tracer]})
        run = h.load()
        answer = _by_name(run, "answer")
        seq = _by_name(run, "RunnableSequence")
        assert answer.step_id == seq.parent_id
        assert "llm" == _by_name(run, "FakeMessagesListChatModel").kind
        assert "Paris" == answer.output


@tool
def find_user(name: str) -> str:
    """Find a user's id by name."""
    if name == "nobody":
        raise LookupError(f"no user named {name}")
    return f"u-{len(name)}{name}"


def react_graph(model: Any) -> Any:
    """A LangGraph ReAct loop as its docs build it: a model node, a ToolNode, tools_condition."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools([find_user])

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode([find_user], handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


def _chat_openai(server: Any) -> Any:
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(model="gpt-4o", base_url=server.base_url, api_key="test", max_retries=0)  # type: ignore[arg-type]


def _lookup_then_answer(request: Any) -> Any:
    """Call find_user for the last word of the question; answer with the tool's result (or its error)."""
    from trajdebug.testing import Reply, tool_call

    msgs = request.body["messages"]
    if msgs[-1]["role"] == "tool":
        return f"Result: {msgs[-1]['content']}"
    return Reply(tool_calls=(tool_call("find_user", {"name": msgs[-1]["content"].split()[-1].strip("?")}),))


class TestLangGraph:
    """A LangGraph ReAct graph with langchain-openai's ChatOpenAI, on the fake model server (127.0.0.1)."""

    def test_tool_node_error_sent_to_the_model_is_recovered(self) -> None:
        """ToolNode(handle_tool_errors=True) turns the tool's exception into the tool result: recovered where the model read it."""
        from trajdebug.testing import FakeModelServer

        tracer = TrajdebugTracer()
        with FakeModelServer(_lookup_then_answer) as server:
            out = react_graph(_chat_openai(server)).invoke(
                {"messages": [("user", "who is nobody?")]}, config={"callbacks": [tracer]}
            )
        assert "no user named nobody" in out["messages"][-1].content
        run = tracer.to_run()
        tool = next(s for s in run.steps if s.kind == "tool")
        second = [s for s in run.steps if s.kind == "llm"][1]
        [err] = run.errors
        assert (err.step_id, err.type) == (tool.step_id, "LookupError")
        assert [(c.stage, c.step_id) for c in err.stages] == [
            ("occurred", tool.step_id),
            ("recovered", second.step_id),
        ]
        assert run.outcome == "success"

    def test_clean_run_is_a_success_with_chat_content(self) -> None:
        """A clean ReAct run: model steps are messages in and a message out, the envelope in llm.* attributes; no failure."""
        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        tracer = TrajdebugTracer()
        with FakeModelServer(_lookup_then_answer) as server:
            react_graph(_chat_openai(server)).invoke(
                {"messages": [("user", "who is ana?")]}, config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        first, second = (s for s in run.steps if s.kind == "llm")
        tool = next(s for s in run.steps if s.kind == "tool")
        assert first.input == {"messages": [{"role": "user", "content": "who is ana?"}]}
        [call] = first.output["tool_calls"]
        assert call["arguments"] == {"name": "ana"}
        assert second.input["messages"][-1] == {
            "role": "tool",
            "content": "u-3ana",
            "tool_call_id": call["id"],
            "name": "find_user",
        }
        assert second.output == {"role": "assistant", "content": "Result: u-3ana", "tool_calls": []}
        assert first.attributes["llm.model"] == "gpt-4o"
        assert first.attributes["llm.tools"] == ["find_user"]
        assert first.attributes["llm.response_id"].startswith("chatcmpl-")
        assert first.attributes["llm.usage.total_tokens"] > 0
        assert first.attributes["llm.finish_reason"] == "tool_calls"
        assert any(d.step_id == first.step_id and d.origin == "declared" for d in tool.deps)
        assert any(d.step_id == tool.step_id and d.origin == "declared" for d in second.deps)
        assert not any(d.origin == "inferred" for s in run.steps for d in s.deps)
        analysis = analyze(run)
        assert (analysis.outcome, analysis.failures) == ("success", ())

    def test_a_prebuilt_agents_node_function_depends_on_the_model_call_it_made(self) -> None:
        """create_react_agent's call_model reports the model's runs as its siblings: the model call that ran
        inside its span is its declared producer, the prompt beside it is not."""
        import warnings

        from langgraph.prebuilt import create_react_agent

        from trajdebug.testing import FakeModelServer

        tracer = TrajdebugTracer()
        with FakeModelServer(_lookup_then_answer) as server, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            create_react_agent(_chat_openai(server), [find_user]).invoke(
                {"messages": [("user", "who is ana?")]}, config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        by_id = {s.step_id: s for s in run.steps}
        wrappers = [s for s in run.steps if s.name == "call_model"]
        assert len(wrappers) == 2
        for w in wrappers:
            assert [by_id[d.step_id].kind for d in w.deps] == ["llm"]
            assert by_id[w.deps[0].step_id].output["content"] == w.output["messages"][0]["content"]

    def test_ten_clean_runs_report_no_failure(self) -> None:
        """Ten clean runs on different questions: every one analyzes as a success with no failure."""
        from trajdebug.analysis import analyze
        from trajdebug.testing import FakeModelServer

        tracer = TrajdebugTracer()
        names = ["ana", "bo", "carla", "dmitri", "eve", "farid", "gus", "hana", "ivo", "jun"]
        with FakeModelServer(_lookup_then_answer) as server:
            graph = react_graph(_chat_openai(server))
            for name in names:
                graph.invoke({"messages": [("user", f"who is {name}?")]}, config={"callbacks": [tracer]})
        reports = [analyze(r) for r in tracer.runs]
        assert [(a.outcome, a.failures) for a in reports] == [("success", ())] * 10



@tool
def find_aged_user(name: str, age: int) -> str:
    """Find a user's id by name and age."""
    return f"u-{name}-{age}"


def _tool_graph(model: Any, tools: list[Any], *, handle: bool) -> Any:
    """A ReAct loop whose ToolNode sends a tool's error to the model (``handle``) or raises it."""
    from langgraph.graph import END, START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    bound = model.bind_tools(tools)

    def call_model(state: MessagesState) -> dict[str, Any]:
        return {"messages": [bound.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", call_model)
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=handle))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition, {"tools": "tools", END: END})
    graph.add_edge("tools", "agent")
    return graph.compile()


class TestEveryWayAGraphRaises:
    """Each way ``graph.invoke`` raises is a failed run with a reason; an error sent to the model is not."""

    @pytest.mark.parametrize(
        ("case", "raised"),
        [
            ("tool raises", LookupError),
            ("invalid arguments", Exception),
            ("recursion limit", Exception),
            ("http 400", Exception),
            ("timeout", TimeoutError),
        ],
    )
    def test_a_raised_invoke_is_a_failed_run(self, case: str, raised: type[BaseException]) -> None:
        """A tool error the ToolNode raises, arguments the tool's schema rejects, the recursion limit, a model
        API error, a timeout (``asyncio.wait_for``): the run fails, with a reason even when the exception has
        no message."""
        import asyncio

        from trajdebug.testing import FakeModelServer, Reply, tool_call

        tracer = TrajdebugTracer()
        tools: list[Any] = [find_user]
        config: dict[str, Any] = {"callbacks": [tracer]}
        call = Reply(tool_calls=(tool_call("find_user", {"name": "ana"}),))
        script: list[Any] = [call, "done"]
        if case == "tool raises":
            script = [Reply(tool_calls=(tool_call("find_user", {"name": "nobody"}),)), "done"]
        elif case == "invalid arguments":
            tools = [find_aged_user]
            script = [Reply(tool_calls=(tool_call("find_aged_user", {"name": "ana", "age": "old"}),)), "done"]
        elif case == "recursion limit":
            script, config["recursion_limit"] = [call] * 5, 3
        elif case == "http 400":
            script = [Reply(status=400, error="context too long")]
        else:
            script = [Reply(text="late", delay=2.0)]

        async def timed(graph: Any) -> Any:
            return await asyncio.wait_for(graph.ainvoke({"messages": [("user", "who is ana?")]}, config), 0.5)

        def go(server: Any) -> Any:
            graph = _tool_graph(_chat_openai(server), tools, handle=False)
            if case == "timeout":
                return asyncio.run(timed(graph))
            return graph.invoke({"messages": [("user", "who is ana?")]}, config)

        with FakeModelServer(script) as server, pytest.raises(raised):
            go(server)
        run = tracer.to_run()
        assert run.outcome == "failure"
        assert run.failure_reason
        assert any(e.stage == "failed" for e in run.errors)

    def test_invalid_arguments_sent_to_the_model_leave_the_run_a_success(self) -> None:
        """ToolNode(handle_tool_errors=True) sends the validation error to the model, which answers: a success."""
        from trajdebug.testing import FakeModelServer, Reply, tool_call

        tracer = TrajdebugTracer()
        script = [Reply(tool_calls=(tool_call("find_aged_user", {"name": "ana", "age": "old"}),)), "Could not."]
        with FakeModelServer(script) as server:
            _tool_graph(_chat_openai(server), [find_aged_user], handle=True).invoke(
                {"messages": [("user", "who is ana?")]}, {"callbacks": [tracer]}
            )
        run = tracer.to_run()
        [err] = run.errors
        assert (run.outcome, err.stage) == ("success", "recovered")

class TestNamingRuns:
    """A fleet tells its agents apart: the tracer names runs and records their task."""

    def test_name_and_task_given_to_the_tracer_are_the_runs(self, tmp_path: Path) -> None:
        """TrajdebugTracer(store=PATH, name=, task=) saves the run under that name with that task."""
        from trajdebug.store import Store

        db = tmp_path / "meeting.db"
        chain = RunnableLambda(lambda x: x * 2) | RunnableLambda(lambda x: x + 1)
        tracer = TrajdebugTracer(store=str(db), name="meeting-scheduler", task="book the Q2 review")
        assert chain.invoke(3, config={"callbacks": [tracer]}) == 7
        with Store(db) as st:
            [saved] = [st.load_run(s.run_id) for s in st.list_runs()]
        assert (saved.name, saved.metadata["task"]) == ("meeting-scheduler", "book the Q2 review")

    def test_without_a_name_the_call_config_names_the_run_and_gives_its_task(self) -> None:
        """Without name=/task=, config run_name names the run and config metadata's task is its task."""
        tracer = TrajdebugTracer()
        chain = RunnableLambda(lambda x: x * 2) | RunnableLambda(lambda x: x + 1)
        chain.invoke(3, config={"callbacks": [tracer], "run_name": "doubler", "metadata": {"task": "double 3"}})
        chain.invoke(4, config={"callbacks": [tracer]})
        first, second = tracer.runs
        assert (first.name, first.metadata["task"]) == ("doubler", "double 3")
        assert second.name == "RunnableSequence" and "task" not in second.metadata

    def test_one_tracer_reused_records_each_calls_task_and_its_own_task_wins(self) -> None:
        """A tracer made once without task= records each call's task from its config metadata, as
        docs/recording.md tells a tracer serving many requests to; a tracer's task= is every run's, the call's
        aside (nu63: one tracer made with task= for many requests)."""
        chain = RunnableLambda(lambda x: x * 2)
        shared = TrajdebugTracer(name="desk")
        fixed = TrajdebugTracer(name="desk", task="the first request")
        for n in (3, 4):
            chain.invoke(n, config={"callbacks": [shared, fixed], "metadata": {"task": f"double {n}"}})
        assert [r.metadata["task"] for r in shared.runs] == ["double 3", "double 4"]
        assert [r.metadata["task"] for r in fixed.runs] == ["the first request"] * 2

    def test_run_ids_of_back_to_back_calls_share_no_long_prefix(self) -> None:
        """LangChain's run ids are time-ordered; the runs' ids are random, so an 8-digit prefix names one run."""
        tracer = TrajdebugTracer()
        chain = RunnableLambda(lambda x: x + 1)
        for i in range(20):
            chain.invoke(i, config={"callbacks": [tracer]})
        ids = [r.run_id for r in tracer.runs]
        lc_ids = [r.metadata["langchain_run_id"].replace("-", "") for r in tracer.runs]
        assert len({i[:8] for i in ids}) == 20
        assert len({i[:6] for i in lc_ids}) < 20  # what the ids would have shared (UUID v7: time first)


class TestLangChainUsage:
    def test_token_counts_of_chat_openai_match_the_server(self) -> None:
        """ChatOpenAI's usage (llm_output / usage_metadata) becomes each LLM step's tokens, equal to the server's."""
        from trajdebug.testing import FakeModelServer
        from trajdebug.usage import run_usage

        tracer = TrajdebugTracer()
        with FakeModelServer(["short", "a somewhat longer answer"]) as server:
            model = _chat_openai(server)
            replies: list[Any] = []
            both = RunnableLambda(lambda qs: [replies.append(model.invoke(q)) for q in qs])
            both.invoke(["hi?", "and then what?"], config={"callbacks": [tracer]})
        u = run_usage(tracer.to_run())
        assert u.calls == 2
        assert u.prompt_tokens == sum(r.usage_metadata["input_tokens"] for r in replies)
        assert u.completion_tokens == sum(r.usage_metadata["output_tokens"] for r in replies)
        assert u.models and u.models[0].startswith("gpt-4o") and u.cost is not None


class TestLangGraphThread:
    def test_thread_id_of_the_config_is_the_run_session(self) -> None:
        """A LangGraph call with configurable thread_id is recorded as a run of that session."""
        from trajdebug.sessions import session_of
        from trajdebug.testing import FakeModelServer

        tracer = TrajdebugTracer()
        with FakeModelServer(_lookup_then_answer) as server:
            react_graph(_chat_openai(server)).invoke(
                {"messages": [("user", "who is ana?")]},
                config={"callbacks": [tracer], "configurable": {"thread_id": "thread-7"}},
            )
        assert session_of(tracer.to_run()) == "thread-7"


def _support_state() -> Any:
    """A LangGraph state: messages (appended), a customer and notes (built at run time: the
    annotations must resolve in this module)."""
    from typing import Annotated, TypedDict

    from langchain_core.messages import AnyMessage
    from langgraph.graph.message import add_messages

    return TypedDict(
        "State", {"messages": Annotated[list[AnyMessage], add_messages], "customer": str, "notes": str}
    )


class TestLangGraphNodes:
    def test_a_node_input_is_the_state_keys_its_model_read_and_its_output_the_update(self) -> None:
        """A node whose model call reads the messages records only `messages` as its input (the rest of the
        state listed in attributes), and the update it returned as its output."""
        from langgraph.graph import END, START, StateGraph

        from trajdebug.testing import FakeModelServer

        State = _support_state()
        with FakeModelServer(["hello ana"]) as server:
            model = _chat_openai(server)

            def answer(state: State) -> dict[str, Any]:
                return {"messages": [model.invoke(state["messages"])]}

            def note(state: State) -> dict[str, Any]:
                return {"notes": "done"}

            graph = StateGraph(State)
            graph.add_node("answer", answer)
            graph.add_node("note", note)
            graph.add_edge(START, "answer")
            graph.add_edge("answer", "note")
            graph.add_edge("note", END)
            tracer = TrajdebugTracer()
            graph.compile().invoke(
                {"messages": [("user", "hi")], "customer": "ana", "notes": ""}, config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        node = next(s for s in run.steps if s.name == "answer")
        assert list(node.input) == ["messages"]
        assert node.attributes["state_reads"] == ["messages"]
        assert node.attributes["langgraph.state_keys"] == ["customer", "messages", "notes"]
        assert list(node.output) == ["messages"]
        plain_node = next(s for s in run.steps if s.name == "note")
        assert set(plain_node.input) == {"messages", "customer", "notes"}  # reads unknown: the whole state
        assert plain_node.output == {"notes": "done"}

    def test_a_node_that_hands_its_tool_a_number_it_computed_keeps_the_whole_state_as_input(self) -> None:
        """A node that works a total out of two state keys and hands it to a tool records every state key as
        its input: the tool received `cap` whole, but the total came from `levels` and `demand`, which no
        sub-step received (recorded as `cap` alone, the node hid where the total came from)."""
        from typing import TypedDict

        from langgraph.graph import END, START, StateGraph

        class State(TypedDict):
            levels: dict[str, int]
            demand: dict[str, int]
            cap: float

        @tool
        def hold_budget(amount: float, cap: float) -> dict[str, Any]:
            """Reserve a budget."""
            return {"held": amount <= cap}

        def reserve(state: State) -> dict[str, Any]:
            amount = sum(state["demand"][k] - state["levels"][k] for k in state["levels"]) * 2.5
            hold_budget.invoke({"amount": amount, "cap": state["cap"]})
            return {}

        graph = StateGraph(State)
        graph.add_node("reserve", reserve)
        graph.add_edge(START, "reserve")
        graph.add_edge("reserve", END)
        tracer = TrajdebugTracer()
        graph.compile().invoke(
            {"levels": {"A": 75, "B": 40}, "demand": {"A": 260, "B": 220}, "cap": 900.0},
            config={"callbacks": [tracer]},
        )
        node = next(s for s in tracer.to_run().steps if s.name == "reserve")
        assert set(node.input) == {"levels", "demand", "cap"}


def _chain_graph(state_type: Any, *nodes: Any) -> Any:
    """A compiled graph running these node functions one after the other."""
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(state_type)
    names = [START, *(n.__name__ for n in nodes), END]
    for n in nodes:
        graph.add_node(n.__name__, n)
    for a, b in itertools.pairwise(names):
        graph.add_edge(a, b)
    return graph.compile()


class TestLangGraphStateEdges:
    """A node's model and tool calls are linked to the step that wrote the state they were handed."""

    def test_a_tool_handed_fields_of_a_record_depends_on_the_node_that_wrote_the_record(self) -> None:
        """A node that takes a record apart and hands two of its fields to a tool: the tool call has a declared
        state edge (keyed by the record's key) to the node that wrote the record, and the node's recorded input
        is not widened by it."""
        from typing import TypedDict

        class State(TypedDict, total=False):
            hive: str
            survey: dict[str, Any]
            label: str

        @tool
        def book_inspector(apiary: str, frames: int) -> str:
            """Book an inspector visit."""
            return f"booked {apiary} for {frames} frames"

        def survey(state: State) -> dict[str, Any]:
            return {"survey": {"apiary": "north-meadow", "frames": 18, "queen": "marked"}}

        def book(state: State) -> dict[str, Any]:
            s = state["survey"]
            return {"label": book_inspector.invoke({"apiary": s["apiary"], "frames": s["frames"]})}

        tracer = TrajdebugTracer()
        _chain_graph(State, survey, book).invoke({"hive": "H-7"}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        writer, node, call = (_by_name(run, n) for n in ("survey", "book", "book_inspector"))
        assert [(d.step_id, d.kind, d.origin, d.key) for d in call.deps if d.kind == "state"] == [
            (writer.step_id, "state", "declared", "survey")
        ]
        assert any(d.step_id == writer.step_id and d.kind == "state" for d in node.deps)
        assert "state_reads" not in node.attributes  # handed no value whole: the whole state, as before
        assert set(node.input) == {"hive", "survey"}

    def test_a_state_text_of_a_thousand_open_brackets_costs_no_run(self) -> None:
        """A model stuck repeating '[' writes text JSON cannot read without recursing past Python's limit: the
        run is still recorded, with its state edges."""
        from typing import TypedDict

        class State(TypedDict, total=False):
            hive: str
            survey: dict[str, Any]
            label: str

        @tool
        def book_inspector(apiary: str, frames: int) -> str:
            """Book an inspector visit."""
            return f"booked {apiary} for {frames} frames"

        def survey(state: State) -> dict[str, Any]:
            return {"survey": {"apiary": "north-meadow", "frames": 18, "notes": "[" * 3000}}

        def book(state: State) -> dict[str, Any]:
            s = state["survey"]
            return {"label": book_inspector.invoke({"apiary": s["apiary"], "frames": s["frames"]})}

        tracer = TrajdebugTracer()
        _chain_graph(State, survey, book).invoke({"hive": "H-7"}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        writer, call = _by_name(run, "survey"), _by_name(run, "book_inspector")
        assert [d.key for d in call.deps if d.kind == "state" and d.step_id == writer.step_id] == ["survey"]
        assert "state_edge_failures" not in run.metadata

    def test_a_long_list_is_read_at_its_newest_items(self) -> None:
        """A key holding a list past the reading's bound is read at its end, where a conversation grows: an item
        appended last still names the key."""
        from trajdebug.integrations._langchain_read import keys_read

        state = {"log": [f"entry-{i:04d}" for i in range(500)], "other": "x-1"}
        assert keys_read(state, {"q": "entry-0499"}) == ["log"]

    def test_a_state_text_written_into_prompt_prose_is_no_read(self) -> None:
        """A state text an f-string wrote into a prompt among other words is not read as its key (the prompt is
        one text, and a match inside prose would also match the prompt's own wording); the same text handed as
        a message of its own, or inside a JSON payload, is."""
        from trajdebug.integrations._langchain_read import keys_read

        state = {"forecast": "gale warning for the outer harbour", "berth": "Quay Seven"}
        prose = {"messages": [{"role": "user", "content": "Forecast: gale warning for the outer harbour. Go?"}]}
        assert keys_read(state, prose) == []
        alone = {"messages": [{"role": "user", "content": "gale warning for the outer harbour"}]}
        assert keys_read(state, alone) == ["forecast"]
        assert keys_read(state, {"prompt": 'Plan: {"berth": "Quay Seven"}'}) == ["berth"]

    def test_a_value_that_two_state_keys_hold_names_neither(self) -> None:
        """A tool handed a boat's name and a date that both the booking and the forecast record carry reads the
        booking (its name is the booking's alone) and not the forecast: the date names neither key."""
        from typing import TypedDict

        class State(TypedDict, total=False):
            booking: dict[str, Any]
            forecast: dict[str, Any]
            note: str

        @tool
        def check_tide(boat: str, day: str) -> str:
            """Tide table for a boat's day out."""
            return f"low tide at 06:10 on {day} for {boat}"

        def plan(state: State) -> dict[str, Any]:
            return {"booking": {"boat": "Skerry Wren", "day": "2031-07-19"}}

        def weather(state: State) -> dict[str, Any]:
            return {"forecast": {"day": "2031-07-19", "wind": "force four"}}

        def tides(state: State) -> dict[str, Any]:
            b = state["booking"]
            return {"note": check_tide.invoke({"boat": b["boat"], "day": b["day"]})}

        tracer = TrajdebugTracer()
        _chain_graph(State, plan, weather, tides).invoke({}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        call = _by_name(run, "check_tide")
        assert [(d.step_id, d.key) for d in call.deps if d.kind == "state"] == [(_by_name(run, "plan").step_id, "booking")]

    def test_a_state_edge_points_at_the_model_call_whose_answer_the_writer_parsed(self) -> None:
        """A node that parses its model's JSON answer and writes the result: the reader's state edge goes to the
        model call inside the writer (the value was made by the model), not to the writer's code."""
        import json
        from typing import TypedDict

        from langchain_core.messages import HumanMessage

        from trajdebug.testing import FakeModelServer

        class State(TypedDict, total=False):
            request: str
            rota: list[dict[str, Any]]
            posted: str

        @tool
        def post_rota(keeper: str, enclosure: str) -> str:
            """Post one keeper's shift."""
            return f"posted {keeper} at {enclosure}"

        answer = json.dumps([{"keeper": "Oduya", "enclosure": "otter-pool"}])
        with FakeModelServer([answer]) as server:
            model = _chat_openai(server)

            def draft(state: State) -> dict[str, Any]:
                reply = model.invoke([HumanMessage(state["request"])])
                return {"rota": json.loads(str(reply.content))}

            def post(state: State) -> dict[str, Any]:
                first = state["rota"][0]
                return {"posted": post_rota.invoke({"keeper": first["keeper"], "enclosure": first["enclosure"]})}

            tracer = TrajdebugTracer()
            _chain_graph(State, draft, post).invoke(
                {"request": "rota for the otter keepers"}, config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        llm, call = next(s for s in run.steps if s.kind == "llm"), _by_name(run, "post_rota")
        assert [(d.step_id, d.key) for d in call.deps if d.kind == "state"] == [(llm.step_id, "rota")]

    def test_a_model_given_a_state_value_as_json_depends_on_the_latest_node_that_added_to_it(self) -> None:
        """A model handed an accumulated list serialized as JSON inside its prompt reads that key, and its state
        edge goes to the latest node whose additions the list holds, not to the graph's input."""
        import json
        import operator
        from typing import Annotated, TypedDict

        from langchain_core.messages import HumanMessage
        from langgraph.graph import END, START, StateGraph

        from trajdebug.testing import FakeModelServer

        # The functional form: the reducer is read at run time, not from this module's (postponed) names.
        State = TypedDict(  # noqa: UP013
            "State", {"readings": Annotated[list[dict[str, Any]], operator.add], "summary": str}, total=False
        )

        def gauge_a(state: State) -> dict[str, Any]:
            return {"readings": [{"gauge": "weir-1", "level_cm": 42}]}

        def gauge_b(state: State) -> dict[str, Any]:
            return {"readings": [{"gauge": "weir-2", "level_cm": 57}]}

        with FakeModelServer(["levels normal"]) as server:
            model = _chat_openai(server)

            def summarize(state: State) -> dict[str, Any]:
                reply = model.invoke([HumanMessage("Summarize these: " + json.dumps(state["readings"]))])
                return {"summary": str(reply.content)}

            graph = StateGraph(State)
            for name, fn in (("gauge_a", gauge_a), ("gauge_b", gauge_b), ("summarize", summarize)):
                graph.add_node(name, fn)
            graph.add_edge(START, "gauge_a")
            graph.add_edge("gauge_a", "gauge_b")
            graph.add_edge("gauge_b", "summarize")
            graph.add_edge("summarize", END)
            tracer = TrajdebugTracer()
            graph.compile().invoke({"readings": []}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        latest, llm = _by_name(run, "gauge_b"), next(s for s in run.steps if s.kind == "llm")
        assert [(d.step_id, d.key) for d in llm.deps if d.kind == "state"] == [(latest.step_id, "readings")]

    def test_a_model_reading_the_conversation_depends_on_the_model_call_whose_message_a_node_added(self) -> None:
        """A node that adds its model's reply to the conversation: the next node's model call, handed the
        conversation, has its state edge (key `messages`) to the model call that wrote the reply, not to the
        node that relayed it."""
        from langgraph.graph import MessagesState

        from trajdebug.testing import FakeModelServer

        with FakeModelServer(["Moor the barge at berth 4.", "Berth 4 confirmed."]) as server:
            model = _chat_openai(server)

            def pilot(state: MessagesState) -> dict[str, Any]:
                return {"messages": [model.invoke(state["messages"])]}

            def harbourmaster(state: MessagesState) -> dict[str, Any]:
                return {"messages": [model.invoke(state["messages"])]}

            tracer = TrajdebugTracer()
            _chain_graph(MessagesState, pilot, harbourmaster).invoke(
                {"messages": [("user", "where does the grain barge moor?")]}, config={"callbacks": [tracer]}
            )
        run = tracer.to_run()
        first, second = (s for s in run.steps if s.kind == "llm")
        assert [(d.step_id, d.key) for d in second.deps if d.kind == "state"] == [(first.step_id, "messages")]


class TestGraphNodeKinds:
    """A LangGraph node is a container only when it did work inside: its routing function is no such work."""

    def test_a_node_whose_only_child_is_its_conditional_edge_is_a_plain_step(self) -> None:
        """A node followed by a conditional edge records its routing function as a step of its own, and the node
        stays kind `other`: the edge runs after the node's function, not inside it."""
        from typing import TypedDict

        from langgraph.graph import END, StateGraph

        class Hive(TypedDict):
            frames: int
            verdict: str

        def count_frames(state: dict[str, Any]) -> dict[str, Any]:
            return {"frames": state["frames"] + 2}

        def route(state: dict[str, Any]) -> str:
            return "split" if state["frames"] > 8 else "keep"

        graph = StateGraph(Hive)
        graph.add_node("count_frames", count_frames)
        graph.add_node("split", lambda s: {"verdict": "split the colony"})
        graph.add_node("keep", lambda s: {"verdict": "keep as is"})
        graph.set_entry_point("count_frames")
        graph.add_conditional_edges("count_frames", route, {"split": "split", "keep": "keep"})
        graph.add_edge("split", END)
        graph.add_edge("keep", END)
        tracer = TrajdebugTracer()
        graph.compile().invoke({"frames": 7, "verdict": ""}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        node, edge = _by_name(run, "count_frames"), _by_name(run, "route")
        assert node.kind == "other"
        assert edge.parent_id == node.step_id and edge.output == "split"
        assert _by_name(run, "split").kind == "other"

    def test_a_node_that_runs_a_runnable_inside_is_still_a_container(self) -> None:
        """A node whose own function invokes another runnable (traced as its child) stays kind `agent`, with or
        without a conditional edge after it."""
        from typing import TypedDict

        from langgraph.graph import END, StateGraph

        class Loom(TypedDict):
            picks: int
            note: str

        double = RunnableLambda(lambda v: v * 2).with_config(run_name="double_picks")

        def weave(state: Loom, config: RunnableConfig) -> dict[str, Any]:
            return {"picks": double.invoke(state["picks"], config=config)}

        graph = StateGraph(Loom)
        graph.add_node("weave", weave)
        graph.add_node("finish", lambda s: {"note": "done"})
        graph.set_entry_point("weave")
        graph.add_conditional_edges("weave", lambda s: "finish", {"finish": "finish"})
        graph.add_edge("finish", END)
        tracer = TrajdebugTracer()
        graph.compile().invoke({"picks": 3, "note": ""}, config={"callbacks": [tracer]})
        run = tracer.to_run()
        node = _by_name(run, "weave")
        assert node.kind == "agent"
        assert _by_name(run, "double_picks").parent_id == node.step_id
