"""Tracebacks: the exception, the frames inside the project, the last frame.

Python tracebacks (chained ones too) and `at ...` stack traces (JavaScript, Java) are
found in the body; for each, the header, the exception lines, the chain separators,
the frames whose file is inside the project (not site-packages, dist-packages, the
standard library, `<frozen ...>`, node_modules or the JDK) and the last frame are kept.
Caret lines (`^^^^`) go. Medium keeps every project frame, with its code line for the
first and the last two; heavy keeps only the first and the last project frames, and the
code line of the last frame.
Lines around the tracebacks are treated like a log: error lines stay.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from processors.distill.common import Doc, is_error_line, select

__all__ = [
    "TracebackBlock",
    "distill_traceback",
    "find_tracebacks",
    "is_library_path",
    "share_of",
    "traceback_share",
]

_HEADER = re.compile(r"^\s*Traceback \(most recent call last\):\s*$")
_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+)(?:, in (.+))?\s*$')
_AT_FRAME = re.compile(r"^\s+at (?:.+ \()?(.+?)(?::\d+(?::\d+)?)?\)?\s*$")
_CARET = re.compile(r"^\s*[\^~]+\s*$")
_CHAIN = re.compile(
    r"^(During handling of the above exception|The above exception was the direct cause)"
)
_LIBRARY = re.compile(
    r"site-packages|dist-packages|/lib/python\d|\\lib\\|<frozen |<string>|/usr/lib/"
    r"|node_modules|node:internal|^internal/|^(?:java|javax|jdk|sun|kotlin|scala)\."
    r"|/\.pyenv/|/\.rustup/|/go/src/runtime/"
)


def is_library_path(path: str) -> bool:
    """Whether a frame's file lies outside the project (stdlib, installed packages)."""
    return _LIBRARY.search(path) is not None


@dataclass
class TracebackBlock:
    """Where one traceback sits in a body, by line index.

    Attributes:
        start: The header line (or the message line above `at` frames).
        frames: `(frame line, code lines, is_library)` for each frame, outermost first.
        tail: The exception lines after the last frame.
    """

    start: int
    frames: list[tuple[int, list[int], bool]] = field(default_factory=list)
    tail: list[int] = field(default_factory=list)

    @property
    def end(self) -> int:
        """The last line index of the block."""
        last = [self.start, *self.tail]
        for frame, code, _ in self.frames:
            last.extend([frame, *code])
        return max(last)


def _python_block(lines: Sequence[str], start: int) -> TracebackBlock:
    block = TracebackBlock(start)
    index = start + 1
    while index < len(lines):
        match = _PY_FRAME.match(lines[index])
        if match:
            block.frames.append((index, [], is_library_path(match.group(1))))
        elif block.frames and lines[index].startswith((" ", "\t")) and lines[index].strip():
            if not _CARET.match(lines[index]):
                block.frames[-1][1].append(index)
        else:
            break
        index += 1
    while index < len(lines) and lines[index].strip() and not _HEADER.match(lines[index]):
        if _PY_FRAME.match(lines[index]) or _CHAIN.match(lines[index]):
            break
        block.tail.append(index)
        index += 1
    return block


def _at_block(lines: Sequence[str], start: int) -> tuple[TracebackBlock, int]:
    block = TracebackBlock(max(0, start - 1))
    index = start
    while index < len(lines):
        match = _AT_FRAME.match(lines[index])
        if not match:
            break
        block.frames.append((index, [], is_library_path(match.group(1).strip())))
        index += 1
    return block, index


def find_tracebacks(lines: Sequence[str]) -> list[TracebackBlock]:
    """Every traceback or stack trace in `lines`, in order."""
    blocks: list[TracebackBlock] = []
    index = 0
    while index < len(lines):
        if _HEADER.match(lines[index]):
            block = _python_block(lines, index)
            blocks.append(block)
            index = block.end + 1
        elif _AT_FRAME.match(lines[index]) and index + 1 < len(lines):
            if _AT_FRAME.match(lines[index + 1]):
                at_block, index = _at_block(lines, index)
                blocks.append(at_block)
                continue
            index += 1
        else:
            index += 1
    return blocks


def traceback_share(lines: Sequence[str]) -> float:
    """The share of non-blank lines that belong to a traceback."""
    return share_of(lines, find_tracebacks(lines))


def share_of(lines: Sequence[str], blocks: Sequence[TracebackBlock]) -> float:
    """`traceback_share(lines)` from `find_tracebacks(lines)` found already."""
    filled = sum(1 for line in lines if line.strip())
    if not filled:
        return 0.0
    covered = sum(b.end - b.start + 1 for b in blocks)
    return min(1.0, covered / filled)


def _kept_frames(block: TracebackBlock, *, heavy: bool) -> set[int]:
    project = [f for f in block.frames if not f[2]]
    if heavy and len(project) > 2:
        project = [project[0], project[-1]]
    keep: set[int] = set()
    for rank, (frame, code, _) in enumerate(project):
        keep.add(frame)
        if not heavy and (rank == 0 or rank >= len(project) - 2):
            keep.update(code[:1])
    if block.frames:
        last, code, _ = block.frames[-1]
        keep.add(last)
        keep.update(code[:1])
    return keep


def _chains(lines: Sequence[str]) -> set[int]:
    return {i for i, line in enumerate(lines) if _CHAIN.match(line)}


def distill_traceback(doc: Doc) -> str:
    """Distill a body that holds one or more tracebacks."""
    blocks = find_tracebacks(doc.plain)
    must: set[int] = {0, len(doc.plain) - 1} | _chains(doc.plain)
    inside: set[int] = set()
    for block in blocks:
        inside.update(range(block.start, block.end + 1))
        must.add(block.start)
        must.update(block.tail)
        must |= _kept_frames(block, heavy=doc.heavy)
    outside_errors = {
        i for i, line in enumerate(doc.plain) if i not in inside and is_error_line(line)
    }
    return select(doc, must | outside_errors)
