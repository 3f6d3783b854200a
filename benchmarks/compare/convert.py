"""What every peer adapter needs from our events: texts, user content, call ids.

Peers get the same information the agent had: text, images in user turns, tool calls
with their ids and arguments, results with their call ids and error flags. Thinking
blocks are not sent in OpenAI Chat Completions, by us or by the peers.
"""

from __future__ import annotations

import json
from typing import Any

from context_graph import (
    AgentEvent,
    Compaction,
    FileRead,
    ImagePart,
    Note,
    SubagentResult,
    SystemPrompt,
    TextPart,
    ToolResult,
    UserTurn,
)

Answer = ToolResult | FileRead | SubagentResult


def text_of(event: AgentEvent) -> str:
    """The event's text parts, one per line."""
    return "\n".join(p.text for p in getattr(event, "content", ()) if isinstance(p, TextPart))


def image_urls(event: AgentEvent) -> list[str]:
    """The images of the event as URLs (inline ones as data URIs)."""
    urls: list[str] = []
    for part in getattr(event, "content", ()):
        if isinstance(part, ImagePart):
            data = part.data or ""
            urls.append(part.url or f"data:{part.media_type or 'image/png'};base64,{data}")
    return urls


def user_content(event: AgentEvent) -> str | list[dict[str, Any]]:
    """OpenAI user content: the text, or text and image blocks when there are images."""
    urls = image_urls(event)
    if not urls:
        return text_of(event)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text_of(event)}]
    blocks += [{"type": "image_url", "image_url": {"url": url}} for url in urls]
    return blocks


def role_of(event: AgentEvent) -> str:
    """`system`, `user`, `assistant`, `answer` (a result, file read or sub-agent answer)
    or `compaction`."""
    if isinstance(event, SystemPrompt | Note):
        return "system"
    if isinstance(event, Compaction):
        return "compaction"
    if isinstance(event, UserTurn):
        return "user"
    if isinstance(event, ToolResult | FileRead | SubagentResult):
        return "answer"
    return "assistant"


def call_id_of(event: AgentEvent) -> str | None:
    """The call an answer answers, if any."""
    return getattr(event, "call_id", None)


def arguments_dict(arguments: str) -> dict[str, Any]:
    """Tool call arguments as a dict (LangChain's `args`); non-objects are wrapped."""
    try:
        value = json.loads(arguments)
    except ValueError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}
