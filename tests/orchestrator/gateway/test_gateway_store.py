"""What a proxied request costs the session file: SQLite transactions counted as they commit.

The gateway runs in-process with a SQLite store; every connection the store opens is
traced (`sqlite3.Connection.set_trace_callback`), and the fake upstream notes how many
commits were made by the time each request reached it.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import orchestrator.persistence.sqlite.file as session_file
from benchmarks.gateway_script import agent
from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import GatewayThread
from tests.orchestrator.gateway.scripted import Steps

Serve = Callable[..., tuple[str, GatewayThread]]
Upstream = Callable[..., ProviderServer]


@pytest.fixture(name="commits")
def commits_fixture(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The COMMITs of every session file the store opens from now on, in order."""
    seen: list[str] = []
    connect = session_file.connect

    def traced(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        connection.set_trace_callback(
            lambda statement: (
                seen.append(statement) if statement.lstrip().upper().startswith("COMMIT") else None
            )
        )
        return connection

    monkeypatch.setattr(session_file, "connect", traced)
    return seen


class TestCommitsPerRequest:
    def test_a_request_commits_once_before_it_goes_upstream_and_once_after(
        self, upstream: Upstream, serve_gateway: Serve, commits: list[str], tmp_path: Path
    ) -> None:
        """Between two requests reaching the upstream: the answer's commit and the next's."""
        steps = Steps(6)
        reached: list[int] = []

        def respond(body: dict[str, Any]) -> dict[str, Any]:
            reached.append(len(commits))
            return steps(body)

        server = upstream(respond=respond, factor=1.0)
        url, _ = serve_gateway(server, store=tmp_path)
        messages = agent(url, "s-1")
        assert messages[-1]["content"][0]["text"] == "All done."
        assert len(reached) == 7
        between = [later - earlier for earlier, later in itertools.pairwise(reached)]
        assert between == [2] * 6, between
