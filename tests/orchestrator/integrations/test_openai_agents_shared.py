"""Two `ContextSession`s on one session: the items are the session's, not each object's.

Over SQLite (one writer per file) the two sessions share one manager; over PostgreSQL
each is a worker with a manager of its own, and `manager.refresh()` brings the other's
items in. The real Agents SDK `Runner` drives them with its own `ScriptedModel`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, function_tool
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from context_graph.errors import StoreConflictError
from context_graph.testing import WordCounter
from orchestrator import ContextManager
from orchestrator.integrations.openai_agents import ContextSession
from orchestrator.policy import Policy
from tests.orchestrator.persistence.conftest import postgres_fixture

__all__ = ["postgres_fixture"]  # the PostgreSQL server fixture, used here too


@pytest.fixture(autouse=True)
def no_tracing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's trace exporter would try to reach OpenAI: off in these tests."""
    monkeypatch.setenv("OPENAI_AGENTS_DISABLE_TRACING", "1")


@function_tool
def read_file(path: str) -> str:
    """Read a text file."""
    return f"contents-of-{path}"


def _agent(mark: str) -> tuple[Agent[Any], ScriptedModel]:
    """An agent whose model reads one file, then answers `mark`."""
    call = function_call("read_file", {"path": f"{mark}.txt"}, call_id=f"call-{mark}")
    model = ScriptedModel([ModelStep(output=[call]), ModelStep(output=[assistant_message(mark)])])
    agent = Agent(name="coder", instructions="Be careful.", tools=[read_file], model=model)
    return agent, model


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def _run(session: ContextSession, task: str, mark: str) -> ScriptedModel:
    agent, model = _agent(mark)
    await Runner.run(agent, task, session=session, run_config=session.run_config())
    return model


@pytest.fixture(name="sqlite_pair")
def sqlite_pair_fixture(tmp_path: Path) -> Iterator[tuple[ContextSession, ContextSession]]:
    """Two sessions over the one manager of a SQLite session file."""
    manager = ContextManager.open(
        tmp_path / "s.db", format="responses", counter=WordCounter(), policy=Policy()
    )
    yield ContextSession(manager), ContextSession(manager)
    manager.close()


@pytest.fixture(name="pg_pair")
def pg_pair_fixture(postgres: Any) -> Iterator[tuple[ContextSession, ContextSession]]:
    """Two workers on one PostgreSQL session, each a manager with its own session object."""
    location = postgres.location("agents")
    managers = [
        ContextManager.open(
            location, format="responses", counter=WordCounter(), durable=False, policy=Policy()
        )
        for _ in range(2)
    ]
    yield ContextSession(managers[0]), ContextSession(managers[1])
    for manager in managers:
        manager.close()


class TestOneManagerTwoSessions:
    async def test_each_sees_the_others_items(
        self, sqlite_pair: tuple[ContextSession, ContextSession]
    ) -> None:
        """What one session adds (or a run adds through it), the other's `get_items` holds."""
        first, second = sqlite_pair
        await first.add_items([_user("one")])
        await second.add_items([_user("two")])
        assert await first.get_items() == await second.get_items() == [_user("one"), _user("two")]
        await _run(first, "read a.txt", "answer-a-mark")
        items = await second.get_items()
        assert items == await first.get_items()
        assert items[2] == _user("read a.txt")
        assert json.dumps(items[-1]).count("answer-a-mark") == 1

    async def test_pop_takes_the_sessions_latest_item(
        self, sqlite_pair: tuple[ContextSession, ContextSession]
    ) -> None:
        """The first session pops what the second added last; both then agree."""
        first, second = sqlite_pair
        await first.add_items([_user("one")])
        await second.add_items([_user("two")])
        assert await first.pop_item() == _user("two")
        assert await second.get_items() == [_user("one")]
        assert await second.pop_item() == _user("one")
        assert await first.pop_item() is None

    async def test_a_withdrawal_through_the_manager_leaves_the_items(
        self, sqlite_pair: tuple[ContextSession, ContextSession]
    ) -> None:
        """`manager.withdraw` of an item's node: `get_items` no longer holds it; a pop
        then takes the latest item still there."""
        first, _ = sqlite_pair
        await first.add_items([_user("one"), _user("two"), _user("three")])
        manager = first.manager
        (two,) = [node.id for node in manager.raw if node.text == "two"]
        manager.withdraw([two])
        assert await first.get_items() == [_user("one"), _user("three")]
        assert await first.pop_item() == _user("three")
        assert await first.get_items() == [_user("one")]


class TestTwoWorkers:
    async def test_after_refresh_the_other_workers_items_are_there(
        self, pg_pair: tuple[ContextSession, ContextSession]
    ) -> None:
        """A runs the agent; after refresh B holds the same items and B's next model
        input carries A's answer."""
        a, b = pg_pair
        await _run(a, "read a.txt", "answer-a-mark")
        b.manager.refresh()
        assert await b.get_items() == await a.get_items()
        model = await _run(b, "and now b.txt", "answer-b-mark")
        assert "answer-a-mark" in json.dumps(model.calls[0].input)
        a.manager.refresh()
        items = await a.get_items()
        assert items == await b.get_items()
        assert [i.get("content") for i in items if i.get("role") == "user"] == [
            "read a.txt",
            "and now b.txt",
        ]

    async def test_pop_withdraws_the_latest_item_whoever_added_it(
        self, pg_pair: tuple[ContextSession, ContextSession]
    ) -> None:
        """B pops A's latest item (not its own); A sees it gone after refresh."""
        a, b = pg_pair
        await b.add_items([_user("from b")])
        a.manager.refresh()
        await a.add_items([_user("from a")])
        with pytest.raises(StoreConflictError):
            await b.pop_item()  # B has not seen A's item yet: nothing changes
        b.manager.refresh()
        assert await b.pop_item() == _user("from a")
        a.manager.refresh()
        assert await a.get_items() == await b.get_items() == [_user("from b")]
        await a.add_items([_user("again")])
        assert await a.get_items() == [_user("from b"), _user("again")]
