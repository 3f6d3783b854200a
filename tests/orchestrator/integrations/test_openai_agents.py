"""`ContextSession`: the real Agents SDK Runner and Responses model against a validating server."""

from __future__ import annotations

import asyncio
import gc
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool
from openai import AsyncOpenAI

from context_graph.errors import ConfigurationError
from context_graph.render import count_payload
from orchestrator import ContextManager
from orchestrator.integrations.openai_agents import ContextSession
from orchestrator.policy import Policy

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "integrations" / "openai-agents.md"
BUDGET = 8_000
TURNS = 30
ANSWER = "The deploy failed: migration 0042 timed out."
BIG = "\n".join(f"row {i}: worker-{i % 7} handled batch {i * 37} status=ok" for i in range(250))


def reads(turns: int) -> Any:
    """A model that reasons and calls `read_file` for `turns - 1` turns, then answers."""
    state = {"n": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] < turns:
            return {
                "calls": [["read_file", {"path": f"logs/f{state['n']}.log"}]],
                "reasoning": True,
            }
        return {"text": ANSWER}

    return respond


@function_tool
def read_file(path: str) -> str:
    """Read a text file."""
    return BIG


def agent_for(server: Any, client: AsyncOpenAI | None = None) -> Agent[Any]:
    """An agent whose model is the SDK's Responses model on `server`."""
    if client is None:
        client = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0)
    model = OpenAIResponsesModel(model="gpt-test", openai_client=client)
    return Agent(name="coder", instructions="Be careful.", tools=[read_file], model=model)


@pytest.fixture(name="client")
async def client_fixture() -> Any:
    """Makes `AsyncOpenAI` clients for a server, and closes them after the test."""
    made: list[AsyncOpenAI] = []

    def make(server: Any) -> AsyncOpenAI:
        made.append(AsyncOpenAI(base_url=f"{server.url}/v1", api_key="test", max_retries=0))
        return made[-1]

    yield make
    for one in made:
        await one.close()


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's trace exporter would try to reach OpenAI: off in these tests."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


def close_sync_runner() -> None:
    """Close what `Runner.run_sync` leaves open: its event loop and its clients' sockets."""
    policy = asyncio.get_event_loop_policy()
    loop = policy.get_event_loop()
    loop.close()
    policy.set_event_loop(None)
    gc.collect()


# `Runner.run_sync` keeps its event loop (and the HTTP client's sockets on it) open for the
# next call; closing them is this test's cleanup, not a failure of the code under test.
SYNC_RUNNER = pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")


class TestPage:
    @SYNC_RUNNER
    def test_docs_block_runs_as_written(
        self,
        tmp_path: Path,
        provider_server: Any,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """The page's block: 30 requests, each valid and under the budget by the server's count."""
        (tmp_path / "logs").mkdir()
        for n in range(1, TURNS):
            (tmp_path / "logs" / f"f{n}.log").write_text(BIG + f"\nfile {n}", encoding="utf-8")
        monkeypatch.chdir(tmp_path)
        server = provider_server("responses", respond=reads(TURNS), limit=BUDGET)
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        code = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
        namespace: dict[str, Any] = {"__name__": "__main__"}
        exec(compile(code, str(PAGE), "exec"), namespace)
        close_sync_runner()
        assert server.refused == []
        assert len(server.requests) == TURNS
        assert max(server.prompts) <= BUDGET
        assert capsys.readouterr().out.strip() == ANSWER
        assert namespace["manager"].stats().raw_tokens > 4 * BUDGET

    def test_user_code_is_five_lines(self) -> None:
        """What context-graph adds to the agent is five lines."""
        code = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)[0]
        assert len([line for line in code.splitlines() if "# context-graph" in line]) == 5


class TestRun:
    async def test_async_run_keeps_reasoning_and_budget(
        self, provider_server: Any, client: Any
    ) -> None:
        """`Runner.run`: 30 valid requests under the budget; reasoning goes back verbatim."""
        server = provider_server("responses", respond=reads(TURNS), limit=BUDGET)
        manager = ContextManager(format="responses", budget=BUDGET, policy=Policy())
        session = ContextSession(manager)
        result = await Runner.run(
            agent_for(server, client(server)),
            "read the logs",
            max_turns=40,
            session=session,
            run_config=session.run_config(),
            hooks=session.hooks(),
        )
        assert result.final_output == ANSWER
        assert (len(server.requests), server.refused, max(server.prompts) <= BUDGET) == (
            TURNS,
            [],
            True,
        )
        last = server.requests[-1]["input"]
        reasoning = [item for item in last if item.get("type") == "reasoning"]
        assert reasoning[-1] == {
            "type": "reasoning",
            "id": f"rs_{TURNS - 1}",
            "summary": [{"type": "summary_text", "text": f"thinking {TURNS - 1}"}],
            "encrypted_content": f"enc-{TURNS - 1}",
        }
        assert all(r["instructions"] == "Be careful." for r in server.requests)

    async def test_items_are_ingested_once(self, provider_server: Any, client: Any) -> None:
        """The filter's and the Runner's copies of an item become one node."""
        server = provider_server("responses", respond=reads(3))
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        agent = agent_for(server, client(server))
        await Runner.run(agent, "go", session=session, run_config=session.run_config())
        kinds = [node.kind for node in manager.raw]
        assert kinds == ["user", *("assistant", "tool_call", "tool_result") * 2, "assistant"]
        items = await session.get_items()
        assert [i.get("type", "message") for i in items] == [
            "message",
            *("reasoning", "function_call", "function_call_output") * 2,
            "message",
        ]

    @SYNC_RUNNER
    def test_run_sync(self, provider_server: Any) -> None:
        """`Runner.run_sync` goes through the same session and filter."""
        server = provider_server("responses", respond=reads(2))
        manager = ContextManager(format="responses", budget=BUDGET, policy=Policy())
        session = ContextSession(manager)
        result = Runner.run_sync(
            agent_for(server), "go", session=session, run_config=session.run_config()
        )
        close_sync_runner()
        assert result.final_output == ANSWER
        assert server.refused == []
        assert len(server.requests) == 2


class TestSession:
    def test_is_an_sdk_session(self) -> None:
        """The SDK's runtime-checkable `Session` protocol recognises the session."""
        from agents.memory import Session

        assert isinstance(
            ContextSession(ContextManager(format="responses", policy=Policy())), Session
        )

    async def test_get_items_returns_items_as_added(self) -> None:
        """Items come back exactly as added, the latest `limit` when asked."""
        session = ContextSession(ContextManager(format="responses", policy=Policy()))
        items = [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        ]
        await session.add_items(items[:1])
        await session.add_items(items[1:])
        await session.add_items([{"type": "function_call_output", "call_id": "c1", "output": "x"}])
        got = await session.get_items()
        assert got[:3] == items
        assert await session.get_items(limit=1) == got[-1:]

    async def test_a_reopened_manager_has_the_items(self, tmp_path: Path) -> None:
        """With `ContextManager.open`, a new session on the reopened file has every item."""
        path = tmp_path / "session.db"
        manager = ContextManager.open(path, format="responses", policy=Policy())
        items = [
            {"role": "user", "content": "hi"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "yo"}],
            },
        ]
        await ContextSession(manager).add_items(items)
        manager.close()
        reopened = ContextManager.open(path, format="responses", policy=Policy())
        try:
            assert await ContextSession(reopened).get_items() == items
        finally:
            reopened.close()

    async def test_a_bad_item_adds_nothing(self) -> None:
        """An output without its call is refused, and the session and manager are unchanged."""
        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        bad = [
            {"role": "user", "content": "hi"},
            {"type": "function_call_output", "call_id": "nope", "output": "x"},
        ]
        with pytest.raises(Exception, match="has no call before it"):
            await session.add_items(bad)
        assert await session.get_items() == []
        assert len(manager.raw) == 0

    async def test_input_the_session_lacks_is_ingested_once(self) -> None:
        """Input items the filter took in first are not ingested again when the Runner adds them."""
        from agents.run_config import CallModelData, ModelInputData

        manager = ContextManager(format="responses", policy=Policy())
        session = ContextSession(manager)
        first = [{"role": "user", "content": "hi"}]
        await session.add_items(first)
        extra = [
            {"type": "function_call", "call_id": "c1", "name": "read_file", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
        ]
        agent = Agent(name="a", instructions="Be careful.", tools=[read_file])
        data = CallModelData(
            ModelInputData(input=[*first, *extra], instructions="Be careful."), agent, None
        )
        filtered = await session.filter(data)
        assert [i["type"] for i in filtered.input] == [
            "message",
            "function_call",
            "function_call_output",
        ]
        assert filtered.instructions == "Be careful."
        await session.add_items(extra)
        assert [n.kind for n in manager.raw] == ["user", "assistant", "tool_call", "tool_result"]
        assert await session.get_items() == [*first, *extra]

    def test_missing_sdk_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the Agents SDK, the error names the install command."""
        monkeypatch.setitem(sys.modules, "agents", None)
        with pytest.raises(ConfigurationError, match=r"pip install .\.\[openai-agents\]."):
            ContextSession(ContextManager(format="responses", policy=Policy()))


class TestScriptedModel:
    async def test_filter_renders_for_the_sdks_own_fake_model(self) -> None:
        """With the SDK's `ScriptedModel`: inputs fit the budget and keep reasoning verbatim."""
        from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
        from agents.usage import Usage
        from openai.types.responses import ResponseReasoningItem
        from openai.types.responses.response_reasoning_item import Summary

        steps = []
        for n in range(1, 8):
            reasoning = ResponseReasoningItem(
                id=f"rs_{n}",
                type="reasoning",
                summary=[Summary(type="summary_text", text=f"plan {n}")],
                encrypted_content=f"enc-{n}",
            )
            call = function_call("read_file", {"path": f"f{n}"}, call_id=f"c{n}")
            steps.append(ModelStep(output=[reasoning, call], usage=Usage(input_tokens=900)))
        steps.append(ModelStep(output=[assistant_message(ANSWER)], usage=Usage(input_tokens=900)))
        model = ScriptedModel(steps)
        manager = ContextManager(format="responses", budget=3_000, policy=Policy())
        seen: list[Any] = []
        manager.bus.connect("usage_reported", lambda sender, **kw: seen.append(kw["usage"]))
        session = ContextSession(manager)
        agent = Agent(name="coder", instructions="Be careful.", tools=[read_file], model=model)
        result = await Runner.run(
            agent, "go", session=session, run_config=session.run_config(), hooks=session.hooks()
        )
        assert result.final_output == ANSWER
        cache = manager.raw.token_cache
        for call in model.calls:
            body = {"instructions": call.system_instructions, "input": call.input}
            assert count_payload(body, "responses", cache) <= 3_000
        last = model.calls[-1].input
        assert last[-3] == {
            "type": "reasoning",
            "id": "rs_7",
            "summary": [{"type": "summary_text", "text": "plan 7"}],
            "encrypted_content": "enc-7",
        }
        assert [u["prompt_tokens"] for u in seen] == [900] * len(model.calls)
