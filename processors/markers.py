"""The lines the processors write in place of what they left out.

A distilled output says `[... 12 lines ...]` where it dropped lines, starts with its
`[distilled traceback, medium: 782 -> 486 tokens]` header and may end with the entity
reserve `[also in the original: ...]`; a truncated one says `[... 40 lines / 1,210 tokens
omitted ...]`. None of them is the output's own: a reader of outputs (the brief's error
line, a test run's outcome) reads past them, as it would read the original; the brief
reads the original itself where the record has it (`uncut`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Container

from context_graph.graph.nodes import ANSWER_KINDS, Node

__all__ = ["DISTILLED_HEADER", "REDACTED", "is_marker", "uncut", "without_markers"]

#: The meta key of a redacted copy (`processors.redact`); copies made from it keep it.
REDACTED = "redacted"

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


def uncut(node: Node, graph: Container[str], lookup: Callable[[str], Node]) -> Node:
    """The output `node` stands for before distillations and truncations cut it.

    Back through the nodes it replaced while each is a cut (its text holds a marker
    line), to the first that is not: the pristine output, or whatever other edit made
    it. Never past a redacted copy (`meta["redacted"]`, which every copy made from it
    keeps): what a redaction took out stays out. Anything but an output is itself.

    Args:
        node: A node of the view.
        graph: Which ids the record holds (a node's source may be gone: a withdrawal).
        lookup: A node of the record by id.
    """
    current = node
    while (
        current.kind in ANSWER_KINDS
        and current.replaces is not None
        and REDACTED not in current.meta
        and current.replaces in graph
        and any(is_marker(line) for line in current.text.split("\n"))
    ):
        current = lookup(current.replaces)
    return current
