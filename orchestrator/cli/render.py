"""`context-graph render`: compact a session to a budget and write the request body.

By default the session goes through a `ContextManager` configured by a policy (the
pipeline `replay` runs), which compacts until the request fits; the command refuses
(exit 3) only where the manager does. `--no-compact` renders the pristine graph, which
can only leave out whole old turns. With `--redact` (or a policy's `redact` stage) the
request is redacted (`--no-compact`: the pristine graph's redacted copy), and the body
and the summary line go through the same `OutputScreen` as every other output.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import anyio

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from context_graph.render import Renderer, RenderResult
from context_graph.render.tools import ToolSpec
from orchestrator.cli.errors import EXIT_OK
from orchestrator.cli.progress import Progress
from orchestrator.cli.session import (
    check_outputs,
    choose_policy,
    load,
    load_tools,
    output_screen,
    write_text,
)
from orchestrator.manager import ContextManager
from orchestrator.report.screen import OutputScreen
from orchestrator.working.buffer import AuditEntry, WorkingGraph
from processors.base import ProcessorContext, Redactor, run_processor

__all__ = ["run_render"]


@dataclass(frozen=True, slots=True)
class _Rendered:
    """A render and what led to it, for the summary line."""

    result: RenderResult
    before: int
    """Tokens of the pristine history, rendered whole."""
    audit: tuple[AuditEntry, ...] = ()
    policy: str | None = None
    """The name of the policy that compacted it; `None` with --no-compact."""


def run_render(args: argparse.Namespace, progress: Progress) -> int:
    """Render the session; the body to stdout or `-o`, one summary line to stderr."""
    check_outputs(o=args.output)
    tools = load_tools(args.tools)
    # The renderer or the manager is made before the session is read, so that a bad
    # option (breakpoints with another format, a broken policy) fails at once.
    if args.no_compact:
        renderer = Renderer(
            format=args.provider, cache_breakpoints=args.cache_breakpoints, tools=tools
        )
        screen = output_screen(args)
        graph = ContextGraph()
        graph.ingest(_events(args, progress, screen))
        rendered = _render_pristine(renderer, graph, args.budget, progress, screen.redactor)
        screen.learn(graph)
    else:
        policy = choose_policy(args.policy)
        manager = ContextManager(
            format=args.provider,
            budget=args.budget,
            policy=policy.replace(
                cache_breakpoints=args.cache_breakpoints, redact_secrets=args.redact
            ),
            tools=tools,
        )
        screen = output_screen(args, manager.redactor)
        events = _events(args, progress, screen)
        rendered = _render_managed(manager, events, policy.name, progress, tools)
        screen.learn(manager.raw)
    progress.close()
    text = screen.json_text(rendered.result.to_json(indent=2), indent=2) + "\n"
    if args.output is not None:
        write_text(args.output, text, "-o")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    _summarize(args, rendered, screen)
    return EXIT_OK


def _events(
    args: argparse.Namespace, progress: Progress, screen: OutputScreen
) -> Sequence[AgentEvent]:
    events = load(args, progress, screen).session.events
    progress.phase(f"ingesting {len(events):,} events...")
    return events


def _render_pristine(
    renderer: Renderer,
    graph: ContextGraph,
    budget: int | None,
    progress: Progress,
    redactor: Redactor | None,
) -> _Rendered:
    """The floor-only render: whole old turns left out, nothing compacted (but redacted)."""
    progress.phase("rendering...")
    if redactor is None:
        result = renderer.render(graph, budget=budget)
        return _Rendered(result, result.tokens_before)
    working = WorkingGraph(graph)
    view = working.snapshot()
    ctx = ProcessorContext(graph=view, tokens=working.token_cache)
    proposal = anyio.run(run_processor, redactor, [view[i] for i in view.current_ids()], ctx)
    if not proposal.empty:
        working.apply(proposal)
    result = renderer.render(working, budget=budget)
    return _Rendered(result, result.tokens_before)


def _render_managed(
    manager: ContextManager,
    events: Sequence[AgentEvent],
    policy: str,
    progress: Progress,
    tools: Sequence[ToolSpec],
) -> _Rendered:
    """The manager's render: compacted by the policy's pipeline until it fits."""
    manager.ingest(events)
    progress.phase("compacting and rendering...")
    manager.bus.connect("proposal_applied", _count_edits(progress))
    result = manager.render_sync()
    before = Renderer(format=result.format, tools=tools).render(manager.raw).tokens
    return _Rendered(result, before, manager.working.audit(), policy)


def _count_edits(progress: Progress) -> Callable[..., None]:
    """A bus receiver that keeps the phase line up to date as edits are applied."""
    edits = 0

    def applied(sender: object, **payload: object) -> None:
        nonlocal edits
        edits += 1
        if edits % 25 == 1:
            progress.phase(f"compacting: {edits:,} edits so far...")

    return applied


def _summarize(args: argparse.Namespace, rendered: _Rendered, screen: OutputScreen) -> None:
    result, audit = rendered.result, rendered.audit
    saved = sum(entry.tokens_saved for entry in audit)
    by_processor = Counter(entry.processor for entry in audit)
    if args.json:
        figures = {
            "format": result.format,
            "budget": result.budget,
            "tokens_before": rendered.before,
            "tokens": result.tokens,
            "units": result.units,
            "units_dropped": len(result.dropped),
            "policy": rendered.policy,
            "edits": dict(sorted(by_processor.items())),
            "tokens_saved": saved,
        }
        print(screen.json_text(json.dumps(figures)), file=sys.stderr)
        return
    budget = f"{result.budget:,}" if result.budget is not None else "none"
    if rendered.policy is None:
        compaction = "not compacted (--no-compact)"
    elif audit:
        edits = ", ".join(f"{name} {n}" for name, n in sorted(by_processor.items()))
        compaction = (
            f"compacted ({rendered.policy} policy): {len(audit)} edits ({edits}), "
            f"{saved:,} tokens saved"
        )
    else:
        compaction = f"nothing to compact ({rendered.policy} policy)"
    line = (
        f"{result.format}: {rendered.before:,} tokens before, {result.tokens:,} after "
        f"(budget {budget}); {len(result.dropped)} of {result.units} units dropped; "
        f"{compaction}"
    )
    print(screen.text(line), file=sys.stderr)
