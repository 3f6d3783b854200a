"""The lines the processors write in place of what they left out.

A distilled output says `[... 12 lines ...]` where it dropped lines, starts with its
`[distilled traceback, medium: 782 -> 486 tokens]` header and may end with the entity
reserve `[also in the original: ...]`; a truncated one says `[... 40 lines / 1,210 tokens
omitted ...]`. None of them is the output's own: a reader of outputs (the brief's error
line, a test run's outcome) reads past them, as it would read the original.
"""

from __future__ import annotations

import re

__all__ = ["DISTILLED_HEADER", "is_marker", "without_markers"]

#: A distillation's first line: what it read, at which level, and the tokens before and
#: after (`[distilled traceback, medium: 782 -> 486 tokens]`); the distiller reads it back.
DISTILLED_HEADER = re.compile(
    r"^\[distilled (.+?), (light|medium|heavy): ([\d,]+) -> ([\d,]+) tokens\]"
)

#: Each processor's marker line, whole (`processors.distill.common.omitted`,
#: `processors.truncate.units.marker`, the distiller's header, `distill.reserve`).
_MARKER = re.compile(
    r"^\s*(?:\[\.\.\. [\d,]+ lines? \.\.\.\]"
    r"|\[\.\.\. (?:about )?[^\]\n]*?[\d,]+ tokens omitted \.\.\.\]"
    rf"|{DISTILLED_HEADER.pattern[1:]}"
    r"|\[also in the original: .*\])\s*$"
)


def is_marker(line: str) -> bool:
    """Whether `line` is a processor's marker, not a line of the output."""
    return _MARKER.match(line) is not None


def without_markers(text: str) -> str:
    """`text` without its marker lines (`is_marker`); the other lines as they were."""
    if "[" not in text:
        return text
    return "\n".join(line for line in text.split("\n") if not is_marker(line))
