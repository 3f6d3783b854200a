"""A request rendered in any provider format, read back as chat messages for a framework.

The LangChain and pydantic-ai integrations render the history in the format of the model
the framework calls, so that it is fitted and counted as that provider counts it, and
then hand the framework its own message objects for what was kept. This module has each
format read its rendered body (`RenderResult.payload`; `Wire.as_chat`, in the format's
folder) into one shape the two converters share, the Chat Completions message list they
always read, plus what the chat format has no place for: each assistant message's
`reasoning` (Anthropic thinking and redacted thinking, Gemini thought parts, Responses
reasoning items, as engine content parts).

Reading the rendered body, rather than rendering a second time in the chat format, keeps
one fit: what the framework is given is exactly what was counted. A call id the renderer
rewrote for a format (an Anthropic id with a dot in it) is read back as the id the
framework recorded, so the converters find the original messages by it.

Text blocks stay blocks (a message with several has a list of text parts): a format that
merges neighbouring messages of a role (Anthropic and Gemini send the summary and the
user's new request as one user turn) keeps them apart only as blocks, and the system
prompt and the pinned notes are blocks of one `system` field. A tool result's blocks are
joined, as the converters join the original's to find it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from context_graph.formats.chat_items import REASONING_KEY, Ids, Item
from context_graph.formats.wires import WIRES
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.graph.nodes import ToolCallNode
from context_graph.render import RenderResult, count_payload
from context_graph.tokens.counting import ProviderFormat

__all__ = ["REASONING_KEY", "chat_items", "original_ids", "reasoning_key", "system_tokens"]


def system_tokens(text: str, format: ProviderFormat, cache: NodeTokenCache) -> int:
    """What a system prompt the framework sends beside the history adds to a request."""
    if not text:
        return 0
    wire = WIRES[format]
    empty: dict[str, Any] = {wire.history_key: []}
    return count_payload(wire.system_body(text), format, cache) - count_payload(
        empty, format, cache
    )


def reasoning_key(part: Mapping[str, Any]) -> tuple[str, ...] | None:
    """What identifies an engine reasoning part when a message is matched to its original."""
    kind = part.get("type")
    if kind == "thinking":
        return ("thinking", str(part.get("thinking", "")), str(part.get("signature")))
    if kind == "redacted_thinking":
        return ("redacted_thinking", str(part.get("data", "")))
    if kind == "reasoning":
        return ("reasoning", str(part.get("id")))
    return None


def original_ids(result: RenderResult, graph: ContextGraph) -> Ids:
    """The call id the framework recorded, of each id the render sent (most are the same)."""
    recorded: dict[str, str] = {}
    for sent, node_id in result.call_ids.items():
        node = graph.get(node_id)
        if isinstance(node, ToolCallNode) and node.tool_call_id != sent:
            recorded[sent] = node.tool_call_id
    return lambda sent: recorded.get(sent, sent)


def chat_items(result: RenderResult, original_id: Ids) -> list[Item]:
    """The rendered request as Chat Completions messages, reasoning kept beside them.

    Each format reads its own body (`Wire.as_chat`).

    Args:
        result: The render.
        original_id: The call id the framework recorded, of an id as rendered.
    """
    return WIRES[result.format].as_chat(result.payload, original_id)
