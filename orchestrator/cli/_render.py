"""`context-graph render`: compact a session to a budget and write the request body.

By default the session goes through a `ContextManager` configured by a profile (the
pipeline `replay` runs), which compacts until the request fits; the command refuses
(exit 3) only where the manager does. `--no-compact` renders the pristine graph, which
can only leave out whole old turns.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Callable

from context_graph.graph import ContextGraph
from context_graph.render import Renderer, RenderResult
from orchestrator.buffer import AuditEntry
from orchestrator.cli._errors import EXIT_OK
from orchestrator.cli._progress import Progress
from orchestrator.cli._session import check_outputs, choose_profile, load, write_text
from orchestrator.manager import ContextManager

__all__ = ["run_render"]


def run_render(args: argparse.Namespace, progress: Progress) -> int:
    """Render the session; the body to stdout or `-o`, one summary line to stderr."""
    check_outputs(o=args.output)
    profile = None if args.no_compact else choose_profile(args.profile)
    if args.cache_breakpoints and args.provider != "anthropic":
        # Checked before the work, as the manager and the Renderer would refuse it after.
        Renderer(format=args.provider, cache_breakpoints=True)
    loaded = load(args, progress)
    events = loaded.session.events
    progress.phase(f"ingesting {len(events):,} events...")
    audit: tuple[AuditEntry, ...] = ()
    if profile is None:
        graph = ContextGraph()
        graph.ingest(events)
        progress.phase("rendering...")
        renderer = Renderer(format=args.provider, cache_breakpoints=args.cache_breakpoints)
        result = renderer.render(graph, budget=args.budget)
        before = result.tokens_before
    else:
        manager = ContextManager(
            format=args.provider,
            budget=args.budget,
            cache_breakpoints=args.cache_breakpoints,
            **profile.manager_options(),
        )
        manager.ingest(events)
        progress.phase("compacting and rendering..." if args.budget else "rendering...")
        manager.bus.connect("proposal_applied", _count_edits(progress))
        result = manager.render_sync()
        audit = manager.working.audit()
        before = Renderer(format=args.provider).render(manager.raw).tokens
    progress.close()
    text = result.to_json(indent=2) + "\n"
    if args.output is not None:
        write_text(args.output, text, "-o")
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    _summarize(args, result, before, audit, None if profile is None else profile.name)
    return EXIT_OK


def _count_edits(progress: Progress) -> Callable[..., None]:
    """A bus receiver that keeps the phase line up to date as edits are applied."""
    edits = 0

    def applied(sender: object, **payload: object) -> None:
        nonlocal edits
        edits += 1
        if edits % 25 == 1:
            progress.phase(f"compacting: {edits:,} edits so far...")

    return applied


def _summarize(
    args: argparse.Namespace,
    result: RenderResult,
    before: int,
    audit: tuple[AuditEntry, ...],
    profile: str | None,
) -> None:
    saved = sum(entry.tokens_saved for entry in audit)
    by_processor = Counter(entry.processor for entry in audit)
    if args.json:
        figures = {
            "format": result.format,
            "budget": result.budget,
            "tokens_before": before,
            "tokens": result.tokens,
            "units": result.units,
            "units_dropped": len(result.dropped),
            "profile": profile,
            "edits": dict(sorted(by_processor.items())),
            "tokens_saved": saved,
        }
        print(json.dumps(figures), file=sys.stderr)
        return
    budget = f"{result.budget:,}" if result.budget is not None else "none"
    if profile is None:
        compaction = "not compacted (--no-compact)"
    elif audit:
        edits = ", ".join(f"{name} {n}" for name, n in sorted(by_processor.items()))
        compaction = (
            f"compacted ({profile} profile): {len(audit)} edits ({edits}), {saved:,} tokens saved"
        )
    else:
        compaction = f"nothing to compact ({profile} profile)"
    print(
        f"{result.format}: {before:,} tokens before, {result.tokens:,} after "
        f"(budget {budget}); {len(result.dropped)} of {result.units} units dropped; "
        f"{compaction}",
        file=sys.stderr,
    )
