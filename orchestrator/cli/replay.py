"""`context-graph replay`: the session fed event by event, rendered at every model call.

With `--redact` (or a policy's `redact` stage) every request is redacted, and every
output (the totals, `--report`, `-o`, `--html`) goes through the same `OutputScreen`.
"""

from __future__ import annotations

import argparse
import json
import sys

from orchestrator.cli.errors import EXIT_OK, EXIT_OVER_BUDGET
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
from orchestrator.replay import ReplayReport, replay
from orchestrator.report.page import render_html
from orchestrator.report.recorder import ReplayRecorder

__all__ = ["run_replay"]


def run_replay(args: argparse.Namespace, progress: Progress) -> int:
    """Replay; print the totals; exit 3 when any call could not meet the budget."""
    check_outputs(report=args.report, o=args.output, html=args.html)
    tools = load_tools(args.tools)
    policy = choose_policy(args.policy)
    manager = ContextManager(
        format=args.provider,
        budget=args.budget,
        policy=policy.replace(cache_breakpoints=args.cache_breakpoints, redact_secrets=args.redact),
        tools=tools,
        agent_tools=args.agent_tools,
    )
    screen = output_screen(args, manager.redactor)
    loaded = load(args, progress, screen)
    events = loaded.session.events
    progress.phase(f"replaying {len(events):,} events...")
    recorder = None if args.html is None else ReplayRecorder(manager, args.provider)
    report = replay(
        events,
        budget=args.budget,
        format=args.provider,
        manager=manager,
        tools=tools,
        on_progress=lambda done, total: progress.count(done, total, "events"),
        on_call=recorder,
    )
    progress.close()
    screen.learn(manager.raw)
    if recorder is not None:
        name = loaded.trace.name
        title = f"{name} at {report.budget:,} tokens" if report.budget else name
        write_text(args.html, render_html(recorder.recording, title), "--html")
    if args.report is not None:
        text = screen.json_text(report.model_dump_json(indent=2), indent=2)
        write_text(args.report, text + "\n", "--report")
    if args.output is not None and report.last_request is not None:
        body = json.dumps(report.last_request, ensure_ascii=False, indent=2)
        write_text(args.output, screen.json_text(body, indent=2) + "\n", "-o")
    if args.json:
        totals = report.model_dump_json(indent=2, exclude={"calls", "last_request"})
        print(screen.json_text(totals, indent=2))
    else:
        print(screen.text(_line(report)))
    if not report.over_budget_calls:
        return EXIT_OK
    if not args.json:
        print(
            f"context-graph replay: {report.over_budget_calls} of {len(report.calls)} calls "
            f"could not meet the budget of {report.budget:,} tokens (see each call's `error` "
            "in --report)",
            file=sys.stderr,
        )
    return EXIT_OVER_BUDGET


def _line(report: ReplayReport) -> str:
    budget = f"{report.budget:,}" if report.budget is not None else "none"
    fill = report.mean_fill
    filled = "" if fill is None else f"; compacted requests fill {fill:.0%} of the budget"
    return (
        f"{report.format}: {len(report.calls)} model calls over {report.events} events "
        f"(budget {budget}); raw {report.total_raw_tokens:,} -> rendered "
        f"{report.total_rendered_tokens:,} tokens in all; {report.invalid_calls} invalid, "
        f"{report.over_budget_calls} over budget; prefix reused at "
        f"{report.prefix_reuse_share:.0%} of calls{filled}"
    )
