"""`ContextHistory(directory=...)` per request: each run gives its session file back."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from context_graph.errors import StoreLockedError
from orchestrator import ContextManager
from orchestrator.integrations.pydantic_ai import ContextHistory
from orchestrator.persistence.sqlite.lock import held_files
from orchestrator.policy import Policy


@pytest.fixture(autouse=True)
def _run_sync_loop(request: pytest.FixtureRequest) -> Iterator[None]:
    """Give `run_sync` an event loop that is closed afterwards."""
    if inspect.iscoroutinefunction(request.function):
        yield
        return
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()


def _model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls `read_log` once per run, then answers."""
    last = messages[-1]
    if any(getattr(part, "part_kind", "") == "tool-return" for part in last.parts):
        return ModelResponse(parts=[TextPart("The linker fails.")])
    return ModelResponse(parts=[ToolCallPart("read_log", {"n": len(messages)})])


def _agent() -> Agent[None, str]:
    agent = Agent(FunctionModel(_model), instructions="Be brief.")

    @agent.tool_plain
    def read_log(n: int) -> str:
        """Read build log number n."""
        return "\n".join(f"[{n}:{i:03d}] cc -c m{i}.c ok" for i in range(50))

    return agent


def _request(directory: Path, prompt: str, history: list[ModelMessage]) -> list[ModelMessage]:
    """One web request: a new processor, one run, nothing closed by hand."""
    processor = ContextHistory(budget=4_000, directory=directory)
    result = _agent().run_sync(
        prompt, message_history=history or None, capabilities=[processor.capability()]
    )
    _kept.append(processor)  # still alive, as a handler's local may be
    return result.all_messages()


_kept: list[ContextHistory] = []


def _session_file(directory: Path) -> Path:
    (found,) = directory.glob("*.sqlite")
    return found


class TestPerRequest:
    def test_a_new_processor_per_request_continues_the_record(self, tmp_path: Path) -> None:
        """Three requests, each with its own `ContextHistory`, append to one record."""
        history: list[ModelMessage] = []
        for prompt in ("Why does the build fail?", "And the tests?", "Fix it."):
            history = _request(tmp_path, prompt, history)
        manager = ContextManager.open(_session_file(tmp_path), policy=Policy())
        raw = manager.raw
        asked = [raw[i].text for i in raw.by_kind("user")]
        manager.close()
        assert asked == ["Why does the build fail?", "And the tests?", "Fix it."]
        assert len(raw.by_kind("tool_result")) == 3

    def test_another_process_takes_the_next_request(self, tmp_path: Path) -> None:
        """Between runs the file is free: another process opens it for writing."""
        _request(tmp_path, "Why does the build fail?", [])
        script = (
            "import sys\nfrom orchestrator import ContextManager\n"
            "m = ContextManager.open(sys.argv[1]); m.add_user('from elsewhere'); m.close()\n"
        )
        path = _session_file(tmp_path)
        done = subprocess.run(
            [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        manager = ContextManager.open(path, policy=Policy())
        assert manager.raw[manager.raw.by_kind("user")[-1]].text == "from elsewhere"
        manager.close()

    def test_the_same_processor_reused_keeps_working(self, tmp_path: Path) -> None:
        """One processor for every request: each run reopens the conversation it closed."""
        processor = ContextHistory(budget=4_000, directory=tmp_path)
        agent = _agent()
        first = agent.run_sync("Why?", capabilities=[processor.capability()])
        assert held_files() == 0
        second = agent.run_sync(
            "Again?", message_history=first.all_messages(), capabilities=[processor.capability()]
        )
        raw = processor.manager(second.conversation_id).raw
        assert [raw[i].text for i in raw.by_kind("user")] == ["Why?", "Again?"]
        processor.close()
        assert held_files() == 0

    def test_a_manager_left_open_is_named_in_the_refusal(self, tmp_path: Path) -> None:
        """A manager opened outside a run and not closed: the next request says where."""
        first = _request(tmp_path, "Why?", [])
        holder = ContextHistory(budget=4_000, directory=tmp_path)
        holder.manager(first[0].conversation_id or "")  # opened here, left open
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        with pytest.raises(StoreLockedError) as refused:
            _request(tmp_path, "Again?", first)
        assert refused.value.holder == f"{__file__}:{line}"
        assert "this process" in str(refused.value)
        assert "close" in str(refused.value)
        holder.close()
        _request(tmp_path, "Again?", first)

    def test_with_block_closes(self, tmp_path: Path) -> None:
        """`with ContextHistory(...)` closes what it opened outside runs."""
        with ContextHistory(budget=4_000, directory=tmp_path) as history:
            history.manager("c1").add_user("hello")
        assert held_files() == 0
        manager = ContextManager.open(tmp_path / "c1.sqlite", policy=Policy())
        assert [node.text for node in manager.raw] == ["hello"]
        manager.close()


class TestFailedRun:
    def test_a_run_that_raises_gives_the_file_back(self, tmp_path: Path) -> None:
        """The model fails after the first request: the run raises, the file is free."""
        calls: list[int] = []

        def failing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            calls.append(1)
            if len(calls) > 1:
                raise RuntimeError("the provider is down")
            return _model(messages, info)

        agent = Agent(FunctionModel(failing))

        @agent.tool_plain
        def read_log(n: int) -> str:
            """Read build log number n."""
            return "ok"

        processor = ContextHistory(budget=4_000, directory=tmp_path)
        with pytest.raises(RuntimeError, match="provider is down"):
            agent.run_sync("Why?", capabilities=[processor.capability()])
        assert held_files() == 0
        manager = ContextManager.open(_session_file(tmp_path), policy=Policy())
        assert [manager.raw[i].text for i in manager.raw.by_kind("user")] == ["Why?"]
        manager.close()
