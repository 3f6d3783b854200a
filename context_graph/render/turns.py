"""Provider-neutral turns: what a unit of the graph says, before any provider format.

Each interaction unit becomes a short list of `Turn`s: a user turn, or an assistant turn
with its calls followed by one user turn holding every result in call order. A call
with no result gets a deterministic placeholder, so the turns of a unit are always
complete and pairing never depends on what else is rendered.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import JsonValue

from context_graph.graph.anchors import SUMMARY_HEADER
from context_graph.graph.call_ids import provider_call_id
from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart, ThinkingPart
from context_graph.graph.native import NativeCompaction, opaque_note, readable_text
from context_graph.graph.nodes import (
    AnswerNode,
    AssistantNode,
    FileNode,
    Node,
    NoteNode,
    SubagentResultNode,
    SummaryNode,
    SystemNode,
    ToolCallNode,
)
from context_graph.graph.units import Unit

__all__ = [
    "MISSING_RESULT_TEXT",
    "NATIVE_SUMMARY_HEADER",
    "Call",
    "RenderSource",
    "Result",
    "Turn",
    "UnitTurns",
    "arguments_object",
    "arguments_text",
    "call_id_for",
    "is_custom_call",
    "sendable",
    "unit_turns",
]

#: The line over the readable text of another provider's compaction, sent in its place.
NATIVE_SUMMARY_HEADER = "[summary of the conversation before this point, written by the provider]"

#: The content of the placeholder result sent for a call that never got one.
MISSING_RESULT_TEXT = (
    "[no result: this tool call did not complete; the session ended, crashed or was "
    "cancelled before its result was recorded]"
)


class RenderSource(Protocol):
    """What the renderer reads: a `ContextGraph`, or a working projection of one.

    Contract: `units()` lists interaction units in order; `version` changes whenever
    anything a render could see changes.
    """

    @property
    def version(self) -> int:
        """A number that changes with every edit."""

    def units(self) -> tuple[Unit, ...]:
        """The interaction units, in order."""

    def __getitem__(self, node_id: str) -> Node:
        """The node with this id."""

    def answer_to(self, call_node_id: str) -> Node | None:
        """The node answering a call node, if any."""

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        """The node id of the earliest call that used this tool-call id."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call, with the node it came from."""

    node: ToolCallNode
    first_use: bool
    """Whether no earlier call in the session used the same id."""


def call_id_for(call: Call, fmt: str) -> str:
    """The id to send for `call` in format `fmt` (see `context_graph.graph.call_ids`)."""
    return provider_call_id(call.node.tool_call_id, call.node.seq, call.first_use, fmt)


#: The `meta` key naming a call's (or output's) OpenAI Responses item type.
RESPONSES_TYPE = "responses_type"


def is_custom_call(node: ToolCallNode) -> bool:
    """Whether `node` is a Responses custom tool call: `arguments` is raw input text, not JSON."""
    return node.meta.get(RESPONSES_TYPE) == "custom_tool_call"


def arguments_object(node: ToolCallNode) -> dict[str, JsonValue]:
    """A call's arguments as a JSON object, for formats whose calls take only objects.

    A custom call's raw input becomes `{"input": <text>}`; arguments that are not a JSON
    object become `{"arguments": <text>}`.
    """
    if is_custom_call(node):
        return {"input": node.arguments}
    parsed = node.parsed_arguments
    return parsed if isinstance(parsed, dict) else {"arguments": node.arguments}


def arguments_text(node: ToolCallNode) -> str:
    """A call's arguments as JSON text: as recorded, or a custom call's input wrapped."""
    if is_custom_call(node):
        return json.dumps({"input": node.arguments}, ensure_ascii=False)
    return node.arguments


@dataclass(frozen=True, slots=True)
class Result:
    """The answer to one call: real, or a placeholder when the call has none."""

    call: Call
    parts: tuple[ContentPart, ...]
    is_error: bool
    synthetic: bool


@dataclass(frozen=True, slots=True)
class Turn:
    """One neutral turn: user content (results first), or assistant content with calls."""

    role: Literal["user", "assistant"]
    parts: tuple[ContentPart, ...] = ()
    calls: tuple[Call, ...] = ()
    results: tuple[Result, ...] = ()
    part_signatures: tuple[tuple[int, str], ...] = ()
    """Gemini signatures of plain parts (not thinking, not calls), by their place in `parts`:
    opaque, sent back on the part they came with."""


@dataclass(frozen=True, slots=True)
class UnitTurns:
    """A unit rendered to neutral turns, plus what the system prompt gets from it."""

    head: str
    key: tuple[str, ...]
    turns: tuple[Turn, ...]
    system: tuple[ContentPart, ...]
    pinned: bool
    kind: str
    native: NativeCompaction | None = None
    """A provider's own compaction the unit is: its provider's renderer sends this
    verbatim in place of `turns`, which say in text what any other provider can read."""


def unit_turns(source: RenderSource, unit: Unit) -> UnitTurns:
    """Turn one interaction unit into neutral turns."""
    nodes = [source[i] for i in unit.node_ids]
    head = nodes[0]
    pinned = any(n.pinned for n in nodes)
    key = unit.node_ids
    if isinstance(head, SystemNode | NoteNode):
        return UnitTurns(unit.head, key, (), head.content, pinned, head.kind)
    if isinstance(head, AssistantNode):
        turns = _assistant_turns(source, head, nodes[1:])
        return UnitTurns(unit.head, key, turns, (), pinned, head.kind)
    native = head.native if isinstance(head, SummaryNode) else None
    return UnitTurns(
        unit.head, key, (Turn("user", sendable(_user_parts(head))),), (), pinned, unit.kind, native
    )


def sendable(parts: tuple[ContentPart, ...]) -> tuple[ContentPart, ...]:
    """`parts` as every provider can take them; the same tuple when nothing needs mending.

    An image or document with neither data nor an address has nothing to send: it becomes
    a short note (an empty URL or `data` field is refused by every provider). A thinking
    block with an empty signature is unsigned: it cannot go back as signed thinking.
    """
    if not any(map(_needs_mending, parts)):
        return parts
    return tuple(map(_mended, parts))


def _needs_mending(part: ContentPart) -> bool:
    if isinstance(part, ImagePart | DocumentPart):
        return not part.data and not part.url
    return isinstance(part, ThinkingPart) and part.signature == ""


def _mended(part: ContentPart) -> ContentPart:
    if not _needs_mending(part):
        return part
    if isinstance(part, ThinkingPart):
        return part.model_copy(update={"signature": None})
    return TextPart(text=f"[{part.type} with no content: nothing to send]")


def _user_parts(node: Node) -> tuple[ContentPart, ...]:
    """Content of a node that is rendered as a user turn of its own."""
    if isinstance(node, FileNode):
        where = (
            f" lines {node.line_range[0]}-{node.line_range[1] or 'end'}" if node.line_range else ""
        )
        return (TextPart(text=f"[file {node.path}{where}]"), *node.content)
    if isinstance(node, SubagentResultNode):
        label = f"[sub-agent {node.agent_id} result]" if node.agent_id else "[sub-agent result]"
        return (TextPart(text=label), *node.content)
    if isinstance(node, SummaryNode):
        return _summary_parts(node)
    if isinstance(node, AnswerNode):
        # An answer whose call is not in view (a custom projection): plain text, never
        # a tool result, because a result with no call is rejected by every provider.
        name = node.name or "tool"
        return (TextPart(text=f"[output of {name}]"), *node.content)
    return node.content


def _summary_parts(node: SummaryNode) -> tuple[ContentPart, ...]:
    """A summary's content under `SUMMARY_HEADER`, in its first text part.

    Every format renders a summary as a user-role message (none has a better place: a
    system message mid-conversation is refused by Anthropic and Gemini, and by many
    OpenAI-compatible servers), so the header says what it is, once, here for all.
    An imported compaction (ingested from a `Compaction` event, so `seq` is set) keeps
    its own wording: Claude Code's already says the session continues from a summary,
    the header would claim it was context-graph's, and a replayed session should send
    what the original tool sent.
    """
    if node.native is not None and node.seq is not None:
        return _native_parts(node.native)
    if node.seq is not None:
        return node.content
    first, *rest = node.content or (TextPart(text=""),)
    if isinstance(first, TextPart):
        text = f"{SUMMARY_HEADER}\n\n{first.text}" if first.text else SUMMARY_HEADER
        return (TextPart(text=text), *rest)
    return (TextPart(text=SUMMARY_HEADER), first, *rest)


def _native_parts(native: NativeCompaction) -> tuple[ContentPart, ...]:
    """What a provider that cannot read `native` is sent when nothing earlier is left."""
    text = readable_text(native)
    if text is None:
        return (TextPart(text=opaque_note(native)),)
    return (TextPart(text=f"{NATIVE_SUMMARY_HEADER}\n\n{text}"),)


_PART_SIGNATURES = "thought_signatures"
"""The `meta` key where the Gemini importer keeps plain parts' signatures (`content:<n>`)."""


def _part_signatures(node: AssistantNode) -> tuple[tuple[int, str], ...]:
    """The signatures the Gemini importer kept of the node's plain parts, by part index."""
    kept = node.meta.get(_PART_SIGNATURES)
    if not isinstance(kept, dict):
        return ()
    found = []
    for key, value in kept.items():
        place = key.removeprefix("content:")
        if place.isdigit() and int(place) < len(node.content) and isinstance(value, str):
            found.append((int(place), value))
    return tuple(sorted(found))


def _assistant_turns(
    source: RenderSource, head: AssistantNode, rest: Sequence[Node]
) -> tuple[Turn, ...]:
    calls = [
        Call(n, source.first_call_with_id(n.tool_call_id) == n.id)
        for n in rest
        if isinstance(n, ToolCallNode)
    ]
    assistant = Turn(
        "assistant", sendable(head.content), tuple(calls), part_signatures=_part_signatures(head)
    )
    results = [_result_for(source, call) for call in calls]
    answered = {r.answer.id for r in results if r.answer is not None}
    # An answer whose call a projection hid goes as plain text after the results: a
    # tool result with no call would be rejected, and dropping it would lose it.
    stray = tuple(
        part
        for node in rest
        if isinstance(node, AnswerNode) and node.id not in answered
        for part in sendable(_user_parts(node))
    )
    if not results and not stray:
        return (assistant,)
    return (assistant, Turn("user", stray, results=tuple(r.result for r in results)))


@dataclass(frozen=True, slots=True)
class _Answered:
    result: Result
    answer: Node | None


def _result_for(source: RenderSource, call: Call) -> _Answered:
    answer = source.answer_to(call.node.id)
    if answer is None:
        return _Answered(Result(call, (TextPart(text=MISSING_RESULT_TEXT),), True, True), None)
    is_error = isinstance(answer, AnswerNode) and answer.is_error
    return _Answered(Result(call, sendable(answer.content), is_error, False), answer)
