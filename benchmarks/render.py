"""Render speed and safety: context-graph against LangChain `trim_messages`, every call.

Replays the longest shared session event by event. After every event, both contenders
produce the history for the next model call under the same budget (half the session's
final size, by the same cl100k_base count):

- context-graph: one `Renderer` kept across the session, `render(graph, budget=...)`;
- LangChain: `trim_messages(messages, max_tokens=budget, strategy="last",
  token_counter=<tiktoken cl100k_base>, start_on="human", include_system=True)` on the
  message list an agent would hold, converted to OpenAI dicts for checking.

Measured in one run: time per render and in total (and their ratio), and at each model
call of the recorded session (right before each assistant turn): invalid payloads (our
validator, OpenAI rules) and calls that lost the user's latest request or the first one.
With --plot, writes a PNG of time per render against the event index.

    python -m benchmarks.render [TRACE] [--plot docs/img/render_time.png]
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.compare.facts import strings_in
from benchmarks.compare.plots import matplotlib_available
from benchmarks.compare.sessions import session_files
from context_graph import (
    AgentEvent,
    AssistantTurn,
    BudgetExceededError,
    Compaction,
    ContextGraph,
    FileRead,
    Note,
    SubagentResult,
    SystemPrompt,
    TiktokenCounter,
    ToolResult,
    UserTurn,
)
from context_graph.importers import load_sessions
from context_graph.render import Renderer
from context_graph.testing import strict_trace
from context_graph.validate.request import validate
from orchestrator.replay import model_call_points

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_TRACES = ROOT.parent / "shared" / "traces"


@dataclass
class Contender:
    """What one contender did over the replay."""

    name: str
    times_ns: list[int] = field(default_factory=list)
    invalid: int = 0
    lost_latest_request: int = 0
    lost_first_request: int = 0
    over_budget: int = 0
    refused: int = 0
    """Model calls at which render raised BudgetExceededError (the floor did not fit)."""
    calls: int = 0
    """Model calls checked: the renders right before each recorded assistant turn."""

    @property
    def total_ms(self) -> float:
        return sum(self.times_ns) / 1e6


def longest_session(traces: Path) -> tuple[Path, int]:
    """The main session (sub-agent transcripts excluded) with the most events."""
    best: tuple[Path, int] | None = None
    for path in session_files(traces):
        events = len(load_sessions(path, strict=strict_trace(path))[0].events)
        if best is None or events > best[1]:
            best = (path, events)
    if best is None:
        msg = f"no traces under {traces}"
        raise SystemExit(msg)
    return best


# --- LangChain side ------------------------------------------------------------------


def _lc_messages(event: AgentEvent) -> list[Any]:
    """The LangChain messages an agent would append for one event."""
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

    text = _text(event)
    if isinstance(event, SystemPrompt | Note):
        return [SystemMessage(text)]
    if isinstance(event, UserTurn | Compaction):
        return [HumanMessage(text)]
    if isinstance(event, AssistantTurn):
        calls = [
            {"name": c.name, "args": _args(c.arguments), "id": c.id, "type": "tool_call"}
            for c in event.tool_calls
        ]
        return [AIMessage(text, tool_calls=calls)]
    if isinstance(event, ToolResult | FileRead | SubagentResult):
        if event.call_id is None:
            return [HumanMessage(text)]
        return [ToolMessage(text, tool_call_id=event.call_id)]
    return []


def _args(arguments: str) -> dict[str, Any]:
    import json

    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


def _lc_counter(counter: TiktokenCounter) -> Any:
    """A token counter for trim_messages: cl100k_base, 3 tokens per message like ours."""

    def count(messages: list[Any]) -> int:
        total = 0
        for message in messages:
            content = message.content if isinstance(message.content, str) else str(message.content)
            total += 3 + counter.count(content)
            for call in getattr(message, "tool_calls", None) or ():
                total += 8 + counter.count(call["name"]) + counter.count(str(call["args"]))
        return total

    return count


# --- the replay ---------------------------------------------------------------------


def _requests(events: list[AgentEvent], upto: int) -> tuple[str | None, str | None]:
    """The first and the latest user request in view at event `upto`.

    A compaction recorded in the session (Claude Code's) replaces what came before it,
    so the first request in view is the first one after the latest compaction.
    """
    start = 0
    for index in range(upto, -1, -1):
        if isinstance(events[index], Compaction):
            start = index + 1
            break
    users = [e for e in events[start : upto + 1] if isinstance(e, UserTurn)]
    texts = [_text(e) for e in users]
    texts = [t for t in texts if t.strip()]
    if not texts:
        return None, None
    return texts[0], texts[-1]


def _text(event: Any) -> str:
    return "\n".join(getattr(p, "text", "") for p in getattr(event, "content", ()))


def _score(
    contender: Contender, payload: dict[str, Any], first: str | None, latest: str | None
) -> None:
    if validate(payload, "openai"):
        contender.invalid += 1
    rendered = "\n".join(strings_in(payload, []))
    if latest and latest.strip()[:200] not in rendered:
        contender.lost_latest_request += 1
    if first and first.strip()[:200] not in rendered:
        contender.lost_first_request += 1


def run(trace: Path, *, budget_ratio: float) -> tuple[Contender, Contender, int, int]:
    """Replay `trace`; return both contenders, the number of events and the budget."""
    from langchain_core.messages import convert_to_openai_messages, trim_messages

    events = load_sessions(trace, strict=strict_trace(trace))[0].events
    counter = TiktokenCounter()
    full = ContextGraph(counter=counter)
    full.ingest(events)
    budget = int(Renderer(format="openai").render(full).tokens * budget_ratio)

    ours, theirs = Contender("context-graph"), Contender("langchain trim_messages")
    graph = ContextGraph(counter=counter)
    renderer = Renderer(format="openai")
    held: list[Any] = []
    lc_count = _lc_counter(counter)
    calls = 0
    call_points = model_call_points(events)
    for index, event in enumerate(events):
        graph.add(event)
        held.extend(_lc_messages(event))
        first, latest = _requests(events, index)
        # The recorded session called the model right before each assistant turn (and
        # the agent would call it after the last event): only those renders were sent,
        # so only they are checked. Every render is timed.
        scored = index + 1 in call_points
        calls += scored

        start = time.perf_counter_ns()
        try:
            result = renderer.render(graph, budget=budget)
        except BudgetExceededError:
            ours.times_ns.append(time.perf_counter_ns() - start)
            ours.refused += scored
        else:
            ours.times_ns.append(time.perf_counter_ns() - start)
            if scored:
                _score(ours, result.payload, first, latest)
                ours.over_budget += result.tokens > budget

        start = time.perf_counter_ns()
        trimmed = trim_messages(
            held,
            max_tokens=budget,
            strategy="last",
            token_counter=lc_count,
            start_on="human",
            include_system=True,
        )
        theirs.times_ns.append(time.perf_counter_ns() - start)
        if scored:
            payload = {"messages": convert_to_openai_messages(trimmed)}
            _score(theirs, payload, first, latest)
            theirs.over_budget += lc_count(trimmed) > budget
    ours.calls = theirs.calls = calls
    return ours, theirs, len(events), budget


def _plot(ours: Contender, theirs: Contender, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for contender in (theirs, ours):
        ax.plot([t / 1e3 for t in contender.times_ns], label=contender.name, linewidth=1)
    ax.set_xlabel("event (a render after each)")
    ax.set_ylabel("time per call (microseconds, log)")
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(ours: Contender, theirs: Contender, events: int, budget: int, trace: Path) -> str:
    """A Markdown table of one run."""
    rows = [
        f"trace: {trace.name} ({events} events, {ours.calls} model calls, "
        f"budget {budget:,} tokens)",
        "",
        "Time: a render after every event. Checks: at the model calls only.",
        "",
        "| contender | total | mean per render | last 10% of renders, mean | invalid payloads "
        "| lost latest request | lost first request | over budget | refused (floor too big) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for c in (ours, theirs):
        tail = c.times_ns[-max(1, len(c.times_ns) // 10) :]
        rows.append(
            f"| {c.name} | {c.total_ms:.1f} ms | {c.total_ms * 1e3 / len(c.times_ns):.0f} us "
            f"| {sum(tail) / len(tail) / 1e3:.0f} us | {c.invalid} | {c.lost_latest_request} "
            f"| {c.lost_first_request} | {c.over_budget} | {c.refused} |"
        )
    rows.append("")
    rows.append(
        f"total time ratio (LangChain / context-graph): {theirs.total_ms / ours.total_ms:.1f}x"
    )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", type=Path)
    parser.add_argument("--traces", type=Path, default=DEFAULT_TRACES)
    parser.add_argument("--plot", type=Path, help="write a PNG of time per call here")
    parser.add_argument(
        "--budget-ratio", type=float, default=0.5, help="budget as a share of the final size"
    )
    args = parser.parse_args(argv)
    if args.plot and not matplotlib_available():
        # Checked before the replay, which takes minutes: the plot is the last step.
        parser.error("--plot needs matplotlib, which is not installed (pip install '.[bench]')")
    trace = args.trace or longest_session(args.traces)[0]
    ours, theirs, events, budget = run(trace, budget_ratio=args.budget_ratio)
    print(report(ours, theirs, events, budget, trace))
    if args.plot:
        _plot(ours, theirs, args.plot, f"render after every event: {trace.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
