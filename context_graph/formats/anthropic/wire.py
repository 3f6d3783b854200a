"""Anthropic Messages' constants: overheads, tool-call ids, price, usage."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from context_graph.formats.anthropic.as_chat import chat_messages, system_body
from context_graph.formats.anthropic.usage import is_anthropic_usage, read_anthropic_usage
from context_graph.formats.wire import (
    ArtifactProblem,
    CachePrice,
    FormatOverhead,
    IdRule,
    NativeArtifact,
    Wire,
)

__all__ = ["COMPACTION", "WIRE"]


def _check_compaction(item: Mapping[str, Any]) -> None:
    """A `compaction` block's readable `content` and its `tool_changes` list."""
    content = item.get("content")
    if content is not None and (not isinstance(content, str) or not content):
        msg = f"`content` must be the summary text or null, got {_shown(content)}"
        raise ArtifactProblem(msg, "item.content")
    changes = item.get("tool_changes")
    if changes is not None and not (
        isinstance(changes, list | tuple) and all(isinstance(c, Mapping) for c in changes)
    ):
        msg = f"`tool_changes` must be a list of objects or null, got {_shown(changes)}"
        raise ArtifactProblem(msg, "item.tool_changes")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


#: A `compaction` content block at the start of an assistant message (the
#: `compact_20260112` context-management edit): readable `content`, optional opaque fields.
COMPACTION = NativeArtifact(
    keys=frozenset(
        {"type", "content", "encrypted_content", "signature", "tool_changes", "cache_control"}
    ),
    optional_text=("encrypted_content", "signature"),
    check=_check_compaction,
    readable_key="content",
    reader="Anthropic",
    noun="compaction block",
    # The API ignores everything before its compaction block.
    keeps_user_turns=False,
)

WIRE = Wire(
    name="anthropic",
    reader_name="anthropic",
    # Not published: conservative estimates; `per_tools` is the tool-use system prompt
    # Anthropic documents (a few hundred tokens).
    overhead=FormatOverhead(
        per_message=4,
        per_tool_call=12,
        per_tool_result=8,
        per_request=4,
        per_tool=8,
        per_tools=346,
    ),
    # Anthropic accepts `^[a-zA-Z0-9_-]+$` and rejects an id used twice in one request.
    id_rule=IdRule(re.compile(r"[a-zA-Z0-9_-]+"), 64),
    price=CachePrice("Anthropic", "Claude Sonnet 4.5", 3.00, read=0.1, write=1.25, minimum=1024),
    read_usage=read_anthropic_usage,
    owns_usage=is_anthropic_usage,
    history_key="messages",
    system_body=system_body,
    as_chat=chat_messages,
    native=COMPACTION,
    signs_thinking=True,
    providers=frozenset({"anthropic"}),
)
