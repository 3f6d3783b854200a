"""Exit codes, and how a failure is told: one line on stderr, or one JSON object with --json.

With `--json` an error is a JSON object on stdout, in place of the output the command
would have printed there, so that a script reads one stream and checks the exit code:
`{"error": "...", "where": "...", "location": {...}, "exit_code": 2}`. `where` is the
place as a phrase (`run.jsonl line 14 message 3`, or the option at fault: `-o`);
`location` has the same place field by field (`file`, `line`, `index`, `path`).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from context_graph.errors import BudgetExceededError, ContextGraphError, IngestError
from orchestrator.report.screen import OutputScreen

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_OVER_BUDGET",
    "EXIT_VIOLATIONS",
    "UsageError",
    "exit_code",
    "report_failure",
]

EXIT_OK = 0
EXIT_VIOLATIONS = 1
EXIT_BAD_INPUT = 2
EXIT_OVER_BUDGET = 3
EXIT_INTERRUPTED = 130
#: What a shell reports for a process killed by SIGPIPE (128 + 13), as `yes | head` does.
EXIT_BROKEN_PIPE = 141


class UsageError(ContextGraphError, ValueError):
    """An option the command cannot act on (a missing output folder); exit code 2.

    Attributes:
        where: The option or path at fault, as the user wrote it.
        reason: What is wrong, without the place.
    """

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"{where}: {reason}")


def exit_code(exc: ContextGraphError) -> int:
    """The exit code a failure ends the command with."""
    return EXIT_OVER_BUDGET if isinstance(exc, BudgetExceededError) else EXIT_BAD_INPUT


def _fields(exc: ContextGraphError) -> dict[str, Any]:
    if isinstance(exc, IngestError):
        where = exc.location
        location = {"file": where.file, "line": where.line, "index": where.index}
        return {"error": exc.reason, "where": where.describe(), "location": location}
    if isinstance(exc, UsageError):
        return {"error": exc.reason, "where": exc.where, "location": None}
    if isinstance(exc, BudgetExceededError):
        sizes = {"budget": exc.budget, "required": exc.required}
        return {"error": str(exc), "where": "--budget", "location": None, **sizes}
    return {"error": str(exc), "where": None, "location": None}


def report_failure(
    exc: ContextGraphError, command: str, *, as_json: bool, screen: OutputScreen | None = None
) -> int:
    """Tell the user what failed and where, through `screen` (`--redact`); the exit code."""
    code = exit_code(exc)
    screen = screen or OutputScreen()
    if as_json:
        fields = screen.value({**_fields(exc), "exit_code": code})
        print(json.dumps(fields, ensure_ascii=False))
    elif code == EXIT_OVER_BUDGET:
        print(screen.text(f"context-graph {command}: {exc}"), file=sys.stderr)
    else:
        text = " ".join(str(exc).split())  # one line, whatever the message holds
        print(screen.text(f"context-graph {command}: error: {text}"), file=sys.stderr)
    return code
