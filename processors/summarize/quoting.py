"""Quoting text from a session so that it cannot end its quote: fences and code spans.

A quote is delimited by a run of backticks one longer than the longest run inside it.
CommonMark closes a fence or a code span only at a run of the same length, so nothing
the quoted text holds (a backtick, a forged fence, a `User:` line) can close it. The
model prompt fences each block of the transcript; the extractive brief quotes each line
it copies from a tool's output as a code span.
"""

from __future__ import annotations

import functools
import re

__all__ = [
    "OUTPUT_OF",
    "clear_cache",
    "code_span",
    "fence",
    "find_output_quote",
    "outside_spans",
    "quote_output",
    "read_span",
]

#: How a quote of tool output opens in the brief: `output of `bash`: `the line``.
OUTPUT_OF = "output of "

_BACKTICKS = re.compile(r"`+")


def _marker(text: str, shortest: int) -> str:
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    return "`" * max(shortest, longest + 1)


def fence(text: str) -> str:
    """`text` between backtick fences it cannot close: one backtick longer than its longest run."""
    marker = _marker(text, 3)
    return f"{marker}\n{text}\n{marker}"


# A brief is rendered again after each item its bound drops, with the same identifiers.
@functools.lru_cache(maxsize=4096)
def code_span(text: str) -> str:
    """One line of `text` as an inline code span it cannot close.

    Newlines become spaces (a span is one line of the brief). A space pads each side
    when the text starts or ends with a backtick or a space: CommonMark strips one such
    pair, so `read_span` gives the text back exactly.
    """
    line = text.replace("\r", " ").replace("\n", " ")
    marker = _marker(line, 1)
    edges = (line[:1], line[-1:])
    pad = " " if line.strip() and ("`" in edges or " " in edges) else ""
    return f"{marker}{pad}{line}{pad}{marker}"


def clear_cache() -> None:
    """Forget the memoized code spans (`processors.caches.clear_caches`)."""
    code_span.cache_clear()


def read_span(text: str, start: int) -> tuple[str, int] | None:
    """The code span that opens at `start`: its text and the offset just past it.

    `None` when no span opens there (no backticks, or no closing run of the same length
    on the same line).
    """
    opening = _BACKTICKS.match(text, start)
    if opening is None:
        return None
    size = len(opening.group(0))
    end_of_line = text.find("\n", start)
    stop = len(text) if end_of_line < 0 else end_of_line
    for run in _BACKTICKS.finditer(text, opening.end(), stop):
        if len(run.group(0)) == size:
            inner = text[opening.end() : run.start()]
            if len(inner) >= 2 and inner[0] == inner[-1] == " " and inner.strip():
                inner = inner[1:-1]
            return inner, run.end()
    return None


def outside_spans(text: str) -> str:
    """`text` with every one-line code span blanked out (same length, same lines).

    A backtick run with no closing run of its length on its line is literal text, as in
    CommonMark, and stays; so does everything between spans.
    """
    out: list[str] = []
    position = 0
    while (run := _BACKTICKS.search(text, position)) is not None:
        span = read_span(text, run.start())
        if span is None:
            out.append(text[position : run.end()])
            position = run.end()
            continue
        out.append(text[position : run.start()])
        out.append(" " * (span[1] - run.start()))
        position = span[1]
    out.append(text[position:])
    return "".join(out)


def quote_output(tool: str, line: str) -> str:
    """A line of a tool's output, attributed and quoted: ``output of `bash`: `line` ``."""
    return f"{OUTPUT_OF}{code_span(tool)}: {code_span(line)}"


def find_output_quote(text: str) -> tuple[int, str, str] | None:
    """The `quote_output` that ends `text`: where it starts, the tool and the line.

    The first place from which `output of <span>: <span>` runs exactly to the end of
    `text`; `None` when there is none (an item written before quotes, or in prose).
    """
    start = text.find(OUTPUT_OF)
    while start >= 0:
        tool = read_span(text, start + len(OUTPUT_OF))
        if tool is not None and text.startswith(": ", tool[1]):
            line = read_span(text, tool[1] + 2)
            if line is not None and line[1] == len(text):
                return start, tool[0], line[0]
        start = text.find(OUTPUT_OF, start + 1)
    return None
