"""The `context-graph` command-line tool.

Exit codes: 0 success; 1 `check` found rule violations; 2 bad input or usage (one line
on stderr that names the place); 3 the budget cannot be met.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from context_graph.errors import BudgetExceededError, ContextGraphError, IngestError
from context_graph.examples import EXAMPLE_SESSION
from context_graph.graph import ContextGraph
from context_graph.importers import (
    FORMATS,
    ImportedSession,
    load_sessions,
    read_raw,
    select_session,
)
from context_graph.render import FORMATS as RENDER_FORMATS
from context_graph.render import Renderer, count_payload
from context_graph.stats import GraphStats, graph_stats
from context_graph.tokens import default_counter
from context_graph.validate import validate
from orchestrator.manager import ContextManager
from orchestrator.profiles import PROFILES, Profile, get_profile, load_profile
from orchestrator.replay import replay

__all__ = ["main"]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_OVER_BUDGET = 3


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
    _add_trace_arguments(inspect)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")

    render = commands.add_parser(
        "render",
        help="render a session as a provider request body under a token budget",
        description=(
            "Ingest a recorded session, render its final state for the next model call "
            "and write the request JSON to stdout (or -o OUT). One summary line goes to "
            "stderr. With no TRACE, renders the bundled example session."
        ),
    )
    _add_trace_arguments(render)
    render.add_argument("--budget", type=_budget, help="token budget (default: no limit)")
    render.add_argument(
        "--format",
        dest="provider",
        choices=RENDER_FORMATS,
        default="openai",
        help="provider format of the request (default: openai)",
    )
    render.add_argument("-o", "--output", type=Path, help="write the JSON here")
    render.add_argument(
        "--cache-breakpoints",
        action="store_true",
        help="mark Anthropic prompt-cache breakpoints (anthropic only)",
    )

    replay = commands.add_parser(
        "replay",
        help="replay a session through the context manager, rendering at every model call",
        description=(
            "Feed a recorded session event by event to a ContextManager and, before each "
            "assistant turn (where the agent called its model), render as the agent would "
            "have. Prints totals; --report writes per-call figures as JSON; -o writes the "
            "last request. With no TRACE, replays the bundled example session."
        ),
    )
    _add_trace_arguments(replay)
    replay.add_argument("--budget", type=_budget, help="token budget (default: no limit)")
    replay.add_argument(
        "--format", dest="provider", choices=RENDER_FORMATS, default="openai", help="provider"
    )
    replay.add_argument(
        "--profile",
        help=f"a built-in profile ({', '.join(PROFILES)}) or a TOML file (default: coding)",
    )
    replay.add_argument("--report", type=Path, help="write the JSON report here")
    replay.add_argument("-o", "--output", type=Path, help="write the last request here")

    check = commands.add_parser(
        "check",
        help="list every rule a provider request body breaks",
        description=(
            "Validate a request body built by any tool against the provider's rules: "
            "roles, tool-call pairing, ids, blocks, cache breakpoints; optionally the "
            "token budget. Exit 0 when valid, 1 when rules are broken."
        ),
    )
    check.add_argument("payload", type=Path, help="request body (JSON)")
    check.add_argument("--format", dest="provider", choices=RENDER_FORMATS, required=True)
    check.add_argument("--budget", type=_budget, help="also check the size against this")
    check.add_argument("--json", action="store_true", help="print violations as JSON")
    return parser


def _add_trace_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument("trace", nargs="?", type=Path, help="session file (JSON or JSONL)")
    command.add_argument(
        "--from", dest="input_format", choices=FORMATS, help="input format (default: detect)"
    )
    command.add_argument(
        "--session",
        default="0",
        help="which session of a multi-session file: an index or a name (default: 0)",
    )


def _budget(text: str) -> int:
    try:
        value = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        msg = f"not a whole number of tokens: {text!r}"
        raise argparse.ArgumentTypeError(msg) from None
    if value < 0:
        msg = f"the budget cannot be negative: {value}"
        raise argparse.ArgumentTypeError(msg)
    return value


def _load(args: argparse.Namespace) -> tuple[Path, ImportedSession, int]:
    trace: Path = args.trace or EXAMPLE_SESSION
    sessions = load_sessions(trace, format=args.input_format)
    which: int | str = int(args.session) if args.session.isdigit() else args.session
    return trace, select_session(sessions, which, trace), len(sessions)


# --- inspect ----------------------------------------------------------------------------


def _inspect(args: argparse.Namespace) -> int:
    trace, chosen, count = _load(args)
    graph = ContextGraph()
    graph.ingest(chosen.events)
    stats = graph_stats(graph)
    if args.json:
        payload = {
            "trace": str(trace),
            "session": chosen.name,
            "sessions_in_file": count,
            **stats.model_dump(),
        }
        print(json.dumps(payload, indent=2))
    else:
        print(_render_text(str(trace), chosen.name, count, stats))
    return EXIT_OK


def _render_text(trace: str, session: str, count: int, stats: GraphStats) -> str:
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


# --- render -----------------------------------------------------------------------------


def _render(args: argparse.Namespace) -> int:
    _, chosen, _ = _load(args)
    graph = ContextGraph()
    graph.ingest(chosen.events)
    renderer = Renderer(format=args.provider, cache_breakpoints=args.cache_breakpoints)
    result = renderer.render(graph, budget=args.budget)
    text = result.to_json(indent=2) + "\n"
    if args.output is not None:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    budget = f"{result.budget:,}" if result.budget is not None else "none"
    print(
        f"{result.format}: {result.tokens_before:,} tokens before, {result.tokens:,} after "
        f"(budget {budget}); {len(result.dropped)} of {result.units} units dropped",
        file=sys.stderr,
    )
    return EXIT_OK


# --- check ------------------------------------------------------------------------------


def _check(args: argparse.Namespace) -> int:
    raw = read_raw(args.payload)
    violations = [v.model_dump() for v in validate(raw.data, args.provider)]
    tokens = None
    if isinstance(raw.data, dict) and not violations:
        tokens = count_payload(raw.data, args.provider, default_counter())
        if args.budget is not None and tokens > args.budget:
            violations.append(
                {
                    "rule": "over_budget",
                    "index": None,
                    "path": "",
                    "message": f"the request has {tokens:,} tokens, over the budget of "
                    f"{args.budget:,}: drop or compact earlier turns",
                }
            )
    if args.json:
        print(json.dumps({"violations": violations, "tokens": tokens}, indent=2))
    else:
        for v in violations:
            print(f"{v['rule']}: {v['message']}")
        size = f", {tokens:,} tokens" if tokens is not None else ""
        print(f"{len(violations)} violation{'s' if len(violations) != 1 else ''}{size}")
    return EXIT_VIOLATIONS if violations else EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    _, chosen, _ = _load(args)
    progress = _Progress(enabled=sys.stderr.isatty())
    profile = _profile(args.profile)
    manager = ContextManager(format=args.provider, budget=args.budget, **profile.manager_options())
    report = replay(
        chosen.events,
        budget=args.budget,
        format=args.provider,
        manager=manager,
        on_progress=progress.update,
    )
    progress.done()
    if args.report is not None:
        _write(args.report, report.model_dump_json(indent=2) + "\n")
    if args.output is not None and report.last_request is not None:
        _write(args.output, json.dumps(report.last_request, ensure_ascii=False, indent=2) + "\n")
    budget = f"{report.budget:,}" if report.budget is not None else "none"
    print(
        f"{report.format}: {len(report.calls)} model calls over {report.events} events "
        f"(budget {budget}); raw {report.total_raw_tokens:,} -> rendered "
        f"{report.total_rendered_tokens:,} tokens in all; {report.invalid_calls} invalid, "
        f"{report.over_budget_calls} over budget; prefix reused at "
        f"{report.prefix_reuse_share:.0%} of calls"
    )
    return EXIT_OK


def _profile(name: str | None) -> Profile:
    if name is None:
        return get_profile("coding")
    if name in PROFILES:
        return get_profile(name)
    path = Path(name)
    if path.suffix == ".toml" or path.exists():
        return load_profile(path)
    return get_profile(name)  # raises, listing the built-in names


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        msg = f"cannot write {path}: {exc.strerror or exc}"
        raise IngestError(msg) from None


class _Progress:
    """A one-line progress bar on stderr, drawn only on a terminal."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self._last = -1

    def update(self, done: int, total: int) -> None:
        if not self.enabled or total == 0:
            return
        filled = done * 30 // total
        if filled != self._last:
            self._last = filled
            bar = "#" * filled + "." * (30 - filled)
            print(f"\r[{bar}] {done}/{total} events", end="", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.enabled and self._last >= 0:
            print(file=sys.stderr)


_COMMANDS = {"inspect": _inspect, "render": _render, "replay": _replay, "check": _check}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    args = _parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except BudgetExceededError as exc:
        print(f"context-graph {args.command}: {exc}", file=sys.stderr)
        return EXIT_OVER_BUDGET
    except ContextGraphError as exc:
        print(f"context-graph {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
