"""Trimming the folder tree a harness sends before the task: orientation the agent has used.

Gemini CLI opens every session with a `<session_context>` notice: the date, the OS, the
workspace, and its folder tree, up to 200 entries (about 2,000 tokens: a quarter of an
8,000-token budget, sent again with every request). The tree orients the agent at the
start; once the session needs compacting, the agent has listed and read what it works
on, and the deeper entries are the part of the request it reads least. No other stage
takes a notice before the user's first request (`orchestrator.compaction.preamble`).

`PreambleTreeTrimmer` keeps such a tree's shallowest levels, up to `max_entries` lines
(at least the top level), and puts one marker where the deeper lines were; every other
line of the notice stays as it was. Only notices before the first request are trimmed:
the harness's text about the workspace, not the user's words, and not a notice that
arrived with the work. A tree with notes after its entries (`├── gen/  # do not edit`)
is one someone wrote, as in the CLAUDE.md that Claude Code sends in a reminder notice
before the prompt; it may hold a rule, and stays whole. The pristine record keeps the
whole tree (`expand` brings it back).

A tree line is one whose entry follows a branch (`├`, `└`, `|--`, `` `-- ``) after an
indent of spaces and verticals (`│`, `|`): the layout of `tree`, of Gemini CLI's
listing, and of most pretty-printers. A tree's depth is the column of its branch.

```python
proposal = await PreambleTreeTrimmer(max_entries=40).propose(nodes, ctx)
```
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.anchors import preamble_heads
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.nodes import Node, UserNode
from processors.base import ProcessorContext, Proposal, Scope, replace_each, replacement_for
from processors.registry import register_processor

__all__ = ["TREE_TRIMMED_KEY", "PreambleTreeTrimmer", "trim_trees"]

#: The `meta` key of a trimmed notice: how many tree lines were left out.
TREE_TRIMMED_KEY = "tree_entries_omitted"

#: A tree shorter than this is not worth a marker.
_MIN_TREE_LINES = 10

#: What sets a note apart from the entry it follows in a tree someone wrote by hand
#: (`├── cli.py  # the entry point`, `└── gen/ (do not edit)`): such a tree is
#: instructions, not a listing, and stays whole.
_NOTE_MARKS = ("  ", " #", " //", " - ", " — ", " <-", " ←", " (")


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    max_entries: int = Field(ge=1)
    min_tokens: int = Field(ge=0)


class PreambleTreeTrimmer:
    """Cuts the folder trees of the harness's notices before the first request to their top.

    Args:
        max_entries: How many lines of each tree stay: its shallowest levels that fit
            (the top level always stays whole).
        min_tokens: Notices under this many tokens are left alone.

    Raises:
        ConfigurationError: an option is not an integer of its range.
    """

    name = "trim_preamble_trees"
    scope: ClassVar[Scope] = "preamble"

    def __init__(self, *, max_entries: int = 40, min_tokens: int = 200) -> None:
        try:
            self._options = _Options(max_entries=max_entries, min_tokens=min_tokens)
        except ValidationError:
            msg = (
                "PreambleTreeTrimmer: `max_entries` must be an integer >= 1 and `min_tokens` "
                f"an integer >= 0, got max_entries={max_entries!r}, min_tokens={min_tokens!r}"
            )
            raise ConfigurationError(msg) from None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a trimmed copy of every preamble notice among `targets` that holds a tree."""
        preamble = _preamble_heads(ctx)
        return replace_each(
            self.name,
            ctx,
            ((node, self._trimmed(node, ctx)) for node in targets if _in(node, preamble, ctx)),
            note=lambda edits, before, after: (
                f"trimmed the folder tree of {edits} notice(s): {before:,} -> {after:,} tokens"
            ),
        )

    def _trimmed(self, node: Node, ctx: ProcessorContext) -> Node | None:
        if ctx.count(node) < self._options.min_tokens:
            return None
        omitted = 0
        content: list[ContentPart] = []
        for part in node.content:
            if isinstance(part, TextPart):
                text, left_out = trim_trees(part.text, self._options.max_entries)
                omitted += left_out
                part = part.model_copy(update={"text": text}) if left_out else part
            content.append(part)
        if not omitted:
            return None
        earlier = node.meta.get(TREE_TRIMMED_KEY)
        meta = {
            **node.meta,
            TREE_TRIMMED_KEY: omitted + (earlier if isinstance(earlier, int) else 0),
        }
        return replacement_for(node, content, meta=meta)


def _preamble_heads(ctx: ProcessorContext) -> frozenset[str]:
    """The heads of the notice units before the user's first request.

    The pipeline hands this processor those notices alone (scope `preamble`); asked
    directly with other nodes, it still trims only these.
    """
    return frozenset(preamble_heads(ctx.graph.units()))


def _in(node: Node, preamble: frozenset[str], ctx: ProcessorContext) -> bool:
    if not isinstance(node, UserNode) or not node.notice or node.pinned:
        return False
    return node.id in ctx.graph and ctx.graph.unit_of(node.id).head in preamble


def _branch_column(line: str) -> int | None:
    """The column of a tree line's branch, or None when the line is no tree entry.

    One pass over the indent, no pattern: a hostile line costs its length once.
    """
    for column, char in enumerate(line):
        if char in "├└" or (char in "|`" and line.startswith("--", column + 1)):
            rest = line[column + 1 :].lstrip("─-— ")
            return column if rest.strip() else None
        if char not in " \t│|":
            return None
    return None


def _annotated(line: str, column: int | None) -> bool:
    """Whether a tree line carries a note after its entry (`_NOTE_MARKS`)."""
    if column is None:
        return False
    entry = line[column + 1 :].lstrip("─-— ").rstrip()
    return any(mark in entry for mark in _NOTE_MARKS)


def trim_trees(text: str, max_entries: int) -> tuple[str, int]:
    """`text` with each tree's deeper lines left out, and how many lines went.

    A tree is a run of consecutive tree lines at least `_MIN_TREE_LINES` long, none of
    them with a note after its entry (`_NOTE_MARKS`: a tree written by hand, as in a
    CLAUDE.md, may hold a rule in a note; it stays whole). Its lines
    at the shallowest columns stay, as many levels as fit in `max_entries` lines (the top
    level whole even when it alone is longer); one marker line after the run says how
    many went.
    """
    lines = text.split("\n")
    columns = [_branch_column(line) for line in lines]
    out: list[str] = []
    omitted = 0
    start = 0
    while start < len(lines):
        if columns[start] is None:
            out.append(lines[start])
            start += 1
            continue
        stop = start
        while stop < len(lines) and columns[stop] is not None:
            stop += 1
        kept, left_out = _trim_run(lines[start:stop], columns[start:stop], max_entries)
        out.extend(kept)
        omitted += left_out
        start = stop
    return ("\n".join(out), omitted) if omitted else (text, 0)


def _trim_run(
    lines: Sequence[str], columns: Sequence[int | None], max_entries: int
) -> tuple[list[str], int]:
    if len(lines) < _MIN_TREE_LINES or any(map(_annotated, lines, columns)):
        return list(lines), 0
    per_depth = Counter(column for column in columns if column is not None)
    depths = sorted(per_depth)
    deepest, shown = depths[0], per_depth[depths[0]]
    for depth in depths[1:]:  # one count per depth: a tree of many depths is read once
        shown += per_depth[depth]
        if shown > max_entries:
            break
        deepest = depth
    kept = [
        line
        for line, column in zip(lines, columns, strict=True)
        if column is not None and column <= deepest
    ]
    left_out = len(lines) - len(kept)
    if not left_out:
        return list(lines), 0
    return [*kept, f"[... {left_out:,} deeper entries of this tree omitted ...]"], left_out


register_processor(PreambleTreeTrimmer)
