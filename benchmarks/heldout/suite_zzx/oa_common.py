"""OpenAI Agents SDK route helpers: a Responses-API brain and a recorded Runner.run."""
import ast
import asyncio
import json

from trajdebug.testing import Reply, tool_call


def _value(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            return json.loads(text)
        except ValueError:
            return text


def responses_brain(policies):
    """policies: {agent instructions' first word: policy(user_text, history) -> ("call", name, args) | text}."""

    def policy(request):
        body = request.body
        key = (body.get("instructions") or "").split()[0]
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        user, calls, outs = None, {}, {}
        order = []
        for it in items:
            if not isinstance(it, dict):
                continue
            if it.get("type") == "function_call":
                calls[it["call_id"]] = (it["name"], json.loads(it["arguments"] or "{}"))
                order.append(it["call_id"])
            elif it.get("type") == "function_call_output":
                outs[it["call_id"]] = _value(it["output"])
            elif it.get("role") == "user" and user is None:
                c = it["content"]
                user = c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
        history = [(calls[c][0], calls[c][1], outs.get(c)) for c in order]
        act = policies[key](user, history)
        if isinstance(act, tuple):
            return Reply(tool_calls=(tool_call(act[1], act[2]),))
        return act

    return policy


def run_agent(server, agent, text, workflow, path, task):
    from agents import RunConfig, Runner, set_default_openai_api, set_default_openai_client
    from agents.tracing import set_trace_processors
    from openai import AsyncOpenAI

    from trajdebug.integrations.openai_agents import TrajdebugProcessor

    async def main():
        client = AsyncOpenAI(base_url=server.base_url, api_key="not-needed", max_retries=0)
        set_default_openai_client(client)
        try:
            return await Runner.run(agent, text, max_turns=40, run_config=RunConfig(workflow_name=workflow))
        finally:
            await client.close()

    set_default_openai_api("responses")
    set_trace_processors([TrajdebugProcessor(path=path, name=workflow, task=task)])
    try:
        return asyncio.run(main())
    finally:
        set_trace_processors([])
