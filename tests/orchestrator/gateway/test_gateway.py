"""The gateway between the Anthropic SDK and a strict fake API: what goes upstream, what is kept.

Each test drives the real `anthropic` client at the gateway's URL, as an agent CLI
would, with a scripted model upstream (`conftest.Steps`) that asks for a tool call per
turn, whose large output grows the history far past the budget.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.gateway_script import MODEL, SYSTEM, TOOLS, agent, client, output
from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import FORWARDED, OUTCOME, GatewayThread
from orchestrator.gateway.threads import SessionTable
from orchestrator.integrations.clients_apis import ANTHROPIC_MESSAGES
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from tests.orchestrator.gateway.scripted import BUDGET, Steps

Serve = Callable[..., tuple[str, GatewayThread]]
Upstream = Callable[..., ProviderServer]


def kinds(thread: Any) -> list[str]:
    return [node.kind for node in thread.manager.raw]


class TestALongLoop:
    @pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
    def test_every_request_is_valid_and_under_budget(
        self, upstream: Upstream, serve_gateway: Serve, stream: bool
    ) -> None:
        server = upstream(respond=Steps(14), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server)
        messages = agent(url, "s-1", stream=stream)
        assert messages[-1]["content"][0]["text"] == "All done."
        assert server.refused == []
        assert len(server.requests) == 15
        assert max(server.prompts) <= BUDGET
        whole = server.count({"system": SYSTEM, "tools": TOOLS, "messages": messages[:-1]})
        assert whole > 2 * BUDGET, "the history grew far past the budget"
        (thread,) = served.gateway.table.sessions["s-1"]
        assert kinds(thread).count("tool_result") == 14, "the record keeps every output"
        assert kinds(thread).count("user") == 1

    def test_the_upstream_count_calibrates_the_engine(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        """The upstream counts 1.4x what the engine does: its usage teaches the engine."""
        server = upstream(respond=Steps(14), factor=1.4)
        url, _ = serve_gateway(server)
        agent(url, "s-1")
        late = server.prompts[-5:]
        assert max(late) <= BUDGET, late


class TestSessions:
    def test_two_sessions_with_one_prompt_stay_apart(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        """Same system prompt, same first message: two sessions, because their ids differ."""
        server = upstream(respond=Steps(5), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server)
        agent(url, "a")
        agent(url, "b")
        sessions = served.gateway.table.sessions
        assert sorted(sessions) == ["a", "b"]
        for threads in sessions.values():
            (thread,) = threads
            assert kinds(thread).count("tool_result") == 5

    def test_a_side_call_of_the_session_is_a_thread_of_its_own(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        """Claude Code asks for a title under the same session id, with its own prompt."""
        server = upstream(respond=Steps(4), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server)
        client(url).messages.create(
            model=MODEL,
            max_tokens=64,
            system="Write a title for this session.",
            messages=[{"role": "user", "content": "<session>Run the steps.</session>"}],
            extra_headers={"x-claude-code-session-id": "s-1"},
        )
        agent(url, "s-1")
        title, main = served.gateway.table.sessions["s-1"]
        assert kinds(title).count("user") == 1
        assert kinds(main).count("tool_result") == 4

    def test_a_rewritten_history_starts_a_new_thread(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        """An edited first message (a rewind, /clear): the held record is left as it was."""
        server = upstream(respond=Steps(30), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server)
        messages = agent(url, "s-1", turns=3)
        (first,) = served.gateway.table.sessions["s-1"]
        before = [node.id for node in first.manager.raw]
        edited = [{"role": "user", "content": "Run the steps, but faster."}, *messages[1:]]
        agent(url, "s-1", messages=edited, turns=1)
        old, new = served.gateway.table.sessions["s-1"]
        assert old is first and [node.id for node in old.manager.raw] == before
        assert kinds(new).count("tool_result") == 3
        assert server.refused == []

    def test_a_history_that_says_the_same_in_other_words_continues_its_thread(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        """A message sent as one text block, then as a string (Claude Code's resumed prompt)."""
        server = upstream(respond=Steps(30), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server)
        blocks = [{"role": "user", "content": [{"type": "text", "text": "Run the steps."}]}]
        messages = agent(url, "s-1", messages=blocks, turns=1)
        spelled = [{"role": "user", "content": "Run the steps."}, *messages[1:]]
        agent(url, "s-1", messages=spelled, turns=2)
        (thread,) = served.gateway.table.sessions["s-1"]
        assert kinds(thread).count("user") == 1
        assert kinds(thread).count("tool_result") == 2
        assert server.refused == []

    @pytest.mark.parametrize("stored", [False, True], ids=["memory", "store"])
    def test_a_history_that_leaves_a_thread_partway_forks_it(
        self, upstream: Upstream, serve_gateway: Serve, tmp_path: Path, stored: bool
    ) -> None:
        """A changed tool result: the new thread shares the record up to the call it answers."""
        server = upstream(respond=Steps(30), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server, store=tmp_path if stored else None)
        messages = agent(url, "s-1", turns=3)
        (first,) = served.gateway.table.sessions["s-1"]
        before = first.manager.raw.transcript()
        call = messages[3]["content"][-1]["id"]
        changed = {"type": "tool_result", "tool_use_id": call, "content": "step 1 failed"}
        agent(url, "s-1", messages=[*messages[:4], {"role": "user", "content": [changed]}], turns=1)
        old, new = served.gateway.table.sessions["s-1"]
        assert old is first and old.manager.raw.transcript() == before
        # The system prompt, the user's message, step 0's turn, call and result, step 1's
        # turn and call are shared; the changed result is the fork's own.
        record = new.manager.raw
        assert record.transcript()[:7] == before[:7]
        answer = record[record.transcript()[7]]
        assert (answer.kind, answer.text) == ("tool_result", "step 1 failed")
        assert kinds(new).count("user") == 1
        assert server.refused == []
        if stored:
            assert new.manager.store is not None
            assert new.manager.store.location == str(tmp_path / "anthropic" / "s-1" / "thread-1.db")

    def test_a_restarted_gateway_resumes_from_the_store(
        self, upstream: Upstream, serve_gateway: Serve, tmp_path: Path
    ) -> None:
        server = upstream(respond=Steps(8), factor=1.0, limit=BUDGET)
        url, served = serve_gateway(server, store=tmp_path)
        messages = agent(url, "s-1", turns=4)
        served.__exit__(None, None, None)
        again, reopened = serve_gateway(server, store=tmp_path)
        agent(again, "s-1", messages=messages)
        (thread,) = reopened.gateway.table.sessions["s-1"]
        assert kinds(thread).count("user") == 1, "the resumed history was not ingested twice"
        assert kinds(thread).count("tool_result") == 8
        assert server.refused == []
        assert json.loads((tmp_path / "anthropic" / "s-1" / "session.json").read_text()) == {
            "session": "s-1"
        }


class TestCountTokens:
    def test_a_held_conversation_is_counted_as_it_would_be_sent(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        server = upstream(respond=Steps(12), factor=1.0, limit=BUDGET)
        url, _ = serve_gateway(server)
        messages = agent(url, "s-1")
        asked = {"model": MODEL, "system": SYSTEM, "tools": TOOLS, "messages": messages[:-1]}
        headers = {"x-claude-code-session-id": "s-1"}
        counted = client(url).messages.count_tokens(**asked, extra_headers=headers)
        direct = client(server.url).messages.count_tokens(**asked)
        assert counted.input_tokens <= BUDGET < direct.input_tokens

    def test_a_conversation_not_held_is_counted_as_sent(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        server = upstream(factor=1.0)
        url, served = serve_gateway(server)
        asked = {"model": MODEL, "messages": [{"role": "user", "content": output(1)}]}
        counted = client(url).messages.count_tokens(**asked)
        assert (
            counted.input_tokens == client(server.url).messages.count_tokens(**asked).input_tokens
        )
        assert served.gateway.table.sessions.get("anonymous", []) == []


class TestPassingThrough:
    def test_upstream_errors_come_back_unchanged(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        server = upstream(limit=5)
        url, _ = serve_gateway(server)
        body = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
        answer = httpx.post(f"{url}/v1/messages", json=body)
        direct = httpx.post(f"{server.url}/v1/messages", json=body)
        assert answer.status_code == direct.status_code == 400
        assert answer.json() == direct.json()
        assert answer.headers[OUTCOME] == "rendered"

    def test_a_forwarded_request_is_not_rendered_twice(
        self, upstream: Upstream, serve_gateway: Serve
    ) -> None:
        server = upstream(factor=1.0)
        url, served = serve_gateway(server)
        history = [
            {"role": "user" if n % 2 == 0 else "assistant", "content": output(n)} for n in range(13)
        ]
        body = {"model": MODEL, "max_tokens": 10, "messages": history}
        answer = httpx.post(f"{url}/v1/messages", json=body, headers={FORWARDED: "1"})
        assert answer.status_code == 200 and answer.headers[OUTCOME] == "passthrough"
        assert server.requests[-1]["messages"] == history
        assert served.gateway.table.sessions == {}

    @pytest.mark.parametrize("strict", [False, True])
    def test_a_request_the_engine_cannot_read(
        self, upstream: Upstream, serve_gateway: Serve, strict: bool
    ) -> None:
        """An answer to a call nobody made: passed on with a warning, or refused (--strict)."""
        server = upstream(factor=1.0)
        url, _ = serve_gateway(server, strict=strict)
        stray = {"type": "tool_result", "tool_use_id": "toolu_nobody", "content": "x"}
        body = {
            "model": MODEL,
            "max_tokens": 10,
            "messages": [{"role": "user", "content": [stray]}],
        }
        answer = httpx.post(f"{url}/v1/messages", json=body)
        if strict:
            assert answer.status_code == 400 and answer.headers[OUTCOME] == "refused"
            message = answer.json()["error"]["message"]
            assert "(--strict)" in message and "toolu_nobody" in message, message
            assert server.requests == server.refused == []
        else:
            assert answer.headers[OUTCOME] == "passthrough"
            assert len(server.refused) == 1, "the upstream saw the agent's own request"

    def test_other_paths_pass_through(self, upstream: Upstream, serve_gateway: Serve) -> None:
        server = upstream()
        url, _ = serve_gateway(server)
        answer = httpx.post(f"{url}/v1/other", content=b"{}")
        assert answer.headers[OUTCOME] == "passthrough"
        assert answer.status_code == 400  # the fake's own answer to a body it cannot read


class TestStoredThreads:
    def test_thread_files_reopen_in_number_order_and_new_ones_never_reuse_a_number(
        self, tmp_path: Path
    ) -> None:
        """thread-10 comes after thread-2 (not between 1 and 2), and a gap is not filled."""
        folder = tmp_path / "s-1"
        folder.mkdir()
        for number in (0, 2, 10):
            (folder / f"thread-{number}.db").touch()
        opened: list[Path | None] = []

        def make(path: Path | None) -> ContextManager:
            opened.append(path)
            return ContextManager(format="anthropic", budget=BUDGET, policy=Policy())

        table = SessionTable(ANTHROPIC_MESSAGES, make, tmp_path)
        body = {"model": MODEL, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        new = table.route("s-1", body)
        assert [t.number for t in table.sessions["s-1"]] == [0, 2, 10, 11]
        assert opened == [folder / f"thread-{n}.db" for n in (0, 2, 10, 11)]
        assert new.number == 11
