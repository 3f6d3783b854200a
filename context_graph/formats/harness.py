"""What an agent harness writes in the user's role, told from the user's own words.

The agents a gateway serves put text of their own in user-role messages, and a request
body carries it as the agent sent it: Claude Code's `<system-reminder>` blocks (the
CLAUDE.md context before the first prompt, a nudge appended to a tool result every few
steps), a background task's `<task-notification>`, what a local command printed, the
IDE's open file, "[Request interrupted by user]"; Gemini CLI's `<session_context>` and
the `<state_snapshot>` its compression writes; Codex's `<environment_context>` and
AGENTS.md instructions; Cline's and Roo Code's `<environment_details>`; and the
gateways' own reading of a mid-conversation system message, wrapped in
`<system-reminder>` tags. Read as the user's words, a nudge becomes
the user's latest request: the render floor's anchor and the brief's goal, while what
the user last asked is summarized away. Read by these rules, each is a notice
(`UserTurn.notice`).

A text is the harness's only when it is nothing but such blocks (and whitespace): a
reminder in front of what the user typed leaves a request. `harness_runs` splits a
message's parts into runs, so a message holding both (Claude Code's first message: the
CLAUDE.md reminder, the prompt, a reminder listing agent types) gives a notice, the
request and a notice, which render back as one message. Reading is linear in the text:
a request body is the agent's (or an attacker's) input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from context_graph.graph.content import ContentPart, TextPart

__all__ = ["HARNESS_TAGS", "harness_runs", "is_harness_message", "is_harness_text"]

#: Elements agent harnesses wrap what they add to a user message in.
HARNESS_TAGS = frozenset(
    {
        # Claude Code (and the gateways' reading of a mid-conversation system message)
        "system-reminder",
        "task-notification",
        "local-command-stdout",
        "local-command-stderr",
        "local-command-caveat",
        "ide_opened_file",
        "ide_selection",
        # Gemini CLI
        "session_context",
        "state_snapshot",
        # Codex CLI
        "environment_context",
        "user_instructions",
        "turn_aborted",
        "user_shell_command",
        # Cline and Roo Code: the editor's state (visible files, open tabs, time, the
        # working folder's files), appended to every request, after a tool's result too
        "environment_details",
    }
)
# Codex sends a repository's AGENTS.md as a message that opens with this heading.
_AGENTS_MD = "# AGENTS.md instructions for "
# A start tag: bounded, so a hostile run of letters after `<` is read once.
_START = re.compile(r"<([a-z][a-z_-]{0,39})>")
# What Claude Code writes when the user stops a reply (" for tool use]" and others).
_INTERRUPTED = "[Request interrupted by user"
# A task notification ends with one line that says where its output went ("Read the
# output file to retrieve the result: PATH").
_NOTIFICATION_PATH = ": /"


def is_harness_text(text: str) -> bool:
    """Whether `text` is nothing but harness blocks, interruption markers and whitespace."""
    if not text.strip():
        return False
    if text.lstrip().startswith(_AGENTS_MD):
        return True
    rest: list[str] = []
    position = 0
    notified = False
    while (start := _START.search(text, position)) is not None:
        tag = start.group(1)
        if tag not in HARNESS_TAGS:
            return False  # an element of the user's (or one no harness here writes)
        end = text.find(f"</{tag}>", start.end())
        if end == -1:
            return False  # a block left open is not one the harness wrote whole
        rest.append(text[position : start.start()])
        notified = notified or tag == "task-notification"
        position = end + len(tag) + 3
    rest.append(text[position:])
    lines = "".join(rest).splitlines()
    left = "\n".join(_without_interruptions(line) for line in lines).strip()
    return not left or (notified and _is_output_path_line(left))


def is_harness_message(parts: Sequence[ContentPart]) -> bool:
    """Whether a message of `parts` is all the harness's: text parts, each harness text."""
    return bool(parts) and all(
        isinstance(part, TextPart) and is_harness_text(part.text) for part in parts
    )


def harness_runs(parts: Sequence[ContentPart]) -> list[tuple[bool, tuple[ContentPart, ...]]]:
    """`parts` in runs, in order: (whether the run is the harness's, its parts).

    A part is the harness's when it is a text that `is_harness_text`; anything else (the
    user's words, an image) is the user's. No runs for no parts.
    """
    runs: list[tuple[bool, list[ContentPart]]] = []
    for part in parts:
        harness = isinstance(part, TextPart) and is_harness_text(part.text)
        if runs and runs[-1][0] == harness:
            runs[-1][1].append(part)
        else:
            runs.append((harness, [part]))
    return [(harness, tuple(run)) for harness, run in runs]


def _without_interruptions(line: str) -> str:
    """`line` without Claude Code's interruption markers (each closed within the line)."""
    kept: list[str] = []
    position = 0
    while (start := line.find(_INTERRUPTED, position)) != -1:
        close = line.find("]", start)
        if close == -1:
            break  # no marker from here on closes within the line
        kept.append(line[position:start])
        position = close + 1
    kept.append(line[position:])
    return "".join(kept)


def _is_output_path_line(text: str) -> bool:
    """Whether `text` is one line that ends in ': /PATH' (a notification's output file)."""
    head, found, path = text.rpartition(_NOTIFICATION_PATH)
    return (
        bool(found)
        and bool(path)
        and not any(c.isspace() for c in path)
        and not any(c in "\n<>" for c in head)
    )
