"""Native capture from agent frameworks, each a converter from the framework's own trace objects.

- `trajdebug.integrations.langchain`: ``TrajdebugTracer``, a LangChain ``BaseTracer``
  (chains, LLMs, tools, retrievers, retries, LangGraph control flow).
- `trajdebug.integrations.openai_agents`: ``TrajdebugProcessor``, an OpenAI Agents SDK
  ``TracingProcessor``.

The modules import their framework at import time, so import the one you use;
this package itself imports nothing.
"""
