"""`context-graph inspect`: what a recorded session holds (with `--redact`, no secret of it)."""

from __future__ import annotations

import argparse
import json

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.stats import GraphStats, graph_stats
from orchestrator.cli.errors import EXIT_OK
from orchestrator.cli.progress import Progress
from orchestrator.cli.session import load, output_screen

__all__ = ["run_inspect"]

#: What an importer left out of a conversation the user took back, by its `meta` key:
#: Claude Code's abandoned branches, Codex's rolled-back turns, opencode's undone ones.
TAKEN_BACK = {
    "abandoned_records": "records of an abandoned branch",
    "rolled_back_events": "events of rolled-back turns",
    "reverted_messages": "messages of undone turns",
}


def run_inspect(args: argparse.Namespace, progress: Progress) -> int:
    """Print the session's summary, as text or JSON."""
    screen = output_screen(args)
    loaded = load(args, progress, screen)
    events = loaded.session.events
    progress.phase(f"ingesting {len(events):,} events...")
    graph = ContextGraph()
    graph.ingest(events)
    screen.learn(graph)
    progress.phase("counting...")
    stats = graph_stats(graph)
    progress.close()
    meta = loaded.session.meta
    taken_back = {key: n for key in TAKEN_BACK if isinstance(n := meta.get(key), int) and n}
    if args.json:
        payload = {
            "trace": str(loaded.trace),
            "session": loaded.session.name,
            "sessions_in_file": loaded.count,
            **stats.model_dump(),
            "taken_back": taken_back,
        }
        print(screen.json_text(json.dumps(payload, indent=2), indent=2))
    else:
        text = _text(str(loaded.trace), loaded.session.name, loaded.count, stats)
        for key, n in taken_back.items():
            # Not in the conversation: the user went back before it (the file keeps it).
            text += f"\ntaken back:  {n} {TAKEN_BACK[key]}, left out"
        print(screen.text(text))
    return EXIT_OK


def _text(trace: str, session: str, count: int, stats: GraphStats) -> str:
    kinds = ", ".join(f"{kind} {n}" for kind, n in stats.nodes_by_kind.items())
    sessions = "session" if count == 1 else "sessions"
    lines = [
        f"trace:       {trace}",
        f"session:     {session} ({count} {sessions} in the input)",
        f"nodes:       {stats.nodes} ({kinds})",
        f"tokens:      {stats.total_tokens:,} (cl100k_base, content only)",
        f"units:       {stats.units} (user turns: {stats.user_turns}, notices: {stats.notices})",
        f"tool calls:  {stats.tool_calls} ({stats.tool_errors} errors, "
        f"{len(stats.unanswered_calls)} unanswered)",
        f"files read:  {len(stats.files_read)} paths, {sum(stats.files_read.values())} reads",
        f"sub-agents:  {len(stats.subagents)}",
    ]
    reread = {p: n for p, n in stats.files_read.items() if n > 1}
    for path, n in sorted(reread.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
        lines.append(f"  read {n}x: {path}")
    for call in stats.unanswered_calls[:5]:
        lines.append(f"  unanswered: {call}")
    return "\n".join(lines)
