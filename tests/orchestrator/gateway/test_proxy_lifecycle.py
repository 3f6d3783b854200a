"""`context-graph proxy` stopped and killed as a process: what the store keeps, what resumes.

The proxy runs as a user runs it (`proxy_process.ProxyProcess`) with a SQLite store,
between the scripted agent of test_gateway.py and the strict fake upstream; `Stall`
holds an answer mid-stream while the test signals or kills the proxy.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway.listing import list_sessions, read_thread
from tests.orchestrator.gateway.proxy_process import ProxyProcess, Stall
from tests.orchestrator.gateway.scripted import BUDGET, Steps
from tests.orchestrator.gateway.test_gateway import agent

Upstream = Callable[..., ProviderServer]


def _closed(url: str) -> None:
    """Wait until the proxy no longer takes connections (it began to stop)."""
    for _ in range(600):
        try:
            httpx.get(f"{url}/ready", timeout=5)
        except httpx.TransportError:
            return
        time.sleep(0.1)
    pytest.fail(f"{url} still takes connections")


def _in_background(
    work: Callable[[], list[dict[str, Any]]],
) -> tuple[threading.Thread, dict[str, Any]]:
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["messages"] = work()
        except Exception as error:  # the test asserts which one it is
            outcome["error"] = error

    worker = threading.Thread(target=run)
    worker.start()
    return worker, outcome


def _tool_results(messages: list[dict[str, Any]]) -> int:
    return sum(
        1
        for message in messages
        if isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    )


def _kinds(location: str) -> list[str]:
    with read_thread(location) as restored:
        return [restored.raw[n].kind for n in restored.raw.transcript()]


@pytest.fixture(name="stall")
def stall_fixture(monkeypatch: pytest.MonkeyPatch) -> Stall:
    """The fake upstream's streams, held mid-way when the test arms the stall."""
    stall = Stall()
    stall.install(monkeypatch)
    return stall


def test_sigterm_finishes_the_stream_in_flight_and_saves_every_session(
    upstream: Upstream, stall: Stall, tmp_path: Path
) -> None:
    server = upstream(respond=Steps(6), factor=1.0, limit=BUDGET)
    proxy = ProxyProcess(server.url, tmp_path, BUDGET)
    try:
        messages = agent(proxy.url, "s-1", stream=True, turns=2)
        stall.armed = True
        worker, outcome = _in_background(
            lambda: agent(proxy.url, "s-1", stream=True, messages=list(messages), turns=1)
        )
        stall.wait_stalled()
        proxy.popen.send_signal(signal.SIGTERM)
        _closed(proxy.url)  # stopping: no new connection, the stream still held
        stall.released.set()
        worker.join()
        code, err = proxy.wait()  # a second signal would end it at once
    finally:
        stall.released.set()
        proxy.close()
    assert code == 0, err
    assert "stopped on SIGTERM: 1 conversation(s) closed" in err
    reply = outcome["messages"][len(messages)]  # then the agent's tool results
    assert reply["role"] == "assistant"
    assert reply["content"][-1]["type"] == "tool_use", "the held stream came whole"
    (session,) = list_sessions(tmp_path)
    (thread,) = session.threads
    assert thread.usage is not None and thread.usage.calls == 3, "the last stream's usage"
    assert _kinds(thread.location).count("tool_result") == 2


def test_ctrl_c_stops_cleanly_with_130(upstream: Upstream, tmp_path: Path) -> None:
    server = upstream(respond=Steps(2), factor=1.0, limit=BUDGET)
    proxy = ProxyProcess(server.url, tmp_path, BUDGET)
    try:
        agent(proxy.url, "s-1", stream=True)
        code, err = proxy.stop(signal.SIGINT)
    finally:
        proxy.close()
    assert code == 130, err
    assert "stopped on SIGINT: 1 conversation(s) closed" in err
    (session,) = list_sessions(tmp_path)
    assert session.usage is not None and session.usage.calls == 3


def test_a_proxy_killed_mid_stream_resumes_the_session_from_its_store(
    upstream: Upstream, stall: Stall, tmp_path: Path
) -> None:
    server = upstream(respond=Steps(8), factor=1.0, limit=BUDGET)
    proxy = ProxyProcess(server.url, tmp_path, BUDGET)
    try:
        messages = agent(proxy.url, "s-1", stream=True, turns=4)
        stall.armed = True
        worker, outcome = _in_background(
            lambda: agent(proxy.url, "s-1", stream=True, messages=list(messages), turns=1)
        )
        stall.wait_stalled()
        proxy.popen.kill()  # SIGKILL: nothing is closed, nothing flushed
        proxy.popen.wait()
        stall.released.set()
        worker.join()
    finally:
        stall.released.set()
        proxy.close()
    # Cut before the answer's head: the SDK's connection error; after it, its HTTP
    # library's (which the SDK bundles under another name than `httpx`).
    cut = type(outcome.get("error")).__name__
    assert cut in {"APIConnectionError", "RemoteProtocolError"}, outcome
    # Nothing lost: the record holds every message the agent sent, the last one included.
    (session,) = list_sessions(tmp_path)
    (thread,) = session.threads
    assert _kinds(thread.location).count("tool_result") == _tool_results(messages) == 4
    # The agent retries on a restarted proxy, on the same store, and runs to the end.
    again = ProxyProcess(server.url, tmp_path, BUDGET)
    try:
        finished = agent(again.url, "s-1", stream=True, messages=list(messages))
        code, err = again.stop()
    finally:
        again.close()
    assert code == 0, err
    assert finished[-1]["content"][0]["text"] == "All done."
    assert server.refused == []
    assert max(server.prompts) <= BUDGET
    (session,) = list_sessions(tmp_path)
    (thread,) = session.threads  # resumed, not started again beside it
    kinds = _kinds(thread.location)
    assert kinds.count("tool_result") == _tool_results(finished)
    assert kinds.count("user") == 1, "the resumed history was not taken in twice"
