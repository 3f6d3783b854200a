"""The LangChain and pydantic-ai integrations on one 30-turn agent task, with and without.

`python -m benchmarks.integrations_langchain_pydantic` runs the task through a real
`create_agent` agent and a real pydantic-ai `Agent`, each against a scripted model that
plays a provider: it counts every request it gets (the engine's tiktoken count times
`factor`, as a provider counting differently would) and rejects it when it breaks the
OpenAI chat rules (`context_graph.validate`) or exceeds the budget. The task reads one
~5,000-token build log per turn for 30 turns under a 16,000-token budget. It prints, per
framework and mode: requests, requests rejected, tokens sent (all and the largest), and
the lines of user code the docs page adds for the integration.
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import RequestUsage

from context_graph.graph.context_graph import ContextGraph
from context_graph.render import Renderer, count_payload
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate
from orchestrator.integrations.langchain import ContextMiddleware
from orchestrator.integrations.pydantic_ai import ContextHistory
from orchestrator.integrations.pydantic_ai_messages import to_events

__all__ = ["Provider", "Row", "main", "run", "user_lines"]

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 16_000
TURNS = 30


def _log(n: int) -> str:
    return "\n".join(f"[{n}:{i:04d}] cc -c src/module_{i}.c -o build/m{i}.o ok" for i in range(300))


@dataclass
class Provider:
    """Counts and checks each request as a provider would; answers from the script."""

    factor: float = 1.0
    turns: int = TURNS

    def __post_init__(self) -> None:
        self.sizes: list[int] = []
        self.rejected = 0

    def receive(self, payload: dict[str, Any], tokens: int) -> int:
        """Take one request (and its engine count); return the provider's count."""
        size = int(self.factor * tokens)
        self.sizes.append(size)
        if validate(payload, "openai") or size > BUDGET:
            self.rejected += 1
        return size


@dataclass(frozen=True)
class Row:
    """One framework in one mode."""

    framework: str
    mode: str
    requests: int
    rejected: int
    tokens_sent: int
    largest: int
    user_lines: int


class _ScriptedChatModel(BaseChatModel):
    provider: Any
    _tools: list[Any] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> _ScriptedChatModel:
        self._tools = list(tools)
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        wire = [
            {k: v for k, v in m.items() if not (m["role"] == "tool" and k == "name")}
            for m in convert_to_openai_messages(list(messages))
        ]
        payload = {"messages": wire, "tools": [convert_to_openai_tool(t) for t in self._tools]}
        size = self.provider.receive(payload, count_payload(payload, "openai", default_counter()))
        usage = {"input_tokens": size, "output_tokens": 8, "total_tokens": size + 8}
        n = len(self.provider.sizes)
        if n > self.provider.turns:
            return _result(AIMessage("The build fails in module 7.", usage_metadata=usage))
        call = {"id": f"call_{n}", "name": "read_log", "args": {"n": n}}
        return _result(AIMessage(f"Reading log {n}.", tool_calls=[call], usage_metadata=usage))


def _result(message: AIMessage) -> ChatResult:
    return ChatResult(generations=[ChatGeneration(message=message)])


@tool
def read_log(n: int) -> str:
    """Read build log number n."""
    return _log(n)


def _langchain(provider: Provider, integrated: bool) -> None:
    middleware = [ContextMiddleware(budget=BUDGET)] if integrated else []
    agent = create_agent(
        _ScriptedChatModel(provider=provider),
        [read_log],
        system_prompt="You are a build doctor.",
        middleware=middleware,
        checkpointer=InMemorySaver(),
    )
    config: RunnableConfig = {"configurable": {"thread_id": "bench"}, "recursion_limit": 200}
    agent.invoke({"messages": [{"role": "user", "content": "Why does the build fail?"}]}, config)


def _pydantic_ai(provider: Provider, integrated: bool) -> None:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        graph = ContextGraph()
        if info.instructions:
            graph.add_system(info.instructions)
        graph.ingest(to_events(list(enumerate(messages))))
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description or "",
                    "parameters": t.parameters_json_schema,
                },
            }
            for t in info.function_tools
        ]
        result = Renderer(format="openai", tools=tools).render(graph)
        size = provider.receive(result.payload, result.tokens)
        usage = RequestUsage(input_tokens=size, output_tokens=8)
        n = len(provider.sizes)
        if n > provider.turns:
            return ModelResponse(parts=[TextPart("The build fails in module 7.")], usage=usage)
        call = ToolCallPart("read_log", {"n": n}, tool_call_id=f"call_{n}")
        return ModelResponse(parts=[TextPart(f"Reading log {n}."), call], usage=usage)

    capabilities = [ContextHistory(budget=BUDGET).capability()] if integrated else []
    agent = Agent(FunctionModel(answer), instructions="Be brief.", capabilities=capabilities)

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return _log(n)

    # A fresh loop per run, closed after it (`run_sync` leaves its own open).
    asyncio.run(agent.run("Why does the build fail?"))


def user_lines(page: Path, names: Sequence[str]) -> int:
    """Lines of the page's first Python block that name the integration's objects.

    Assertions, comments and the framework's own lines are not counted.
    """
    text = page.read_text(encoding="utf-8")
    block = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    return sum(
        1
        for line in block.splitlines()
        if any(name in line for name in names)
        and not line.lstrip().startswith(("assert", "#"))
        and "def " not in line
    )


def run(factor: float = 1.0) -> list[Row]:
    """Both frameworks, with and without their integration."""
    lines = {
        "langchain": user_lines(
            ROOT / "docs/integrations/langchain.md", ("ContextMiddleware", "[context]")
        ),
        "pydantic-ai": user_lines(
            ROOT / "docs/integrations/pydantic-ai.md", ("ContextHistory", "history.capability")
        ),
    }
    rows = []
    for framework, runner in (("langchain", _langchain), ("pydantic-ai", _pydantic_ai)):
        for integrated in (False, True):
            provider = Provider(factor=factor)
            runner(provider, integrated)
            rows.append(
                Row(
                    framework=framework,
                    mode="with" if integrated else "without",
                    requests=len(provider.sizes),
                    rejected=provider.rejected,
                    tokens_sent=sum(provider.sizes),
                    largest=max(provider.sizes),
                    user_lines=lines[framework] if integrated else 0,
                )
            )
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison as a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--factor", type=float, default=1.0, help="the provider's count / ours")
    args = parser.parse_args(argv)
    print(f"30 turns, ~5,000-token tool outputs, budget {BUDGET:,}, provider factor {args.factor}")
    print("| framework | integration | requests | rejected | tokens sent | largest | user lines |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in run(args.factor):
        print(
            f"| {r.framework} | {r.mode} | {r.requests} | {r.rejected} | {r.tokens_sent:,} "
            f"| {r.largest:,} | {r.user_lines} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
