"""`python -m benchmarks.proxy`: what the gateway (`context-graph proxy`) costs and saves.

Two measurements, against the strict fake upstream (`benchmarks.provider_server`):

1. **Overhead per request.** The same client (httpx, one keep-alive connection per
   target) sends the same encoded body to the upstream directly and through a gateway
   in front of it (`context-graph proxy --memory`, in a process of its own as it is
   deployed; the fake upstream in a third process, so that its validating and counting
   of each body does not share the client's interpreter), the two alternated (which
   goes first swaps every pair), at histories
   of about 10k, 100k and 300k tokens, on the Anthropic Messages and the OpenAI
   Responses wire. The gateway's budget is above the history, so nothing is compacted:
   what is timed is reading the request, taking in what is new, rendering and
   forwarding. *Steady state*: the session already holds the history and each request
   adds one short turn (a tool call and its one-line output). *First request*: a new
   session each time, whose whole history the gateway takes in at once. The figure is
   the difference `through the gateway - direct` of each pair, in ms, each side less
   the time the upstream itself took to answer (its `Server-Timing` header, which the
   gateway passes back): the fake's validating and counting of a 100k-token body takes
   40-60 ms and varies by tens of ms from request to request, which the difference of
   two whole round trips would read as the gateway's.
2. **A whole scripted task** (`benchmarks.gateway_script`: the agent loop the gateway
   tests drive, one ~1,200-token tool output per turn): with no proxy and through the
   gateway at a budget. Tokens billed are the prompt tokens the upstream counted, summed.
   A request's *reused prefix* is the leading part of it the previous request also sent
   (the system prompt and tools unchanged, then the first messages equal once
   Anthropic's `cache_control` marks are set aside, as a prompt cache matches them):
   what a provider's prefix cache can serve. A *compaction* is a render after which the
   session's manager has applied proposals; between two compactions every request should
   reuse all of the previous one.

    python -m benchmarks.proxy            # the page's section (about 5 minutes)
    python -m benchmarks.proxy --quick    # seconds: small histories, a short task
    python -m benchmarks.proxy --profile  # cProfile of the gateway's render at 300k
    python -m benchmarks.proxy --sizes 100000 --steady 30 --first 3 --turns 5  # one size

Progress goes to stderr; the markdown section to stdout (`--json` writes the figures).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import io
import itertools
import json
import math
import os
import pstats
import re
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, get_args

import httpx

from benchmarks.gateway_script import BUDGET, MODEL, SYSTEM, TOOLS, Steps, agent, output
from benchmarks.provider_server import ProviderServer, Wire
from orchestrator.gateway import OUTCOME, GatewayThread, gateway_for
from orchestrator.gateway.server import RequestBody  # the profile times the gateway's own steps
from orchestrator.gateway.spelling import read_spelled
from orchestrator.gateway.wires import WIRES
from orchestrator.policy import get_policy

__all__ = [
    "Overhead",
    "Target",
    "TaskRun",
    "main",
    "measure_overhead",
    "overhead_section",
    "run_task",
    "task_section",
]

SIZES = (10_000, 100_000, 300_000)
QUICK_SIZES = (10_000,)
TARGET_MS = 15.0
"""The issue's target: p99 overhead at most 15 ms at 100k tokens."""
TARGET_SIZE = 100_000
ROOMY = 2_000_000
"""The gateway's budget in the overhead runs: above every history, so nothing compacts."""


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- the two wires' requests ------------------------------------------------------------


@dataclass(frozen=True)
class WireCase:
    """How one wire's request is made: its path, its body, its history and turns."""

    name: str
    path: str
    body: Callable[[list[dict[str, Any]]], dict[str, Any]]
    opening: Callable[[], list[dict[str, Any]]]
    turn: Callable[[int, str], list[dict[str, Any]]]
    """Step `n`'s items: the model's tool call, then the tool's output (`text`)."""


def _anthropic_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 1024,
        "system": SYSTEM,
        "tools": TOOLS,
        "messages": messages,
    }


def _anthropic_turn(step: int, text: str) -> list[dict[str, Any]]:
    call = f"toolu_{step:06d}"
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"Step {step}."},
                {"type": "tool_use", "id": call, "name": "run", "input": {"step": step}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": text}],
        },
    ]


_FUNCTION_TOOLS = [
    {
        "type": "function",
        "name": tool["name"],
        "description": tool["description"],
        "parameters": tool["input_schema"],
        "strict": False,
    }
    for tool in TOOLS
]


def _responses_body(items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"model": "gpt-4.1", "instructions": SYSTEM, "tools": _FUNCTION_TOOLS, "input": items}


def _responses_turn(step: int, text: str) -> list[dict[str, Any]]:
    call = f"call_{step:06d}"
    arguments = json.dumps({"step": step})
    return [
        {"type": "function_call", "call_id": call, "name": "run", "arguments": arguments},
        {"type": "function_call_output", "call_id": call, "output": text},
    ]


CASES = {
    "anthropic": WireCase(
        "anthropic",
        "/v1/messages",
        _anthropic_body,
        lambda: [{"role": "user", "content": "Run the steps."}],
        _anthropic_turn,
    ),
    "responses": WireCase(
        "responses",
        "/v1/responses",
        _responses_body,
        lambda: [{"role": "user", "content": "Run the steps."}],
        _responses_turn,
    ),
}


def history(case: WireCase, server: ProviderServer, tokens: int) -> list[dict[str, Any]]:
    """A history of about `tokens` prompt tokens (as `server` counts), of tool turns."""
    start = case.opening()
    one = server.count(case.body(start + case.turn(0, output(0))))
    base = server.count(case.body(start))
    steps = max(1, math.ceil((tokens - base) / max(1, one - base)))
    items = list(start)
    for step in range(steps):
        items += case.turn(step, output(step))
    return items


# --- the overhead run ----------------------------------------------------------------------


@dataclass
class Overhead:
    """One wire at one history size: the pairs' times, in ms."""

    wire: str
    size: int
    tokens: int
    """The history's prompt tokens as the upstream counts them (the first request)."""
    steady_direct: list[Timing] = field(default_factory=list)
    steady_proxy: list[Timing] = field(default_factory=list)
    steady_cpu: list[float] = field(default_factory=list)
    """The gateway process's CPU time for each steady request, in ms (empty: not Linux)."""
    first_direct: list[Timing] = field(default_factory=list)
    first_proxy: list[Timing] = field(default_factory=list)

    @property
    def steady(self) -> list[float]:
        return _overheads(self.steady_direct, self.steady_proxy)

    @property
    def first(self) -> list[float]:
        return _overheads(self.first_direct, self.first_proxy)


@dataclass(frozen=True)
class Timing:
    """One request's round trip as the client timed it, and the upstream's own part."""

    wall: float
    """From sending the request to the whole answer, in ms."""
    upstream: float
    """What the upstream spent answering (its `Server-Timing`), in ms."""

    @property
    def beyond_upstream(self) -> float:
        return self.wall - self.upstream


def _overheads(direct: Sequence[Timing], proxy: Sequence[Timing]) -> list[float]:
    """Each pair's `through - direct`, the upstream's own time set aside on both sides."""
    return [p.beyond_upstream - d.beyond_upstream for d, p in zip(direct, proxy, strict=True)]


def percentile(values: Sequence[float], share: float) -> float:
    """The `share` percentile (0..1) of `values`, interpolated between the nearest ranks."""
    ordered = sorted(values)
    position = share * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    between = ordered[low] + (ordered[high] - ordered[low]) * (position - low)
    # Kept between its two ranks: float rounding may step just past either.
    return min(max(between, ordered[low]), ordered[high])


class _Pair:
    """A client that times one encoded body sent direct and through the gateway."""

    def __init__(
        self, direct: str, proxy: str, path: str, stack: ExitStack, gateway: int | None = None
    ) -> None:
        self._direct = stack.enter_context(httpx.Client(base_url=direct, timeout=600))
        self._proxy = stack.enter_context(httpx.Client(base_url=proxy, timeout=600))
        self._path = path
        self._gateway = gateway
        self.sent = 0
        self.cpu: float | None = None
        """The gateway process's CPU time in the last request through it, in ms."""

    def time(self, raw: bytes, session: str) -> tuple[Timing, Timing]:
        """(direct, through the gateway); which goes first swaps every call."""
        headers = {
            "content-type": "application/json",
            "x-api-key": "bench-key",
            "authorization": "Bearer bench-key",
            "anthropic-version": "2023-06-01",
            "x-context-graph-session": session,
        }
        self.sent += 1
        if self.sent % 2:
            direct = self._one(self._direct, raw, headers, proxied=False)
            proxy = self._through(raw, headers)
        else:
            proxy = self._through(raw, headers)
            direct = self._one(self._direct, raw, headers, proxied=False)
        return direct, proxy

    def _through(self, raw: bytes, headers: dict[str, str]) -> Timing:
        before = process_cpu_ms(self._gateway)
        spent = self._one(self._proxy, raw, headers, proxied=True)
        after = process_cpu_ms(self._gateway)
        self.cpu = None if before is None or after is None else after - before
        return spent

    def _one(
        self, client: httpx.Client, raw: bytes, headers: dict[str, str], *, proxied: bool
    ) -> Timing:
        started = time.perf_counter()
        answer = client.post(self._path, content=raw, headers=headers)
        spent = (time.perf_counter() - started) * 1000
        if answer.status_code != 200:
            msg = f"{self._path} answered {answer.status_code}: {answer.text[:300]}"
            raise RuntimeError(msg)
        if proxied and answer.headers.get(OUTCOME) != "rendered":
            msg = f"the gateway did not render the request ({answer.headers.get(OUTCOME)})"
            raise RuntimeError(msg)
        return Timing(spent, upstream_ms(answer.headers.get("server-timing", "")))


def upstream_ms(server_timing: str) -> float:
    """The `answer` duration of a `Server-Timing` header (`answer;dur=41.5`), in ms."""
    found = re.search(r"(?:^|,)\s*answer\s*;\s*dur=([0-9.]+)", server_timing)
    if found is None:
        msg = f"the answer has no Server-Timing `answer;dur=` (got {server_timing!r})"
        raise RuntimeError(msg)
    return float(found.group(1))


def process_cpu_ms(pid: int | None) -> float | None:
    """CPU time a process has run, all its threads, in ms (`None`: not on Linux).

    Read from the scheduler's nanosecond counts: on a loaded machine the wall time of a
    request mostly says how long the process waited for a core, its CPU time what the
    process itself did.
    """
    if pid is None:
        return None
    total = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for thread in threads:
        try:
            with open(f"/proc/{pid}/task/{thread}/schedstat", encoding="ascii") as stat:
                total += int(stat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue  # a thread that ended meanwhile
    return total / 1e6


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False).encode()


_UPSTREAM_OF = {"anthropic": "anthropic", "responses": "openai"}
"""`context-graph proxy --upstream` for each wire."""


@contextmanager
def proxy_process(wire: str, upstream: str, budget: int) -> Iterator[tuple[str, int]]:
    """`context-graph proxy` to `upstream` in a process of its own, as it is deployed.

    Yields its URL and its process id.

    The gateway's work then does not share an interpreter (and its lock and collector)
    with the client and the fake upstream that time it.
    """
    command = [
        sys.executable,
        "-m",
        "orchestrator.cli",
        "proxy",
        "--upstream",
        _UPSTREAM_OF[wire],
        "--upstream-url",
        upstream,
        "--budget",
        str(budget),
        "--memory",
        "--port",
        "0",
    ]
    with _announced(command, "`context-graph proxy`") as (url, pid):
        yield url, pid


@contextmanager
def upstream_process(wire: str) -> Iterator[str]:
    """The fake upstream (`ProviderServer(wire)`) in a process of its own; its URL.

    Its validation and counting of each 100k-token body would otherwise share the
    client's interpreter and make the times it takes part of the noise.
    """
    command = [sys.executable, "-m", "benchmarks.proxy", "--serve-upstream", wire]
    with _announced(command, "the fake upstream") as (url, _):
        yield url


@contextmanager
def _announced(command: list[str], name: str) -> Iterator[tuple[str, int]]:
    """Run `command`, which prints its URL on its first line, until the block ends.

    Yields the URL and the process id.
    """
    environment = {**os.environ, "PYTHONUNBUFFERED": "1"}  # the announce line comes at once
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=environment) as served:
        try:
            assert served.stdout is not None
            announced = served.stdout.readline()
            found = re.search(r"http://\S+", announced)
            if found is None:
                msg = f"{name} did not announce its URL: {announced!r}"
                raise RuntimeError(msg)
            yield found.group(0), served.pid
        finally:
            served.terminate()
            served.wait(timeout=30)


def serve_upstream(wire: str) -> None:
    """Serve `ProviderServer(wire)` until the process is ended; print its URL first.

    It keeps no body: nothing reads them here, and kept they make the garbage
    collector's full passes long pauses in the times measured.
    """
    with ProviderServer(wire, keep=False) as server:  # type: ignore[arg-type]
        gc.freeze()
        print(server.url, flush=True)
        threading.Event().wait()


def measure_overhead(wire: str, sizes: Sequence[int], *, steady: int, first: int) -> list[Overhead]:
    """The overhead of `steady` one-turn requests and `first` new sessions at each size."""
    case = CASES[wire]
    results: list[Overhead] = []
    with ExitStack() as stack:
        # Counts here; the requests go to the same server in a process of its own.
        server = stack.enter_context(ProviderServer(wire))  # type: ignore[arg-type]
        upstream = stack.enter_context(upstream_process(wire))
        proxy, pid = stack.enter_context(proxy_process(wire, upstream, ROOMY))
        pair = _Pair(upstream, proxy, case.path, stack, gateway=pid)
        for size in sizes:
            items = history(case, server, size)
            tokens = server.count(case.body(items))
            progress(f"{wire} at {size:,} tokens ({tokens:,} counted)")
            figures = Overhead(wire, size, tokens)
            raw = _encode(case.body(items))
            for n in range(first):
                direct, proxied = pair.time(raw, f"first-{size}-{n}")
                figures.first_direct.append(direct)
                figures.first_proxy.append(proxied)
            session = f"steady-{size}"
            pair.time(raw, session)  # the session takes the history in
            # What lives now lives through the run: a full collection in this process
            # would otherwise walk it (the SDKs' modules, the history) inside a timed
            # request. Handed back after it (`--quick` runs inside the test process).
            gc.freeze()
            try:
                for n in range(steady):
                    items += case.turn(10_000 + n, f"ok {n}")
                    direct, proxied = pair.time(_encode(case.body(items)), session)
                    figures.steady_direct.append(direct)
                    figures.steady_proxy.append(proxied)
                    if pair.cpu is not None:
                        figures.steady_cpu.append(pair.cpu)
            finally:
                gc.unfreeze()
            results.append(figures)
    return results


def overhead_rows(runs: Sequence[Overhead]) -> list[str]:
    """The overhead table's rows (markdown)."""
    rows = [
        "| wire | history (tokens) | request | pairs | direct p50 | overhead p50 | overhead p99 |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for run in runs:
        for label, direct, diffs in (
            ("steady state (one new turn)", run.steady_direct, run.steady),
            ("first of a session", run.first_direct, run.first),
        ):
            rows.append(
                f"| {run.wire} | {run.tokens:,} | {label} | {len(diffs)} | "
                f"{percentile([t.wall for t in direct], 0.5):.1f} ms | "
                f"{percentile(diffs, 0.5):.1f} ms | "
                f"{percentile(diffs, 0.99):.1f} ms |"
            )
    return rows


def cpu_rows(runs: Sequence[Overhead]) -> list[str]:
    """The gateway's own CPU time per steady request (markdown; empty: not measured)."""
    measured = [run for run in runs if run.steady_cpu]
    if not measured:
        return []
    rows = [
        "| wire | history (tokens) | requests | gateway CPU p50 | gateway CPU p99 |",
        "|---|---:|---:|---:|---:|",
    ]
    for run in measured:
        rows.append(
            f"| {run.wire} | {run.tokens:,} | {len(run.steady_cpu)} | "
            f"{percentile(run.steady_cpu, 0.5):.1f} ms | "
            f"{percentile(run.steady_cpu, 0.99):.1f} ms |"
        )
    return rows


@dataclass(frozen=True)
class Target:
    """One of the issue's targets, judged on this run."""

    target: str
    measured: str
    met: bool

    def row(self) -> str:
        return f"| {self.target} | {self.measured} | {'met' if self.met else 'not met'} |"


def overhead_targets(runs: Sequence[Overhead]) -> list[Target]:
    """Steady-state p99 overhead at 100k tokens, on each wire (the issue's target)."""
    return [
        Target(
            f"{run.wire}: p99 overhead <= {TARGET_MS:.0f} ms at 100k tokens (steady state)",
            f"{percentile(run.steady, 0.99):.1f} ms",
            percentile(run.steady, 0.99) <= TARGET_MS,
        )
        for run in runs
        if run.size == TARGET_SIZE
    ]


# --- the scripted task -----------------------------------------------------------------------


@dataclass
class TaskRun:
    """One run of the scripted task: what the upstream saw."""

    label: str
    budget: int | None
    requests: int
    invalid: int
    billed: int
    largest: int
    reused: int
    """Prompt tokens of each request that the previous one also sent, summed."""
    compactions: int
    reuse_between_compactions: float | None
    """Between compactions: the tokens of the previous request a request reused, over the
    previous request's tokens (`None`: no such pair)."""
    prompts: list[int] = field(default_factory=list)

    @property
    def reused_share(self) -> float:
        return self.reused / self.billed if self.billed else 0.0


def _unmarked(value: Any) -> Any:
    """`value` without Anthropic's `cache_control` marks (a prompt cache matches past them)."""
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def reused_prefix(server: ProviderServer, body: dict[str, Any], previous: dict[str, Any]) -> int:
    """The prompt tokens of `body` that lead `previous` too (0: the system or tools changed)."""
    now, before = _unmarked(body), _unmarked(previous)
    if now.get("system") != before.get("system") or now.get("tools") != before.get("tools"):
        return 0
    messages, earlier = now.get("messages", []), before.get("messages", [])
    shared = next(
        (i for i, (a, b) in enumerate(zip(messages, earlier, strict=False)) if a != b),
        min(len(messages), len(earlier)),
    )
    if shared == 0:
        return 0
    return server.count({**body, "messages": body["messages"][:shared]})


def run_task(turns: int, budget: int | None) -> TaskRun:
    """The scripted task of `turns` tool calls, direct (`budget` None) or through a gateway."""
    applied: list[int] = []
    with ExitStack() as stack:
        server = stack.enter_context(
            ProviderServer("anthropic", respond=Steps(turns), factor=1.0, limit=budget)
        )
        url = server.url
        gateway = None
        if budget is not None:
            gateway = gateway_for(
                server.url, budget=budget, policy=get_policy("coding"), store=None
            )
            url = stack.enter_context(GatewayThread(gateway))
        messages = [{"role": "user", "content": "Run the steps."}]
        for _ in range(turns + 1):
            agent(url, "task", messages=messages, turns=1)
            if gateway is not None:
                (thread,) = gateway.table.sessions["task"]
                applied.append(thread.manager.stats().proposals_applied)
            if messages[-1]["role"] == "assistant":
                break
        return _task_figures(server, budget, applied)


def _task_figures(server: ProviderServer, budget: int | None, applied: list[int]) -> TaskRun:
    bodies, prompts = server.requests, server.prompts
    reused = [0] + [reused_prefix(server, b, a) for a, b in itertools.pairwise(bodies)]
    # Request i compacted when the manager's applied proposals grew during its render.
    compacted = {i for i, (a, b) in enumerate(itertools.pairwise([0, *applied])) if b > a}
    steady = [i for i in range(1, len(bodies)) if i not in compacted]
    kept = sum(reused[i] for i in steady)
    offered = sum(prompts[i - 1] for i in steady)
    return TaskRun(
        label="no proxy" if budget is None else f"through the gateway, budget {budget:,}",
        budget=budget,
        requests=len(bodies),
        invalid=len(server.refused),
        billed=sum(prompts),
        largest=max(prompts, default=0),
        reused=sum(reused),
        compactions=len(compacted),
        # With no proxy nothing compacts, and there is nothing to compare the reuse with.
        reuse_between_compactions=kept / offered if offered and budget is not None else None,
        prompts=list(prompts),
    )


def task_targets(runs: Sequence[TaskRun]) -> list[Target]:
    """The task's invariants through the gateway: valid, under budget, its prefix kept."""
    targets: list[Target] = []
    for run in runs:
        if run.budget is None:
            continue
        where = f"task at {run.budget:,}"
        between = run.reuse_between_compactions
        targets += [
            Target(f"{where}: invalid requests = 0", str(run.invalid), run.invalid == 0),
            Target(
                f"{where}: every request under the budget",
                f"largest {run.largest:,}",
                run.largest <= run.budget,
            ),
            Target(
                f"{where}: reuse between compactions >= 0.9",
                "-" if between is None else f"{between:.3f}",
                between is not None and between >= 0.9,
            ),
        ]
    return targets


def task_rows(runs: Sequence[TaskRun]) -> list[str]:
    """The task table's rows (markdown), each against the first run (no proxy)."""
    rows = [
        "| run | requests | invalid | largest prompt | tokens billed | vs no proxy | "
        "reused prefix | compactions | reuse between compactions |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    base = runs[0].billed
    for run in runs:
        between = (
            "-" if run.reuse_between_compactions is None else f"{run.reuse_between_compactions:.3f}"
        )
        rows.append(
            f"| {run.label} | {run.requests} | {run.invalid} | {run.largest:,} | "
            f"{run.billed:,} | {run.billed / base:.2f}x | {run.reused_share:.0%} | "
            f"{run.compactions} | {between} |"
        )
    return rows


# --- profile, section, main -------------------------------------------------------------------


def profile_render(wire: str, size: int, turns: int, top: int = 25) -> str:
    """cProfile of the gateway's handling (read, take in, render, encode) of `turns`
    one-turn requests on a session already holding a `size`-token history."""
    case = CASES[wire]
    with ProviderServer(wire) as server:  # type: ignore[arg-type]
        items = history(case, server, size)
    gateway = gateway_for(
        "http://127.0.0.1:9", budget=ROOMY, policy=get_policy("coding"), store=None, wires=(wire,)
    )
    headers = {"x-context-graph-session": "profiled"}
    prepare = gateway._render

    async def handle(raw: bytes) -> None:
        body, spelled = read_spelled(raw)
        await prepare(headers, RequestBody(raw, body, spelled), WIRES[wire], counting=False)

    asyncio.run(handle(_encode(case.body(items))))
    bodies = []
    for n in range(turns):
        items = items + case.turn(10_000 + n, f"ok {n}")
        bodies.append(_encode(case.body(items)))
    profiler = cProfile.Profile()
    with profiler:
        for raw in bodies:
            asyncio.run(handle(raw))
    for table in gateway._tables.values():
        table.close()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(top)
    return text.getvalue()


def overhead_section(runs: Sequence[Overhead]) -> list[str]:
    return [
        "The overhead of each request: the time through the gateway minus the time of the "
        "same body sent direct, pair by pair, each less the time the upstream itself took "
        "to answer it (its `Server-Timing`; the fake's validating and counting of a body "
        "varies by tens of ms from one request to the next, which is not the gateway's). "
        "The *direct p50* column is the whole direct round trip, the upstream's time "
        "included.",
        "",
        *overhead_rows(runs),
        *cpu_section(runs),
    ]


def cpu_section(runs: Sequence[Overhead]) -> list[str]:
    rows = cpu_rows(runs)
    if not rows:
        return []
    return [
        "",
        "The gateway process's own CPU time in each steady-state request (all its threads, "
        "from the scheduler's counts): on a machine shared with other work, the wall times "
        "above also hold the time the gateway waited for a core.",
        "",
        *rows,
    ]


def targets_section(targets: Sequence[Target]) -> list[str]:
    return ["| target | measured | met |", "|---|---:|---|", *(t.row() for t in targets)]


def task_section(runs: Sequence[TaskRun], turns: int) -> list[str]:
    return [
        f"The scripted task: {turns} tool calls of about 1,200 tokens each, then an answer "
        "(Anthropic wire, the upstream counting as the engine does).",
        "",
        *task_rows(runs),
    ]


@contextmanager
def _quiet() -> Iterator[None]:
    # The overhead run's sessions have no model to size them: budget is given, so no warning
    # is expected; anything else the engine warns about is still shown once.
    with warnings.catch_warnings():
        warnings.simplefilter("once")
        yield


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="seconds: 10k only, a short task")
    parser.add_argument(
        "--sizes", help="history sizes in tokens, comma-separated (default 10k,100k,300k)"
    )
    parser.add_argument("--steady", type=int, default=100, help="one-turn requests per size")
    parser.add_argument("--first", type=int, default=10, help="new sessions per size")
    parser.add_argument("--turns", type=int, default=45, help="tool calls of the scripted task")
    parser.add_argument("--wires", default="anthropic,responses")
    parser.add_argument("--json", type=Path, help="write the figures to this file")
    parser.add_argument("--profile", action="store_true", help="print a cProfile and stop")
    parser.add_argument(
        "--serve-upstream",
        metavar="WIRE",
        choices=get_args(Wire),  # any other name served, and failed every request
        help=argparse.SUPPRESS,
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    if args.serve_upstream:
        serve_upstream(args.serve_upstream)
        return 0
    if args.profile:
        print(profile_render("anthropic", 300_000, 30))
        return 0
    sizes: tuple[int, ...] = QUICK_SIZES if args.quick else SIZES
    if args.sizes:
        sizes = tuple(int(size) for size in args.sizes.split(","))
    steady, first, turns = (10, 3, 14) if args.quick else (args.steady, args.first, args.turns)
    budgets = (BUDGET,) if args.quick else (BUDGET, 4 * BUDGET)
    started, load = time.perf_counter(), os.getloadavg()[0]
    with _quiet():
        overhead = [
            run
            for wire in args.wires.split(",")
            for run in measure_overhead(wire, sizes, steady=steady, first=first)
        ]
        progress(f"the scripted task, {turns} turns")
        tasks = [run_task(turns, None), *(run_task(turns, b) for b in budgets)]
    seconds = time.perf_counter() - started
    targets = overhead_targets(overhead) + task_targets(tasks)
    print(
        "\n".join(
            [
                *overhead_section(overhead),
                "",
                *task_section(tasks, turns),
                "",
                *targets_section(targets),
                "",
                f"Run in {seconds:.0f} s on {os.cpu_count()} cores; load average (1 min) "
                f"{load:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
            ]
        )
    )
    progress(f"done in {seconds:.0f} s")
    if args.json is not None:
        figures = {
            "overhead": [
                {**asdict(run), "steady": run.steady, "first": run.first} for run in overhead
            ],
            "tasks": [asdict(run) for run in tasks],
            "targets": [asdict(target) for target in targets],
            "seconds": seconds,
        }
        args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
