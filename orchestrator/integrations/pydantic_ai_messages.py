"""pydantic-ai `ModelMessage`s to engine events, and a rendered request back.

A `ThinkingPart` becomes the engine part its provider sends back: an Anthropic one a
`thinking` part with its signature (its redacted form a `redacted_thinking` part), a
Google one a Gemini-signed `thinking` part, an OpenAI Responses one (an `rs_` id) a
`reasoning` part with its encrypted content; so each goes back only to its own provider.
The request comes back as Chat Completions messages with each assistant message's
reasoning beside them (`orchestrator.integrations.rendered.chat_items`, from any format).
Going back, every part the engine left as it was is the original part object (a
`ThinkingPart` keeps its signature, a `ToolCallPart` its id and provider details); a
part the engine changed (a shortened tool return, a summary, the marker where units
were left out) is a new part; text blocks the render sent as blocks (a summary and the
user's new request in one Anthropic or Gemini user turn) stay apart, each original prompt
found among them. A response is its original only when the render kept its
reasoning as it was; otherwise it is a copy without the `ThinkingPart`s the render left
out (its other parts, their provider details such as a Gemini call's thought signature,
kept), and a response the engine rewrote has the `ThinkingPart`s the render sent. Every
message built here carries `MARK` in its `metadata`, with the token of the record it was
rendered from, so that when pydantic-ai hands the processed history back on the next
request, those messages are known and not ingested again.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any

from context_graph.errors import IngestError, SourceLocation
from orchestrator.integrations.extras import missing_extra
from orchestrator.integrations.rendered import REASONING_KEY

try:
    from pydantic_ai.messages import (
        BaseToolReturnPart,
        BinaryContent,
        ImageUrl,
        ModelMessage,
        ModelRequest,
        ModelRequestPart,
        ModelResponse,
        ModelResponsePart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "pydantic-ai", "pydantic-ai", "pydantic-ai-slim") from exc

from orchestrator.integrations.pydantic_ai_thinking import (
    add_thinking,
    part_key,
    rendered_keys,
    thinking_parts,
)

__all__ = ["MARK", "from_payload", "mark_of", "to_events"]

#: The `metadata` key of a message this integration rendered; its value is the record's token.
MARK = "context_graph"

# Tool outcomes the model is told were not a success.
_FAILED = frozenset({"failed", "denied", "interrupted", "retried"})


def mark_of(message: ModelMessage) -> str | None:
    """The record token a rendered message carries; `None` for a message of pydantic-ai's."""
    token = (message.metadata or {}).get(MARK)
    return token if isinstance(token, str) else None


def to_events(messages: Sequence[tuple[int, ModelMessage]]) -> list[dict[str, Any]]:
    """The engine events of `(index in the history, message)` pairs.

    Parts the model is not shown as messages (instruction and settings deltas, native
    tool traffic) have no event.

    Raises:
        IngestError: a user content the engine cannot read, naming the message's index.
    """
    events: list[dict[str, Any]] = []
    for index, message in messages:
        if isinstance(message, ModelResponse):
            events.append(_response_event(message))
            continue
        for part in message.parts:
            event = _request_event(part, index)
            if event is not None:
                events.append(event)
    return events


def _response_event(message: ModelResponse) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    calls: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            content.append({"type": "text", "text": part.content})
        elif isinstance(part, ThinkingPart):
            add_thinking(part, content)
        elif isinstance(part, ToolCallPart):
            calls.append(
                {
                    "id": part.tool_call_id,
                    "name": part.tool_name,
                    "arguments": part.args_as_json_str(),
                }
            )
    return {
        "type": "assistant",
        "content": content,
        "tool_calls": calls,
        "model": message.model_name,
    }


def _request_event(part: ModelRequestPart, index: int) -> dict[str, Any] | None:
    if isinstance(part, SystemPromptPart):
        return {"type": "system", "content": part.content}
    if isinstance(part, UserPromptPart):
        return {"type": "user", "content": _user_content(part, index)}
    if isinstance(part, BaseToolReturnPart):
        return {
            "type": "tool_result",
            "call_id": part.tool_call_id,
            "name": part.tool_name,
            "content": part.model_response_str(),
            "is_error": part.outcome in _FAILED,
        }
    if isinstance(part, RetryPromptPart):  # a history stored by an older pydantic-ai
        if part.tool_name is None:
            return {"type": "user", "content": part.model_response(), "notice": True}
        return {
            "type": "tool_result",
            "call_id": part.tool_call_id,
            "name": part.tool_name,
            "content": part.model_response(),
            "is_error": True,
        }
    feedback = getattr(part, "model_response", None)  # `RetryFeedbackPart`
    if part.part_kind == "retry-feedback" and callable(feedback):
        return {"type": "user", "content": str(feedback()), "notice": True}
    return None


def _user_content(part: UserPromptPart, index: int) -> list[dict[str, Any]]:
    if isinstance(part.content, str):
        return [{"type": "text", "text": part.content}]
    parts: list[dict[str, Any]] = []
    for item in part.content:
        if isinstance(item, str):
            parts.append({"type": "text", "text": item})
        elif isinstance(item, ImageUrl):
            parts.append({"type": "image", "url": item.url})
        elif isinstance(item, BinaryContent) and item.is_image:
            data = base64.b64encode(item.data).decode()
            parts.append({"type": "image", "data": data, "media_type": item.media_type})
        else:
            msg = (
                f"a user prompt holds a `{type(item).__name__}`; the engine reads text and "
                "images (`ImageUrl`, image `BinaryContent`)"
            )
            raise IngestError(msg, SourceLocation(index=index))
    return parts


@dataclasses.dataclass(frozen=True)
class _Originals:
    """The parts of the history a rendered message may stand for, by what says so."""

    returns: Mapping[str, tuple[ModelRequest, ModelRequestPart]]
    responses: Mapping[str, ModelResponse]
    prompts: Mapping[tuple[str, ...], tuple[ModelRequest, ModelRequestPart]]
    """By role and texts: `("system", text)`, `("user", text, ...)` (a prompt of texts)."""

    @classmethod
    def of(cls, history: Sequence[ModelMessage]) -> _Originals:
        returns: dict[str, tuple[ModelRequest, ModelRequestPart]] = {}
        responses: dict[str, ModelResponse] = {}
        prompts: dict[tuple[str, ...], tuple[ModelRequest, ModelRequestPart]] = {}
        for message in history:
            if isinstance(message, ModelResponse):
                calls = [p.tool_call_id for p in message.parts if isinstance(p, ToolCallPart)]
                responses[calls[0] if calls else f"text:{_response_text(message)}"] = message
                continue
            for part in message.parts:
                event = _request_event(part, 0) if not isinstance(part, UserPromptPart) else None
                if isinstance(part, BaseToolReturnPart | RetryPromptPart) and event:
                    returns[part.tool_call_id] = (message, part)
                elif isinstance(part, SystemPromptPart):
                    prompts["system", part.content] = (message, part)
                elif isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    prompts["user", part.content] = (message, part)
                elif isinstance(part, UserPromptPart) and all(
                    isinstance(item, str) for item in part.content
                ):
                    prompts["user", *map(str, part.content)] = (message, part)
        return cls(returns, responses, prompts)


def _response_text(message: ModelResponse) -> str:
    return "".join(p.content for p in message.parts if isinstance(p, TextPart))


def _text(content: Any) -> str:
    return "".join(_texts(content))


def _texts(content: Any) -> list[str]:
    """The texts of a chat content, each block's apart (one for a string content)."""
    if content is None:
        return [""]
    if isinstance(content, str):
        return [content]
    return [str(p.get("text", "")) for p in content if p.get("type") == "text"]


def from_payload(
    payload: Sequence[Mapping[str, Any]],
    history: Sequence[ModelMessage],
    *,
    token: str,
    conversation_id: str | None,
    provider_name: str | None = None,
) -> list[ModelMessage]:
    """The `ModelMessage`s of a rendered request, each marked with `token`.

    Args:
        payload: The request as Chat Completions messages; an assistant message may
            carry its reasoning parts under `REASONING_KEY` (compared, and kept in a
            new response, only when present).
        history: The history it was rendered from.
        token: The record's token.
        conversation_id: The conversation of new messages.
        provider_name: The model's `system`, the `provider_name` of a new `ThinkingPart`.
    """
    originals = _Originals.of(history)
    out: list[ModelMessage] = []
    pending: list[ModelRequestPart] = []
    source: ModelRequest | None = None
    for item in payload:
        if item["role"] != "assistant":
            for origin, part in _request_parts(item, originals):
                source = source or origin
                pending.append(part)
            continue
        if pending:
            out.append(_request(pending, source, token, conversation_id))
            pending, source = [], None
        out.append(_response(item, originals, token, conversation_id, provider_name))
    if pending:
        out.append(_request(pending, source, token, conversation_id))
    return out


def _marked(metadata: dict[str, Any] | None, token: str) -> dict[str, Any]:
    return {**(metadata or {}), MARK: token}


def _request(
    parts: list[ModelRequestPart],
    source: ModelRequest | None,
    token: str,
    conversation_id: str | None,
) -> ModelRequest:
    if source is None:
        return ModelRequest(
            parts=parts, metadata=_marked(None, token), conversation_id=conversation_id
        )
    return dataclasses.replace(source, parts=parts, metadata=_marked(source.metadata, token))


_Part = tuple[ModelRequest | None, ModelRequestPart]
"""A request part and the request it comes from (`None` for a new part)."""


def _request_parts(item: Mapping[str, Any], originals: _Originals) -> list[_Part]:
    """The request parts of a chat message: one, or one per run of its text blocks."""
    if item["role"] == "tool":
        return [_return_part(item, originals)]
    texts = _texts(item.get("content")) or [""]
    if item["role"] == "system":
        # pydantic-ai's system prompts are single texts: a block is a prompt.
        return [_prompt(originals, "system", [text]) for text in texts]
    parts: list[_Part] = []
    new: list[str] = []
    start = 0
    while start < len(texts):
        found = _longest_prompt(originals, texts, start)
        if found is None:
            new.append(texts[start])
            start += 1
            continue
        if new:
            parts.append(_prompt(originals, "user", new))
            new = []
        parts.append(found[0])
        start += found[1]
    if new:
        parts.append(_prompt(originals, "user", new))
    return parts


def _longest_prompt(
    originals: _Originals, texts: Sequence[str], start: int
) -> tuple[_Part, int] | None:
    """The original user prompt saying the most of `texts` from `start`, and how many."""
    for end in range(len(texts), start, -1):
        found = originals.prompts.get(("user", *texts[start:end]))
        if found is not None:
            return found, end - start
    return None


def _prompt(originals: _Originals, kind: str, texts: Sequence[str]) -> _Part:
    """The original prompt saying `texts`, else a new one (a string when it is one text)."""
    found = originals.prompts.get((kind, *texts))
    if found is not None:
        return found
    if kind == "system":
        return None, SystemPromptPart(content="".join(texts))
    return None, UserPromptPart(content=texts[0] if len(texts) == 1 else list(texts))


def _return_part(item: Mapping[str, Any], originals: _Originals) -> _Part:
    text = _text(item.get("content"))
    call_id = item["tool_call_id"]
    found = originals.returns.get(call_id)
    if found is None:  # the renderer's placeholder for a call that got no result
        name = _call_name(call_id, originals)
        return None, ToolReturnPart(tool_name=name, content=text, tool_call_id=call_id)
    origin, part = found
    event = _request_event(part, 0)
    if event is not None and event["content"] == text:
        return origin, part
    name = str(event["name"]) if event is not None else "tool"
    return origin, ToolReturnPart(tool_name=name, content=text, tool_call_id=call_id)


def _call_name(call_id: str, originals: _Originals) -> str:
    response = originals.responses.get(call_id)
    for part in response.parts if response is not None else ():
        if isinstance(part, ToolCallPart) and part.tool_call_id == call_id:
            return part.tool_name
    return "tool"


def _response(
    item: Mapping[str, Any],
    originals: _Originals,
    token: str,
    conversation_id: str | None,
    provider_name: str | None,
) -> ModelResponse:
    text = _text(item.get("content"))
    calls = item.get("tool_calls") or []
    reasoning = item.get(REASONING_KEY)
    key = calls[0]["id"] if calls else f"text:{text}"
    original = originals.responses.get(key)
    if original is not None:
        ids = [p.tool_call_id for p in original.parts if isinstance(p, ToolCallPart)]
        same = _response_text(original) == text and ids == [c["id"] for c in calls]
        if same and (reasoning is None or _keys(original) == rendered_keys(reasoning)):
            return dataclasses.replace(original, metadata=_marked(original.metadata, token))
        if same and reasoning is not None:
            kept = rendered_keys(reasoning)
            left = [p for p in original.parts if part_key(p) in (None, *kept)]
            metadata = _marked(original.metadata, token)
            return dataclasses.replace(original, parts=left, metadata=metadata)
    parts: list[ModelResponsePart] = thinking_parts(reasoning or (), provider_name)
    parts.extend(TextPart(content=said) for said in _texts(item.get("content")) if said)
    parts.extend(
        ToolCallPart(
            tool_name=c["function"]["name"],
            args=json.loads(c["function"]["arguments"] or "{}"),
            tool_call_id=c["id"],
        )
        for c in calls
    )
    return ModelResponse(
        parts=parts, metadata=_marked(None, token), conversation_id=conversation_id
    )


def _keys(message: ModelResponse) -> list[tuple[str, ...]]:
    """The reasoning of a response as the engine reads it (its keys, in order)."""
    return rendered_keys(_response_event(message)["content"])
