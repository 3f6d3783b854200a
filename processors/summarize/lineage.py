"""Lineage: which nodes each line of a summary came from.

A summary node records the nodes it abstracts; this records, per line, the nodes the
line was read from, so that a reader of the brief (`ContextManager.expand_line`, the
expand tool) can go from "- Skip the invoices table." to the user turn that said it.
It is found after the text is written, for any summarizer: a line carried over from a
summary this one updates keeps that summary's sources; a line that describes a tool
use (as the extractive brief writes it) is that call and its answer; any other line is
traced to the turns and calls that hold its text, or failing that a quoted part of it
(a code span, a clause), or the identifiers it lists. Headings and the brief's own
counts ("(3 earlier items omitted)") have no source.

```python
sources = line_sources(text, span, describe=describe_use)  # {"5": ["000012-user-…"]}
```
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

from pydantic import JsonValue

from context_graph.graph.nodes import (
    AnswerNode,
    AssistantNode,
    FileNode,
    Node,
    NoteNode,
    SummaryNode,
    ToolCallNode,
    UserNode,
)
from processors.summarize.facts import ToolUse, dedupe, tool_uses

__all__ = ["LINE_SOURCES", "clear_cache", "line_sources", "sources_of"]

#: The summary node's `meta` key for its lines' sources: line number (1-based, as a
#: string) to the ids of the nodes the line came from.
LINE_SOURCES = "line_sources"
#: A piece of a line that matches more nodes than this names nothing in particular.
_MOST_NODES = 8
_SPAN = re.compile(r"`([^`\n]{3,})`")
_CLAUSES = re.compile(r"[;:,]\s+|\s+-\s+")
_WORD = re.compile(r"\w{4,}")
_ITEM = re.compile(r"^\s*(?:[-*]|\d+[.)])\s+")
_LABEL = re.compile(
    r"^(?:\[[\w -]+\]\s*(?:`[^`]*`:\s*)?|the (?:user|assistant) asked: |Note: |Asked for: "
    r"|From tool output: )"
)
_CUT = " [...]"
_OMITTED = re.compile(r"(?:- )?\(\d+ earlier items? omitted\)")


def line_sources(
    text: str,
    span: Sequence[Node],
    *,
    carried: Sequence[SummaryNode] = (),
    describe: Callable[[ToolCallNode, ToolUse], str] | None = None,
) -> dict[str, JsonValue]:
    """The sources of each line of `text`, a summary of `span`.

    Args:
        text: The summary's text.
        span: The nodes it summarizes, in order (summaries among them are carried).
        carried: Summaries it updates besides those in `span` (the previous one).
        describe: Writes a tool use's line as the brief does; such a line is that use.
    """
    index = _Index(span, [*carried, *(n for n in span if isinstance(n, SummaryNode))], describe)
    found: dict[str, JsonValue] = {}
    for number, line in enumerate(text.split("\n"), start=1):
        ids = index.trace(line)
        if ids:
            found[str(number)] = list[JsonValue](ids)
    return found


def sources_of(summary: Node, line: int) -> tuple[str, ...]:
    """The ids recorded as the sources of `line` (1-based) of `summary`; empty if none."""
    table = summary.meta.get(LINE_SOURCES)
    if not isinstance(table, Mapping):
        return ()
    ids = table.get(str(line))
    return tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, list) else ()


class _Index:
    """The span's nodes, read once, for tracing many lines."""

    def __init__(
        self,
        span: Sequence[Node],
        carried: Iterable[SummaryNode],
        describe: Callable[[ToolCallNode, ToolUse], str] | None,
    ) -> None:
        answers = {n.tool_call_id: n.id for n in span if isinstance(n, AnswerNode)}
        self._answers = answers
        self._calls = {n.id: n.tool_call_id for n in span if isinstance(n, ToolCallNode)}
        self._said: list[tuple[str, str]] = [
            (node.id, _flattened(_searchable(node)))
            for node in span
            if isinstance(node, UserNode | AssistantNode | NoteNode | ToolCallNode | FileNode)
        ]
        self._outputs = [(n.id, n.text) for n in span if isinstance(n, AnswerNode)]
        self._words: list[tuple[str, frozenset[str]]] | None = None
        self._carried: dict[str, tuple[str, ...]] = {}
        for summary in carried:
            for number, line in enumerate(summary.text.split("\n"), start=1):
                key = line.strip()
                if key and key not in self._carried:
                    self._carried[key] = sources_of(summary, number) or (summary.id,)
        self._uses: dict[str, tuple[str, ...]] = {}
        if describe is not None:
            for use in tool_uses(span):
                if use.call is not None:
                    ids = (use.call.id, use.answer.id)
                    self._uses.setdefault(describe(use.call, use), ids)

    def trace(self, line: str) -> tuple[str, ...]:
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or _OMITTED.fullmatch(stripped):
            return ()
        if stripped in self._carried:
            return self._carried[stripped]
        body = _LABEL.sub("", _ITEM.sub("", stripped)).removesuffix(_CUT).strip()
        if body in self._uses:
            return self._uses[body]
        for piece in _pieces(body):
            ids = self._holding(piece)
            if ids:
                return ids
        return self._identifiers(body) or self._overlap(body)

    def _holding(self, piece: str) -> tuple[str, ...]:
        """The nodes whose text holds `piece`, with the answers of the calls among them."""
        ids = [node_id for node_id, said in self._said if piece in said]
        if not ids or len(ids) > _MOST_NODES:
            return ()
        return tuple(dedupe(self._with_answers(ids)))

    def _with_answers(self, ids: Iterable[str]) -> Iterable[str]:
        for node_id in ids:
            yield node_id
            call_id = self._calls.get(node_id)
            if call_id is not None and call_id in self._answers:
                yield self._answers[call_id]

    def _identifiers(self, body: str) -> tuple[str, ...]:
        """For a list of identifiers: the first node that holds each one."""
        found: list[str] = []
        for item in (i.strip(" `") for i in body.split(", ")):
            if len(item) < 2:
                continue
            holder = next((i for i, said in self._said if item in said), None)
            if holder is None:
                holder = next((i for i, output in self._outputs if item in output), None)
            if holder is not None:
                found.append(holder)
        return tuple(dedupe(found))

    def _overlap(self, body: str) -> tuple[str, ...]:
        """The node sharing the most words with `body` (two at least), if any."""
        words = {w.casefold() for w in _WORD.findall(body)}
        best, best_shared = "", 1
        for node_id, said in self._said_words():
            shared = len(words & said)
            if shared > best_shared:
                best, best_shared = node_id, shared
        return (best,) if best else ()

    def _said_words(self) -> list[tuple[str, frozenset[str]]]:
        """Each node's words, casefolded, read once for every line that needs them.

        A brief has dozens of lines that quote no node, each compared with every node.
        """
        if self._words is None:
            self._words = [(node_id, _words_of(said)) for node_id, said in self._said]
        return self._words


# A span is traced again when its summary waits or is made again (a repeated pass, a
# rolling summary over the same turns): each text is flattened and split into words once.
@functools.lru_cache(maxsize=4096)
def _flattened(text: str) -> str:
    return " ".join(text.split())


@functools.lru_cache(maxsize=4096)
def _words_of(said: str) -> frozenset[str]:
    return frozenset(w.casefold() for w in _WORD.findall(said))


def clear_cache() -> None:
    """Forget the texts flattened and split (`processors.caches.clear_caches`)."""
    _flattened.cache_clear()
    _words_of.cache_clear()


def _searchable(node: Node) -> str:
    """The text a line may quote from `node`: what was said, or a call's name and input."""
    if isinstance(node, ToolCallNode):
        return f"{node.name} {node.arguments}"
    if isinstance(node, FileNode):
        return node.path
    return node.text


def _pieces(body: str) -> Iterable[str]:
    """What of a line to look for, most telling first: all of it, its code spans, clauses."""
    if len(body) >= 3:
        yield body
    yield from (m.group(1) for m in _SPAN.finditer(body))
    yield from (part for part in _CLAUSES.split(body) if len(part) >= 12)
