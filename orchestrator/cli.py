"""The `context-graph` command-line tool.

Exit codes: 0 success, 2 bad input or usage (one line on stderr that names the place).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from context_graph.errors import ContextGraphError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph import ContextGraph
from context_graph.importers import FORMATS, load_sessions, select_session
from context_graph.stats import GraphStats, graph_stats

__all__ = ["main"]

EXIT_OK = 0
EXIT_BAD_INPUT = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="context-graph",
        description="Manage an LLM agent's context window as a graph.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    inspect = commands.add_parser(
        "inspect",
        help="summarize a recorded agent session",
        description=(
            "Ingest a recorded session (format detected) and print node counts by kind, "
            "tokens, interaction units, unanswered calls, files read and sub-agents. "
            "With no TRACE, runs on the example session bundled with the package."
        ),
    )
    inspect.add_argument("trace", nargs="?", type=Path, help="session file (JSON or JSONL)")
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")
    inspect.add_argument("--format", choices=FORMATS, help="input format (default: detect)")
    inspect.add_argument(
        "--session",
        default="0",
        help="which session of a multi-session file: an index or a name (default: 0)",
    )
    return parser


def _inspect(args: argparse.Namespace) -> int:
    trace: Path = args.trace or EXAMPLE_SESSION
    sessions = load_sessions(trace, format=args.format)
    which: int | str = int(args.session) if args.session.isdigit() else args.session
    chosen = select_session(sessions, which, trace)
    graph = ContextGraph()
    graph.ingest(chosen.events)
    stats = graph_stats(graph)
    if args.json:
        payload = {
            "trace": str(trace),
            "session": chosen.name,
            "sessions_in_file": len(sessions),
            **stats.model_dump(),
        }
        print(json.dumps(payload, indent=2))
    else:
        print(_render_text(str(trace), chosen.name, len(sessions), stats))
    return EXIT_OK


def _render_text(trace: str, session: str, count: int, stats: GraphStats) -> str:
    kinds = ", ".join(f"{kind} {n}" for kind, n in stats.nodes_by_kind.items())
    lines = [
        f"trace:       {trace}",
        f"session:     {session} ({count} {'session' if count == 1 else 'sessions'} in the input)",
        f"nodes:       {stats.nodes} ({kinds})",
        f"tokens:      {stats.total_tokens:,} (cl100k_base, content only)",
        f"units:       {stats.units} ({stats.user_turns} user turns)",
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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    args = _parser().parse_args(argv)
    try:
        return _inspect(args)
    except ContextGraphError as exc:
        print(f"context-graph {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
