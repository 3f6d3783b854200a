"""Properties of the LangChain middleware over random conversations on one thread."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_openai_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import PrivateAttr

from context_graph.render import count_payload
from context_graph.tokens.counting import default_counter
from context_graph.validate import validate
from orchestrator.integrations.langchain import ContextMiddleware

BUDGET = 4_000


@tool
def read_file(lines: int) -> str:
    """Read a file of `lines` lines."""
    return "\n".join(f"{lines}:{i:04d} value_{i * 31 % 997} = compute({i})" for i in range(lines))


class _Model(BaseChatModel):
    """Asks for the files of its script in turn, then answers; records each request."""

    script: list[int]
    _requests: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _step: int = PrivateAttr(default=0)
    _tools: list[Any] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "property"

    def bind_tools(self, tools: Any, **kwargs: Any) -> _Model:
        self._tools = [convert_to_openai_tool(t) for t in tools]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        wire = [
            {k: v for k, v in m.items() if not (m["role"] == "tool" and k == "name")}
            for m in convert_to_openai_messages(list(messages))
        ]
        payload = {"messages": wire, "tools": self._tools}  # the provider counts the tools too
        self._requests.append(payload)
        tokens = count_payload(payload, "openai", default_counter())
        usage = {"input_tokens": tokens, "output_tokens": 1, "total_tokens": tokens + 1}
        step, self._step = self._step, self._step + 1
        if step < len(self.script):
            call = {"id": f"call_{step}", "name": "read_file", "args": {"lines": self.script[step]}}
            message = AIMessage("", tool_calls=[call], usage_metadata=usage)
        else:
            self._step = 0
            message = AIMessage("done", usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=message)])


runs = st.lists(st.lists(st.integers(1, 300), max_size=4), min_size=1, max_size=3)


class TestOneThread:
    """Whatever the runs, the record and the requests keep their promises."""

    @settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(runs=runs)
    def test_every_message_once_and_every_request_fits(self, runs: list[list[int]]) -> None:
        """The record holds each state message once; every request is valid and fits."""
        middleware = ContextMiddleware(budget=BUDGET)
        saver = InMemorySaver()
        config: RunnableConfig = {"configurable": {"thread_id": "p"}, "recursion_limit": 100}
        requests: list[dict[str, Any]] = []
        state: dict[str, Any] = {}
        for index, script in enumerate(runs):
            model = _Model(script=script)
            agent = create_agent(model, [read_file], middleware=[middleware], checkpointer=saver)
            state = agent.invoke(
                {"messages": [{"role": "user", "content": f"run {index}"}]}, config
            )
            requests.extend(model._requests)
        raw = middleware.manager("p").raw
        assert [raw[i].text for i in raw.by_kind("user")] == [f"run {i}" for i in range(len(runs))]
        outputs = [m for m in state["messages"] if isinstance(m, ToolMessage)]
        assert len(raw.by_kind("tool_result")) == len(outputs) == sum(map(len, runs))
        for payload in requests:
            assert validate(payload, "openai") == []
            assert count_payload(payload, "openai", default_counter()) <= BUDGET
