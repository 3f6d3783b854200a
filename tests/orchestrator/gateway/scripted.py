"""The gateway tests' scripted model and budget (shared by the tests and the fixtures).

`Steps` and `BUDGET` live in `benchmarks.gateway_script` (the proxy benchmark drives the
same script); they are imported from here as before.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from benchmarks.gateway_script import BUDGET, Steps
from benchmarks.provider_server import ProviderServer, Wire
from context_graph.testing import without_cache_marks
from orchestrator.gateway import Gateway, GatewayThread, gateway_for
from orchestrator.policy import get_policy

__all__ = [
    "AGENTS",
    "BUDGET",
    "GatewayOverFake",
    "Recorder",
    "SeqTask",
    "Steps",
    "agent_cli",
    "cline_cli",
    "cline_hubs_stopped",
    "gateway_over_fake",
    "held_results",
    "reuse_between_compactions",
    "reused_tokens",
]

ROOT = Path(__file__).resolve().parents[3]
AGENTS = Path(os.environ.get("CONTEXT_GRAPH_AGENTS", ROOT / ".agents" / "node_modules"))
"""The `node_modules` folder the real agent CLIs are installed in (`.ci/run` fills it)."""


def agent_cli(entry: str, name: str) -> Path:
    """The installed agent CLI's script at `AGENTS / entry`, or skip (fail in CI) without it."""
    script = AGENTS / entry
    if script.exists() and shutil.which("node"):
        return script
    if os.environ.get("CONTEXT_GRAPH_REQUIRE_AGENTS") == "1":
        pytest.fail(f"{name} is not installed at {script} (and node on PATH)")
    pytest.skip(f"{name} is not installed at {script}; .ci/run installs it")


_HISTORY = {
    "anthropic": "messages",
    "openai": "messages",
    "responses": "input",
    "gemini": "contents",
}
"""Each fake upstream wire's conversation field (the rest of the prompt leads it)."""
_HEAD = {
    "anthropic": ("system", "tools"),
    "openai": ("tools",),
    "responses": ("instructions", "tools"),
    "gemini": ("systemInstruction", "tools"),
}


_SEQ_STEP = re.compile(r"^seq (\d+) 3000$")


class SeqTask:
    """The scripted model of a long task: `seq <step> 3000` (a long output), `turns` times
    a conversation, then an answer.

    The step is read from the newest call the model made in the request, which is never
    compacted away (an agent names its session only in headers, which the fake's answers
    do not see). `tool` is the agent's shell tool; a request `side` tells apart (the
    agent's own title or memory call) is answered with text.
    """

    def __init__(self, tool: str, side: Callable[[dict[str, Any]], bool], turns: int) -> None:
        self.tool = tool
        self.side = side
        self.turns = turns

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if self.side(body):
            return {"text": "Counting"}
        done = self._done(body["messages"])
        if done >= self.turns:
            return {"text": "All done."}
        command = f"seq {done + 1} 3000"
        return {
            "text": f"Step {done + 1}.",
            "calls": [[self.tool, {"command": command, "description": "Count"}]],
        }

    @staticmethod
    def _done(messages: list[dict[str, Any]]) -> int:
        for message in reversed(messages):
            for call in message.get("tool_calls") or []:
                command = json.loads(call["function"]["arguments"]).get("command", "")
                found = _SEQ_STEP.match(command)
                if found:
                    return int(found.group(1))
        return 0


class Recorder:
    """A fake upstream's script, wrapped: each request it answers, with the gateway's threads.

    The upstream answers a request after the gateway rendered it, so the gateway's
    thread count read then says whether the agent rewrote its own history (a rewind, a
    masking pass: the gateway forks a new thread). Set `gateway` once it is made;
    `table` is the gateway's wire (`"chat"`, ...).
    """

    def __init__(self, respond: Callable[[dict[str, Any]], dict[str, Any]], table: str) -> None:
        self.respond = respond
        self.table = table
        self.gateway: Any = None
        self.calls: list[tuple[dict[str, Any], int]] = []

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        threads = 0
        if self.gateway is not None:
            threads = sum(len(ts) for ts in self.gateway.table_of(self.table).sessions.values())
        self.calls.append((body, threads))
        return self.respond(body)


class GatewayOverFake(NamedTuple):
    """What `gateway_over_fake` serves: the fake upstream, the gateway in front of it, and
    the gateway's URL (the agent's base URL). A tuple, so a test may unpack it in `with`."""

    upstream: ProviderServer
    gateway: Gateway
    url: str


@contextlib.contextmanager
def gateway_over_fake(
    wire: Wire,
    respond: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    budget: int,
    store: Path | None,
    wires: Sequence[str] | None = None,
    policy: str = "coding",
) -> Iterator[GatewayOverFake]:
    """A gateway (the named `policy`, `budget`) served in front of a strict fake of
    `wire`'s API answering with `respond`, as an agent CLI's test runs it.

    The fake counts prompts as the gateway does (`factor=1.0`) and refuses one over the
    budget, so a request the gateway lets past it fails the test at the upstream.
    `store` keeps the sessions (None: in memory only); `wires` are the wire formats the
    gateway manages (None: every one). A `Recorder` as `respond` is given the gateway, so
    it reads the threads at each request. Everything stops when the block ends.
    """
    with ProviderServer(wire, respond=respond, factor=1.0, limit=budget) as upstream:
        gateway = gateway_for(
            upstream.url, budget=budget, policy=get_policy(policy), store=store, wires=wires
        )
        if isinstance(respond, Recorder):
            respond.gateway = gateway
        with GatewayThread(gateway) as url:
            yield GatewayOverFake(upstream, gateway, url)


def held_results(gateway: Any, table: str) -> dict[str, list[int]]:
    """Each session of the gateway's `table` (`"chat"`, ...), as the tool results each of
    its threads' records holds."""
    return {
        session: [[n.kind for n in t.manager.raw].count("tool_result") for t in threads]
        for session, threads in gateway.table_of(table).sessions.items()
    }


def reused_tokens(server: ProviderServer, body: dict[str, Any], previous: dict[str, Any]) -> int:
    """The prompt tokens of `body` that lead `previous` too: what a prefix cache serves."""
    wire, key = server.wire, _HISTORY[server.wire]
    head = [k for k in _HEAD[wire] if k in body]
    if any(without_cache_marks(body.get(k)) != without_cache_marks(previous.get(k)) for k in head):
        return 0
    items, before = (
        without_cache_marks(body.get(key) or []),
        without_cache_marks(previous.get(key) or []),
    )
    shared = next(
        (i for i, (a, b) in enumerate(zip(items, before, strict=False)) if a != b),
        min(len(items), len(before)),
    )
    return server.count({**{k: body[k] for k in head}, key: body[key][:shared]})


def reuse_between_compactions(
    server: ProviderServer,
    recorder: Recorder,
    keep: Callable[[dict[str, Any]], bool] = lambda body: True,
) -> tuple[float, int]:
    """The cached share of the conversation's requests between compactions, and how many
    pairs it was read from.

    Of the requests `keep` picks (the task's, not a title's), each consecutive pair but
    those across a compaction: where the prompt shrank (the engine cut the history) or
    the agent rewrote its own history (a new thread). Anything else the engine changes
    in the part already sent counts against the share: the tokens the later request
    reused of the earlier, over the earlier's tokens, summed over the pairs.
    """
    calls = [(body, server.count(body), threads) for body, threads in recorder.calls if keep(body)]
    reused = offered = pairs = 0
    for (before, was, then), (after, size, now) in itertools.pairwise(calls):
        if size < was or now != then:
            continue
        reused += reused_tokens(server, after, before)
        offered += was
        pairs += 1
    return (reused / offered if offered else 0.0), pairs


_CLINE_HUB = "--cline-hub-daemon"


def cline_cli() -> Path:
    """The installed Cline CLI's launcher, or skip (fail in CI) without it."""
    return agent_cli("cline/bin/cline", "Cline")


def _cline_hubs() -> set[int]:
    """The processes running as Cline's hub daemon (a Cline run leaves one behind)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if _CLINE_HUB in (proc / "cmdline").read_text(errors="replace"):
                    found.add(int(proc.name))
            except OSError:
                continue
    return found


@pytest.fixture
def cline_hubs_stopped() -> Iterator[None]:
    """Stop the hub daemons Cline started during the test."""
    before = _cline_hubs()
    yield
    for pid in _cline_hubs() - before:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
