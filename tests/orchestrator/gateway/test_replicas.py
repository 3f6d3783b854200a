"""Two `context-graph proxy` processes on one PostgreSQL store, serving one agent session.

The agent's requests go to either proxy, one after the other and two at once (as behind
a load balancer); each proxy holds its own manager on the session's thread in the
database, and the store's compare-and-set keeps them honest. Nothing fails, nothing is
lost or taken in twice, every request is valid and under the budget.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.cli import main
from orchestrator.gateway.listing import list_sessions, read_thread
from orchestrator.gateway.replicas import take_and_render
from orchestrator.gateway.threads import Thread
from orchestrator.integrations.clients_apis import ANTHROPIC_MESSAGES
from orchestrator.integrations.conversation import Conversation
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.gateway.proxy_process import ProxyProcess
from tests.orchestrator.gateway.scripted import BUDGET, Steps
from tests.orchestrator.gateway.test_gateway import MODEL, agent
from tests.orchestrator.gateway.test_proxy_lifecycle import _in_background, _tool_results
from tests.orchestrator.persistence.conftest import PgServer, postgres_fixture

__all__ = ["postgres_fixture"]  # the throwaway cluster, as the store tests start it

Upstream = Callable[..., ProviderServer]


@pytest.fixture(name="database")
def database_fixture(postgres: PgServer) -> Iterator[str]:
    """A fresh database of the test cluster: the proxies' store, listed on its own."""
    name = f"proxy_{uuid.uuid4().hex[:12]}"
    postgres.execute(f"CREATE DATABASE {name}")
    yield postgres.url.rsplit("/", 1)[0] + "/" + name


def _done(messages: list[dict[str, Any]]) -> bool:
    last = messages[-1]
    return last["role"] == "assistant" and not any(
        block["type"] == "tool_use" for block in last["content"]
    )


def test_two_proxies_serve_one_session_in_turn_and_at_once(
    upstream: Upstream, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    server = upstream(respond=Steps(12), factor=1.0, limit=BUDGET)
    first = ProxyProcess(server.url, database, BUDGET)
    second = ProxyProcess(server.url, database, BUDGET)
    try:
        urls = [first.url, second.url]
        messages = agent(first.url, "s-1", stream=True, turns=1)
        for turn in range(1, 5):  # in turn: each request to the other proxy
            agent(urls[turn % 2], "s-1", stream=True, messages=messages, turns=1)
        # At once: the same next request to both (an agent's retry racing its original).
        racing = [
            _in_background(
                lambda url=url: agent(url, "s-1", stream=True, messages=list(messages), turns=1)
            )
            for url in urls
        ]
        for worker, _ in racing:
            worker.join()
        outcomes = [outcome for _, outcome in racing]
        assert all("messages" in outcome for outcome in outcomes), outcomes
        messages = outcomes[0]["messages"]
        turn = 0
        while not _done(messages):
            turn += 1
            agent(urls[turn % 2], "s-1", stream=True, messages=messages, turns=1)
        stopped = [proxy.stop(signal.SIGTERM) for proxy in (first, second)]
    finally:
        first.close()
        second.close()
    assert [code for code, _ in stopped] == [0, 0], stopped
    # Every request was rendered by the engine: none was passed through after a failure.
    assert not any("passed a request through" in err for _, err in stopped), stopped
    assert server.refused == []
    assert max(server.prompts) <= BUDGET
    assert messages[-1]["content"][0]["text"] == "All done."
    (session,) = list_sessions(database)
    assert session.session == "s-1"
    (thread,) = session.threads  # one conversation in the database, served by both
    with read_thread(thread.location) as restored:
        kinds = [restored.raw[n].kind for n in restored.raw.transcript()]
    # 12 steps, one of them answered to the request that lost the race.
    assert kinds.count("tool_result") == _tool_results(messages) == 11
    assert kinds.count("user") == 1, "nothing was taken in twice"
    assert thread.usage is not None
    assert main(["proxy", "sessions", "--store", database, "--json"]) == 0
    assert '"session": "s-1"' in capsys.readouterr().out


async def test_a_request_that_loses_the_race_is_taken_in_again_from_the_record(
    postgres: PgServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another proxy appends between this one's catch-up and its ingest: retried, once each."""
    location = postgres.location("proxy")
    mine = ContextManager.open(location, format="anthropic", budget=BUDGET, policy=Policy())
    other = ContextManager.open(location, format="anthropic", budget=BUDGET, policy=Policy())
    try:
        theirs = Conversation(other, ANTHROPIC_MESSAGES)
        asked = {"model": MODEL, "max_tokens": 64, "messages": [_said("user", "Run the steps.")]}
        theirs.take(asked)
        call = {"type": "tool_use", "id": "toolu_1", "name": "run", "input": {"step": 0}}
        result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "step 0 ok"}
        grown = {
            **asked,
            "messages": [*asked["messages"], _said("assistant", call), _said("user", result)],
        }
        real_refresh = mine.refresh
        raced: list[int] = []

        def refresh_then_lose_the_race() -> int:
            brought = real_refresh()
            if not raced:  # the other proxy takes the same request in right after
                raced.append(brought)
                theirs.take(grown)
            return brought

        monkeypatch.setattr(mine, "refresh", refresh_then_lose_the_race)
        thread = Thread(mine, Conversation(mine, ANTHROPIC_MESSAGES), 0, shared=True)
        rendered = await take_and_render(
            thread, grown, None, lambda: mine.render(format="anthropic", budget=BUDGET)
        )
        assert raced == [1]
        kinds = [mine.raw[n].kind for n in mine.raw.transcript()]
        assert kinds == ["user", "assistant", "tool_call", "tool_result"], "taken in once"
        assert rendered.tokens <= BUDGET
    finally:
        mine.close()
        other.close()


def _said(role: str, content: Any) -> dict[str, Any]:
    return {"role": role, "content": content if isinstance(content, str) else [content]}


def test_inspect_reads_a_thread_kept_in_postgresql(
    upstream: Upstream, database: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`context-graph inspect 'postgresql://...#proxy/<wire>/<session>/thread-<n>'`, as
    `proxy sessions` names the thread, shows what the proxy kept of the session."""
    server = upstream(respond=Steps(3), factor=1.0, limit=BUDGET)
    proxy = ProxyProcess(server.url, database, BUDGET)
    try:
        messages = agent(proxy.url, "s-inspect")
        proxy.stop(signal.SIGTERM)
    finally:
        proxy.close()
    assert messages[-1]["content"][0]["text"] == "All done."
    (session,) = list_sessions(database)
    (thread,) = session.threads
    assert str(thread.location).startswith(database + "#proxy/anthropic/s-inspect/thread-")
    capsys.readouterr()
    assert main(["inspect", str(thread.location)]) == 0
    shown = capsys.readouterr().out
    # Named by its session, never by the URL (which may hold a password).
    assert "session:     proxy/anthropic/s-inspect/thread-0" in shown, shown
    assert "tool_result 3" in shown and "user turns: 1" in shown, shown
    assert "postgres@" not in shown
