"""The wrapper agent harnesses put around a tool's output, peeled off and kept verbatim.

mini-swe-agent wraps output in `<returncode>` / `<output>` tags, OpenHands appends the
exit code and the shell prompt, the editor tools announce the file they print, and
Claude Code appends `<system-reminder>` blocks. Those lines are not the content: they
are kept as they are at every level, and only the body between them is distilled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Envelope", "peel", "without_glued_note"]

_HEAD = re.compile(
    r"<returncode>-?\d+</returncode>|<output>|<output_head>|Exit code -?\d+"
    r"|(?:The file .+ has been (?:edited|updated)\. )?Here's the result of running `cat -n` on .+:"
    r"|\[File: .+ \(\d+ lines total\)\]|\(\d+ more lines above\)"
)
_TAIL = re.compile(
    r"</output>|</output_tail>|\[Command finished with exit code -?\d+\]"
    r"|Review the changes and make sure they are as expected\..*"
    r"|[\w.-]+@[\w.-]+:\S*\s?[#$] ?|bash-[\d.]*\$ ?"
    r"|\(\d+ more lines below\)|\(Open file: .*\)|\(Current directory: .*\)"
)
_INTERPRETER = re.compile(r"(?<=\S)(\[Python Interpreter: [^\]\n]*\])$")


def without_glued_note(line: str) -> str:
    """`line` without a harness note glued to its end: what the program printed.

    OpenHands writes `[Python Interpreter: ...]` right after the output's last line
    (`FAILED (errors=1)[Python Interpreter: ...]`); a reader of the runner's lines
    matches them without it.
    """
    match = _INTERPRETER.search(line.rstrip())
    return line.rstrip()[: match.start()] if match else line


@dataclass(frozen=True)
class Envelope:
    """A text split into the harness's wrapper lines and the content between them."""

    head: tuple[str, ...]
    body: tuple[str, ...]
    tail: tuple[str, ...]
    glued: str = ""
    """A wrapper the harness wrote on the content's last line (OpenHands' `[Python
    Interpreter: ...]` right after `FAILED (errors=1)`): put back where it was, so the
    line reads as the agent saw it."""

    def wrap(self, body: str) -> str:
        """`body` inside the same wrapper lines (blank ones and line-end spaces dropped)."""
        head = [line.rstrip() for line in self.head if line.strip()]
        tail = [line.rstrip() for line in self.tail if line.strip()]
        if self.glued:
            if body:
                body += self.glued
            else:
                tail.insert(0, self.glued)
        return "\n".join([*head, body, *tail] if body else [*head, *tail])


def _peel_warning(lines: list[str], head: list[str]) -> None:
    """Move a leading `<warning>...</warning>` block (mini-swe-agent) to the head."""
    if not lines or lines[0].strip() != "<warning>":
        return
    for index, line in enumerate(lines):
        if line.strip() == "</warning>":
            head.extend(lines[: index + 1])
            del lines[: index + 1]
            return


def _peel_reminders(lines: list[str], tail: list[str]) -> bool:
    """Move a trailing `<system-reminder>` block to the tail; True if one was moved."""
    if not lines or lines[-1].strip() != "</system-reminder>":
        return False
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].strip() == "<system-reminder>":
            tail[:0] = lines[index:]
            del lines[index:]
            return True
    return False


def peel(text: str) -> Envelope:
    """Split `text` into wrapper head, body and wrapper tail."""
    lines = text.split("\n")
    head: list[str] = []
    tail: list[str] = []
    while lines and _HEAD.fullmatch(lines[0].strip()):
        head.append(lines.pop(0))
        _peel_warning(lines, head)
    while lines:
        last = lines[-1].strip()
        if not last and (tail or len(lines) > 1):
            tail.insert(0, lines.pop())
        elif _TAIL.fullmatch(last):
            tail.insert(0, lines.pop())
        elif not _peel_reminders(lines, tail):
            break
    glued = ""
    if lines:
        match = _INTERPRETER.search(lines[-1])
        if match:
            glued = match.group(1)
            lines[-1] = lines[-1][: match.start()]
    return Envelope(tuple(head), tuple(lines), tuple(tail), glued)
