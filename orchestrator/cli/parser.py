"""The command line's grammar: subcommands, options and the checks made while parsing."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from context_graph.formats.gateways import DEFAULT_UPSTREAM, UPSTREAMS
from context_graph.formats.wires import DEFAULT_FORMAT
from context_graph.importers import FORMATS
from context_graph.render import FORMATS as RENDER_FORMATS
from orchestrator.cli.stored import is_store_url
from orchestrator.policy import POLICIES

__all__ = ["MAX_BUDGET", "build_parser", "parse_budget", "store_location"]

#: The largest budget accepted: far above any model's context window, and small enough
#: that the renderer's float arithmetic on it stays exact.
MAX_BUDGET = 100_000_000

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """An argument parser that reports a usage error on one line (as JSON with --json)."""

    json_errors = False
    serve_action: str | None = None
    """The dest of this command's optional actions: without one it serves, and then the
    options in `needed_to_serve` are required (`proxy` serves; `proxy sessions` reads)."""
    needed_to_serve: tuple[tuple[str, str], ...] = ()

    def parse_known_args(  # type: ignore[override]  # one form: the CLI passes a list
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if self.serve_action is not None and getattr(parsed, self.serve_action, None) is None:
            missing = [flag for flag, dest in self.needed_to_serve if getattr(parsed, dest) is None]
            if missing:
                self.error(f"the following arguments are required: {', '.join(missing)}")
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        if len(message) > 200:  # argparse echoes what it refuses, however long
            message = message[:200] + "..."
        if self.json_errors:
            print(json.dumps({"error": message, "where": "arguments", "exit_code": EXIT_USAGE}))
        else:
            print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


if TYPE_CHECKING:  # argparse's action is generic only in the type stubs
    _Commands = argparse._SubParsersAction[_Parser]


def _version() -> str:
    try:
        return importlib.metadata.version("context-graph")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed as a package)"


def parse_budget(text: str) -> int:
    """A positive whole number of tokens, at most `MAX_BUDGET` (`_` and `,` group digits).

    Raises:
        argparse.ArgumentTypeError: anything else; `ContextManager(budget=0)` refuses 0 too.
    """
    digits = text.replace("_", "").replace(",", "")
    magnitude = digits.removeprefix("-").lstrip("0")
    if not (digits.isascii() and digits.removeprefix("-").isdigit()):
        msg = f"not a whole number of tokens: {text[:40]!r}"
        raise argparse.ArgumentTypeError(msg)
    if digits.startswith("-") or not magnitude:
        msg = f"the budget must be a positive number of tokens, got {text[:40]}"
        raise argparse.ArgumentTypeError(msg)
    # Compared as text first: int() refuses very long digit strings with its own error.
    if len(magnitude) > len(str(MAX_BUDGET)) or int(magnitude) > MAX_BUDGET:
        shown = (
            magnitude if len(magnitude) <= 15 else f"{magnitude[:12]}... ({len(magnitude)} digits)"
        )
        msg = f"{shown} tokens is more than any model reads; give at most {MAX_BUDGET:,}"
        raise argparse.ArgumentTypeError(msg)
    return int(magnitude)


def build_parser(argv: list[str]) -> argparse.ArgumentParser:
    """The `context-graph` parser; `argv` tells it whether usage errors are JSON."""
    parser = _Parser(
        prog="context-graph",
        description="Manage an LLM agent's context window as a graph.",
    )
    parser.json_errors = "--json" in argv
    parser.add_argument("--version", action="version", version=f"context-graph {_version()}")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=_Parser
    )
    _add_inspect(commands)
    _add_render(commands)
    _add_replay(commands)
    _add_check(commands)
    _add_store(commands)
    _add_proxy(commands)
    for sub in commands.choices.values():
        if isinstance(sub, _Parser):
            sub.json_errors = parser.json_errors
    return parser


def _add_inspect(commands: _Commands) -> None:
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
    _add_redact(inspect)
    inspect.add_argument("--json", action="store_true", help="print the summary as JSON")


def _add_render(commands: _Commands) -> None:
    render = commands.add_parser(
        "render",
        help="compact a session under a token budget and render it as a request body",
        description=(
            "Feed a recorded session to a ContextManager with a policy (default: coding, "
            "the pipeline replay runs), let it compact the history to fit --budget, and "
            "write the request JSON to stdout (or -o OUT). One summary line, with what "
            "compaction did, goes to stderr. Exit 3 only when even the compacted floor "
            "does not fit. With no TRACE, renders the bundled example session."
        ),
    )
    _add_trace_arguments(render)
    _add_budget_and_format(render)
    _add_policy(render)
    render.add_argument(
        "--no-compact",
        action="store_true",
        help="render the pristine history, dropping whole old turns only (no compaction)",
    )
    render.add_argument("-o", "--output", type=Path, help="write the JSON here")
    _add_redact(render)
    _add_breakpoints(render)
    _add_tools(render)
    _add_json(render, "errors as a JSON object on stdout; the summary as JSON on stderr")


def _add_replay(commands: _Commands) -> None:
    replay = commands.add_parser(
        "replay",
        help="replay a session through the context manager, rendering at every model call",
        description=(
            "Feed a recorded session event by event to a ContextManager and, before each "
            "assistant turn (where the agent called its model), render as the agent would "
            "have. Prints totals; --report writes per-call figures as JSON; --html a page "
            "to look at (the sawtooth, each compaction, cache hits and cost, and every "
            "request with its compacted pieces expandable); -o writes the "
            "last request. Exit 3 when any call could not meet the budget (the report is "
            "still written). With no TRACE, replays the bundled example session."
        ),
    )
    _add_trace_arguments(replay)
    _add_budget_and_format(replay)
    _add_policy(replay)
    replay.add_argument("--report", type=Path, help="write the JSON report here")
    replay.add_argument(
        "--html", type=Path, help="write a self-contained HTML report here (opens offline)"
    )
    replay.add_argument("-o", "--output", type=Path, help="write the last request here")
    _add_redact(replay)
    _add_breakpoints(replay)
    _add_tools(replay)
    replay.add_argument(
        "--agent-tools",
        action="store_true",
        help=(
            "add the context_expand tool to every request (counted in the budget), and "
            "name in each compacted piece the id to pass it"
        ),
    )
    _add_json(replay, "print the totals as JSON; errors as a JSON object on stdout")


def _add_check(commands: _Commands) -> None:
    check = commands.add_parser(
        "check",
        help="list every rule a provider request body breaks",
        description=(
            "Validate a request body built by any tool against the provider's rules: "
            "roles, tool-call pairing, ids, blocks, cache breakpoints; optionally the "
            "token budget. The format is detected when --format is not given. Exit 0 "
            "when valid, 1 when rules are broken."
        ),
    )
    check.add_argument("payload", type=Path, help="request body (JSON)")
    check.add_argument(
        "--format",
        dest="provider",
        choices=RENDER_FORMATS,
        help="provider format of the body (default: detect it)",
    )
    check.add_argument("--budget", type=parse_budget, help="also check the size against this")
    _add_redact(check, policy=False)
    _add_json(check, "print violations as JSON; errors as a JSON object on stdout")


def _add_store(commands: _Commands) -> None:
    store = commands.add_parser(
        "store",
        help="work on stored sessions (copy one between SQLite and PostgreSQL)",
        description="Work on sessions kept by ContextManager.open.",
    )
    actions = store.add_subparsers(
        dest="action", required=True, metavar="ACTION", parser_class=_Parser
    )
    copy = actions.add_parser(
        "copy",
        help="copy a session into a new file or database session",
        description=(
            "Copy every journal entry and the state of the session at SOURCE into the "
            "new session at DESTINATION, as recorded. Each is a SQLite session file or a "
            "PostgreSQL URL naming the session as its fragment "
            "(postgresql://host/db#session). DESTINATION must not hold a session yet."
        ),
    )
    copy.add_argument("source", help="session file or postgresql://...#session")
    copy.add_argument("destination", help="new session file or postgresql://...#session")
    copy.add_argument(
        "--counter",
        default="tiktoken:cl100k_base",
        help="the token counter the session was recorded with (default: %(default)s)",
    )
    _add_json(copy, "print what was copied as JSON; errors as a JSON object on stdout")


def _add_proxy(commands: _Commands) -> None:
    proxy = commands.add_parser(
        "proxy",
        help="serve a gateway that compacts an agent CLI's context (Claude Code, Codex CLI, "
        "gemini-cli)",
        description=(
            "Serve an HTTP proxy between an agent and its provider: each model call is "
            "rendered under --budget by the engine (one managed conversation per agent "
            "session, kept in --store) and forwarded to the upstream; answers are "
            "streamed back unchanged. Prints the environment to set, then serves until "
            "interrupted. See docs/proxy.md in the context-graph repository."
        ),
    )
    proxy.add_argument(
        "--upstream",
        choices=tuple(UPSTREAMS),
        default=DEFAULT_UPSTREAM,
        help="the provider: anthropic (Messages API, Claude Code), openai (Responses API, "
        "Codex CLI) or gemini (generateContent, gemini-cli); default: anthropic",
    )
    proxy.add_argument(
        "--upstream-url",
        help="the upstream's base URL, for a compatible endpoint (default: the provider's)",
    )
    proxy.add_argument(
        "--budget", type=parse_budget, help="token budget of every request (required to serve)"
    )
    _add_policy(proxy)
    proxy.add_argument(
        "--store",
        type=store_location,
        help="folder of the session files (default: context-graph/proxy in the user's data "
        "folder, $XDG_DATA_HOME or ~/.local/share), or a postgresql:// database that any "
        "number of proxies serve at once",
    )
    proxy.add_argument(
        "--memory", action="store_true", help="keep sessions in memory only (no --store)"
    )
    proxy.add_argument("--host", default="127.0.0.1", help="address to listen on")
    proxy.add_argument(
        "--port", type=int, default=8787, help="port to listen on, 0 for any (default: 8787)"
    )
    proxy.add_argument(
        "--strict",
        action="store_true",
        help="answer a request the engine fails on with an error (default: forward it "
        "unchanged, with a warning)",
    )
    _add_proxy_actions(proxy)


def _add_proxy_actions(proxy: argparse.ArgumentParser) -> None:
    """`proxy sessions` and `proxy handoff`: reading the store, without serving."""
    if isinstance(proxy, _Parser):
        proxy.serve_action = "proxy_action"
        proxy.needed_to_serve = (("--budget", "budget"),)
    actions = proxy.add_subparsers(dest="proxy_action", metavar="ACTION", parser_class=_Parser)
    sessions = actions.add_parser(
        "sessions",
        help="list the sessions the proxy's store holds",
        description=(
            "List every session in the proxy's store: its wire format, threads, nodes, "
            "tokens held and last sent, last activity and the provider's usage. Reads "
            "the session files read only, so a serving proxy is not disturbed."
        ),
    )
    _add_proxy_store(sessions)
    _add_json(sessions, "print the sessions as JSON; errors as a JSON object on stdout")
    handoff = actions.add_parser(
        "handoff",
        help="write a Markdown handoff of a session for a fresh agent session",
        description=(
            "Write the handoff of one session's thread (its latest request verbatim, the "
            "files touched, the last open error, the next step and the engine's summary) "
            "to paste into a fresh agent session once the proxy is stopped."
        ),
    )
    handoff.add_argument("session", help="the session id (as `proxy sessions` lists it)")
    handoff.add_argument(
        "--thread", type=int, help="the thread's number (default: the longest thread)"
    )
    handoff.add_argument("--wire", help="the wire format, when one session id is in more than one")
    _add_proxy_store(handoff)
    handoff.add_argument("--out", type=Path, help="write the handoff here (default: stdout)")


def _add_proxy_store(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--store",
        type=store_location,
        default=argparse.SUPPRESS,  # `proxy --store DIR sessions` keeps the folder given first
        help="the proxy's store folder or postgresql:// database (default: context-graph/proxy "
        "in the user's data folder)",
    )


def store_location(text: str) -> Path | str:
    """A proxy's `--store`: a `postgresql://` URL as given, anything else a folder's path."""
    if text.lower().startswith(("postgresql://", "postgres://")):
        return text
    return Path(text)


def _trace_location(text: str) -> Path | str:
    """A trace's path, or a session store's URL kept as written (a path would fold its `//`)."""
    return text if is_store_url(text) else Path(text)


def _add_trace_arguments(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "trace",
        nargs="?",
        type=_trace_location,
        help="session file (JSON or JSONL), or a stored session's URL (postgresql://...#NAME)",
    )
    command.add_argument(
        "--from", dest="input_format", choices=FORMATS, help="input format (default: detect)"
    )
    command.add_argument(
        "--lenient",
        action="store_true",
        help="keep input an importer cannot place (a tool result no call asked for) as a note, "
        "and list it on stderr, instead of refusing the file",
    )
    command.add_argument(
        "--session",
        default="0",
        help="which session of a multi-session file: an index or a name (default: 0)",
    )
    command.add_argument(
        "--progress",
        action="store_true",
        help="report progress on stderr even when it is not a terminal (as plain lines)",
    )


def _add_budget_and_format(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--budget", type=parse_budget, help="token budget, a positive number (default: no limit)"
    )
    command.add_argument(
        "--format",
        dest="provider",
        choices=RENDER_FORMATS,
        default=DEFAULT_FORMAT,
        help=f"provider format of the request (default: {DEFAULT_FORMAT})",
    )


class _DeprecatedSpelling(argparse.Action):
    """Stores like `--policy` and says, once on stderr, that the flag is now `--policy`."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        print(
            f"{parser.prog}: {option_string} is deprecated and will go; say --policy",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def _add_policy(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--policy",
        metavar="POLICY",
        help=f"a named policy ({', '.join(POLICIES)}) or a policy TOML file (default: coding)",
    )
    # The flag's name before policies replaced profiles: it still works, unlisted.
    command.add_argument(
        "--profile", dest="policy", action=_DeprecatedSpelling, help=argparse.SUPPRESS
    )


def _add_redact(command: argparse.ArgumentParser, *, policy: bool = True) -> None:
    what = (
        "in every request and in everything written: JSON, reports, text (a policy with "
        "a `redact` stage turns this on too)"
        if policy
        else "in everything written (a message can quote the body)"
    )
    command.add_argument(
        "--redact",
        action="store_true",
        help=f"replace credentials (API keys, tokens, private keys, passwords) by typed "
        f"placeholders {what}",
    )


def _add_breakpoints(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--cache-breakpoints",
        action="store_true",
        help="mark Anthropic prompt-cache breakpoints (anthropic only)",
    )


def _add_tools(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--tools",
        type=Path,
        metavar="FILE.json",
        help=(
            "tool definitions every request carries and counts inside the budget: a JSON "
            "array of OpenAI, Anthropic or Gemini function tools (or an object with one "
            "in `tools`, such as a recorded request body)"
        ),
    )


def _add_json(command: argparse.ArgumentParser, text: str) -> None:
    command.add_argument("--json", action="store_true", help=text)
