"""LangGraph route helpers: ChatOpenAI on the fake server, recorded with trajdebug's LangChain tracer."""
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_openai import ChatOpenAI

from common import loose_json, prompt

_LLM = {}


def llm(server):
    if server.base_url not in _LLM:
        _LLM.clear()
        _LLM[server.base_url] = ChatOpenAI(base_url=server.base_url, api_key="not-needed", model=server.model,
                                           max_retries=0, temperature=0)
    return _LLM[server.base_url]


def ask(server, system, task, text, payload, extra=()):
    msgs = [SystemMessage(system), *extra, HumanMessage(prompt(task, text, payload))]
    return llm(server).invoke(msgs).content


def ask_json(server, system, task, text, payload, extra=()):
    return loose_json(ask(server, system, task, text, payload, extra))
