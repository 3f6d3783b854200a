"""The `context-graph` command-line tool.

Exit codes: 0 success; 1 `check` found rule violations; 2 bad input or usage (one line
on stderr that names the place; with `--json`, a JSON object on stdout instead, see
`errors`); 3 the budget cannot be met (`render`: even compacted; `replay`: at any
call, the report is still written); 130 interrupted; 141 stdout was closed before the
output was written (`context-graph inspect | head -1`), as a shell reports a process
that SIGPIPE ended, without a traceback.

Progress goes to stderr, drawn only on a terminal, unless `--progress` (see
`progress`). With `--redact` every output, errors too, goes through one
`orchestrator.report.OutputScreen`, the redaction a request gets. One module per
subcommand; `session` reads the input and checks the output paths for all of them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from context_graph.errors import ContextGraphError
from orchestrator.cli.check import run_check
from orchestrator.cli.errors import (
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    report_failure,
)
from orchestrator.cli.inspect import run_inspect
from orchestrator.cli.parser import build_parser
from orchestrator.cli.progress import Progress
from orchestrator.cli.proxy_sessions import run_proxy_command
from orchestrator.cli.render import run_render
from orchestrator.cli.replay import run_replay
from orchestrator.cli.session import output_screen
from orchestrator.cli.store import run_store

__all__ = ["main"]

Command = Callable[[argparse.Namespace, Progress], int]

_COMMANDS: dict[str, Command] = {
    "check": run_check,
    "inspect": run_inspect,
    "proxy": run_proxy_command,
    "render": run_render,
    "replay": run_replay,
    "store": run_store,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the process exit code."""
    given = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(given).parse_args(given)
    progress = Progress.for_stderr(asked=getattr(args, "progress", False))
    try:
        try:
            return _COMMANDS[args.command](args, progress)
        except ContextGraphError as exc:
            progress.close()
            as_json = getattr(args, "json", False)
            return report_failure(exc, args.command, as_json=as_json, screen=output_screen(args))
    except BrokenPipeError:  # also while a JSON error is printed on stdout
        _drop_stdout()
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        progress.close()
        print(f"context-graph {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        progress.close()


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit cannot fail.

    What Python's documentation recommends for SIGPIPE: the reader is gone, and
    another write would raise (and print a traceback) again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return  # stdout is not a file (captured in tests): nothing will flush it later
