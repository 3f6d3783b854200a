"""What the provider SDKs return, read into events: a reply message, or a whole response.

`read_message` gives the `AssistantTurn` of a message, `read_response` also the usage of
a response (`context_graph.tokens.usage`: prompt, completion and cached tokens):

- OpenAI chat: a `ChatCompletionMessage`, or a `ChatCompletion` (its `choices[0].message`);
  usage from `usage`.
- Anthropic: a `Message`, which is the whole response too; usage from `usage`, whose
  prompt is `input_tokens` plus the cache reads and writes, which `input_tokens` leaves out.
- Gemini: a `Content` (role `model`), or a `GenerateContentResponse` (its
  `candidates[0].content`); usage from `usage_metadata` (`usageMetadata`).
- OpenAI Responses: a `Response` (`"object": "response"`), whose `output` items are the
  turn (reasoning, messages, calls) after any `compaction` item the server wrote; or the
  compact endpoint's `CompactedResponse` (`"object": "response.compaction"`), of which
  only the `compaction` item is new (the user's messages before it are already in the
  history). Usage from `usage`, whose `input_tokens` include the cached ones.

Each is taken as the SDK's object or as its plain dict (the JSON the API sent; Gemini's
camelCase or snake_case). No SDK is imported: their objects are pydantic models and are
read through `model_dump`. A message is converted by the importer of its format (the
same code that reads recorded sessions), so a live loop and a replayed log give the
same events.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.call_shapes import plain
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    ReasoningPart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.events import AgentEvent, AssistantTurn, Compaction, make_event
from context_graph.tokens.usage import Usage, UsageShape, read_usage
from context_graph.urls import restore_urls

__all__ = ["Provider", "Reply", "is_reply", "read_message", "read_response"]

Provider: TypeAlias = Literal["openai", "anthropic", "gemini", "responses"]

_PARTS = (TextPart, ImagePart, DocumentPart, ThinkingPart, RedactedThinkingPart, ReasoningPart)
_ANTHROPIC_BLOCKS = frozenset({"tool_use", "thinking", "redacted_thinking", "compaction"})
_RESPONSE_KEYS = ("choices", "candidates")
_COMPACTION_ITEMS = frozenset({"compaction", "compaction_summary"})
_INPUT_ROLES = frozenset({"user", "system", "developer"})
_RESPONSES_OBJECTS = ("response", "response.compaction")
_EXPECTED = (
    "expected an OpenAI `ChatCompletion` (with `choices`), an Anthropic `Message` "
    '(`"type": "message"`), a Gemini `GenerateContentResponse` (with `candidates`) or an '
    'OpenAI Responses `Response` (`"object": "response"`), as the SDK\'s object or its dict'
)


@dataclass(frozen=True, slots=True)
class Reply:
    """A whole response, read.

    Attributes:
        provider: Whose response it is.
        turn: The assistant turn it holds.
        usage: What the call used, as the provider reported it (`None`: not reported).
    """

    provider: Provider
    turn: AssistantTurn
    usage: Usage | None
    compactions: tuple[Compaction, ...] = ()
    """The provider's own compactions the reply opened with (an Anthropic message's
    `compaction` blocks), each standing for everything before it."""

    @property
    def prompt_tokens(self) -> int | None:
        """The prompt's size as the provider counted it, if the response says."""
        return None if self.usage is None else self.usage.prompt_tokens

    @property
    def events(self) -> tuple[AgentEvent, ...]:
        """What to ingest, in order: the compactions, then the turn.

        The turn is left out when the reply paused after compacting and holds nothing else.
        """
        turn = self.turn
        if self.compactions and not (turn.content or turn.tool_calls):
            return self.compactions
        return (*self.compactions, turn)


def is_reply(value: object) -> bool:
    """Whether `value` is a whole message or response (an SDK object or its dict), not parts."""
    if isinstance(value, BaseModel):
        return not isinstance(value, _PARTS)
    if isinstance(value, Mapping):
        keys = ("role", "parts", *_RESPONSE_KEYS)
        return value.get("type") == "message" or any(k in value for k in keys)
    return False


def read_message(message: object, **fields: Any) -> AssistantTurn:
    """The assistant turn of one reply message; `fields` add to it or override it.

    Raises:
        IngestError: the message is malformed, not the assistant's, or a whole response
            (whose message is `choices[0].message` or `candidates[0].content`).
    """
    data = _data(message, SourceLocation())
    kind = _message_kind(data)
    if kind == "anthropic" and _compactions(data, SourceLocation()):
        msg = (
            "this message opens with a `compaction` block, which is an event of its own: "
            "ingest `read_response(message).events` instead (the compactions, then the turn)"
        )
        raise IngestError(msg, SourceLocation(path="content[0]"))
    if kind is None:
        if any(k in data for k in _RESPONSE_KEYS):
            msg = (
                "this is a whole response, not a message: pass `choices[0].message` or "
                "`candidates[0].content`, or give the response to `ContextManager.add_response`"
            )
        else:
            msg = f"unrecognized reply message (keys: {_keys(data)}); {_EXPECTED}"
        raise IngestError(msg)
    return _turn(kind, data, SourceLocation(), {}, fields)


def read_response(
    response: object, *, url_map: Mapping[str, str] | None = None, **fields: Any
) -> Reply:
    """The assistant turn and the usage of a whole response.

    Args:
        response: The response, as the SDK's object or its dict.
        url_map: Tags of shortened URLs and the query strings they stand for
            (`context_graph.urls.url_map`): every tag in the reply, in its text and in
            its tool calls' arguments, is turned back into the original.
        **fields: More `AssistantTurn` fields.

    Raises:
        IngestError: the response is malformed or of no kind recognized; names the path.
    """
    top = SourceLocation()
    data = _data(response, top)
    if url_map:
        data = restore_urls(data, url_map)
    if "choices" in data:
        choice = _first(data, "choices", top)
        where = top.with_path("choices[0].message")
        message = _mapping(choice.get("message"), where, "`choices[0].message`")
        usage = _usage(data, "usage", "openai", top)
        ids = {"message_id": _text(data, "id", top), "model": _text(data, "model", top)}
        return Reply("openai", _turn("openai", message, where, ids, fields), usage)
    if "candidates" in data:
        candidate = _first(data, "candidates", top)
        where = top.with_path("candidates[0].content")
        if candidate.get("content") is None:
            reason = candidate.get("finishReason") or candidate.get("finish_reason")
            msg = f"the first candidate has no content (finish reason: {reason})"
            raise IngestError(msg, where)
        usage_key = "usageMetadata" if "usageMetadata" in data else "usage_metadata"
        usage = _usage(data, usage_key, "gemini", top)
        ids = {
            "message_id": _text(data, "responseId", top) or _text(data, "response_id", top),
            "model": _text(data, "modelVersion", top) or _text(data, "model_version", top),
        }
        return Reply("gemini", _turn("gemini", candidate["content"], where, ids, fields), usage)
    if data.get("object") in _RESPONSES_OBJECTS:
        return _responses_reply(data, top, fields)
    if data.get("type") == "message":
        usage = _usage(data, "usage", "anthropic", top)
        turn = _turn("anthropic", data, top, {}, fields)
        return Reply("anthropic", turn, usage, _compactions(data, top))
    msg = f"unrecognized response (keys: {_keys(data)}); {_EXPECTED}"
    raise IngestError(msg)


# --- messages -------------------------------------------------------------------------------


def _message_kind(data: Mapping[str, Any]) -> Provider | None:
    if data.get("type") == "message":
        return "anthropic"
    if "parts" in data:
        return "gemini"
    if "role" not in data:
        return None
    content = data.get("content")
    if isinstance(content, list) and any(
        isinstance(b, Mapping) and b.get("type") in _ANTHROPIC_BLOCKS for b in content
    ):
        return "anthropic"
    return "openai"


def _turn(
    kind: Provider,
    data: Mapping[str, Any],
    where: SourceLocation,
    ids: Mapping[str, str | None],
    fields: Mapping[str, Any],
) -> AssistantTurn:
    """Convert with the format's importer, then add the ids and the caller's fields."""
    # Imported here: the importers import the graph, whose `add_*` methods use this module.
    from context_graph.formats.anthropic import read as anthropic
    from context_graph.formats.gemini import read as gemini
    from context_graph.formats.openai_chat import read as openai

    if kind == "gemini":
        turn = gemini.model_turn(data, where)
    else:
        role = data.get("role")
        if role != "assistant":
            msg = f"expected the assistant's message, got role {role!r}"
            raise IngestError(msg, where.with_path("role"))
        if kind == "openai":
            events = openai.message_to_events(data, where, openai.ConversionState())
            turn = next(e for e in events if isinstance(e, AssistantTurn))  # the only one
        else:
            found = anthropic.leading_compactions(data.get("content"), where)
            if found is None:
                parts, calls = anthropic.assistant_content(data.get("content"), where)
            else:  # the compactions are events of their own (`Reply.compactions`)
                parts, calls = anthropic.assistant_blocks(found[1])
            turn = AssistantTurn(content=tuple(parts), tool_calls=tuple(calls))
            ids = {"message_id": _text(data, "id", where), "model": _text(data, "model", where)}
    return _with_fields(turn, ids, fields)


def _responses_reply(
    data: Mapping[str, Any], top: SourceLocation, fields: Mapping[str, Any]
) -> Reply:
    """A Responses `Response` or `CompactedResponse`: its compactions, then its turn."""
    # Imported here, as in `_turn`: the importers import the graph.
    from context_graph.formats.openai_responses import read as openai_responses

    status = data.get("status")
    if status in ("failed", "cancelled"):
        msg = f"the response {status} and holds no reply"
        error = data.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            msg += f": {error.get('code') or 'error'}: {error['message']}"
        raise IngestError(msg, top.with_path("status"))
    where = top.with_path("output")
    output = data.get("output")
    if not isinstance(output, list | tuple):
        msg = f"`output` must be a list of items, got {type(output).__name__}"
        raise IngestError(msg, where)
    compacted = data.get("object") == "response.compaction"
    reader = openai_responses.ItemReader(model=_text(data, "model", top))
    for index, item in enumerate(output):
        at = top.with_path(f"output[{index}]")
        if compacted and not (isinstance(item, Mapping) and item.get("type") in _COMPACTION_ITEMS):
            # The user's messages the endpoint kept: the history holds them already.
            if not (isinstance(item, Mapping) and item.get("role") in _INPUT_ROLES):
                msg = "a compacted response's output holds the input messages and the compaction"
                raise IngestError(msg, at)
            continue
        if not compacted and isinstance(item, Mapping) and item.get("role") in _INPUT_ROLES:
            msg = f"a response's output holds only the model's items, not a {item['role']} message"
            raise IngestError(msg, at.with_path("role"))
        reader.read(item, at)
    events = reader.finish()
    compactions = tuple(e for e in events if isinstance(e, Compaction))
    turns = [e for e in events if isinstance(e, AssistantTurn)]
    if events[: len(compactions)] != list(compactions):
        # The server compacts before the model writes, so its item leads the output; one
        # after the model's items would stand for them too, which `Reply` cannot say.
        msg = "a `compaction` item must come before the model's output items"
        raise IngestError(msg, where)
    if compacted and not compactions:
        msg = "a compacted response must hold a `compaction` item"
        raise IngestError(msg, where)
    if not turns and not compactions:
        msg = f"the response holds no output to add (status: {status})"
        raise IngestError(msg, where)
    turn = turns[0] if turns else AssistantTurn()
    ids = {"message_id": _text(data, "id", top), "model": _text(data, "model", top)}
    usage = _usage(data, "usage", "responses", top)
    return Reply("responses", _with_fields(turn, ids, fields), usage, compactions)


def _with_fields(
    turn: AssistantTurn, ids: Mapping[str, str | None], fields: Mapping[str, Any]
) -> AssistantTurn:
    """`turn` with the response's ids and the caller's fields (their `meta` merged in)."""
    values: dict[str, Any] = {
        "content": turn.content,
        "tool_calls": turn.tool_calls,
        "meta": turn.meta,
        **{k: v for k, v in ids.items() if v is not None},
    }
    meta = fields.get("meta")
    values.update(fields)
    if isinstance(meta, Mapping):
        values["meta"] = {**turn.meta, **meta}
    return make_event(AssistantTurn, **values)


def _compactions(data: Mapping[str, Any], where: SourceLocation) -> tuple[Compaction, ...]:
    """An Anthropic message's leading `compaction` blocks, as events."""
    from context_graph.formats.anthropic import read as anthropic

    found = anthropic.leading_compactions(data.get("content"), where)
    if found is None:
        return ()
    return tuple(e for e in found[0] if isinstance(e, Compaction))


# --- checked access -------------------------------------------------------------------------


def _data(value: object, where: SourceLocation) -> Mapping[str, Any]:
    data = plain(value, _PARTS)
    return _mapping(data, where, "a reply")


def _mapping(value: Any, where: SourceLocation, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        msg = f"{what} must be an SDK object or a dict, got {type(value).__name__}"
        raise IngestError(msg, where)
    return value


def _first(data: Mapping[str, Any], key: str, where: SourceLocation) -> Mapping[str, Any]:
    items = data.get(key)
    if not isinstance(items, list | tuple) or not items:
        msg = f"`{key}` must be a non-empty list, got {items!r}"
        if key == "candidates":
            feedback = data.get("promptFeedback") or data.get("prompt_feedback")
            msg += f" (prompt feedback: {feedback})" if feedback else ""
        raise IngestError(msg, where.with_path(key))
    return _mapping(items[0], where.with_path(f"{key}[0]"), f"`{key}[0]`")


def _text(data: Mapping[str, Any], key: str, where: SourceLocation) -> str | None:
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    msg = f"`{key}` must be a string, got {type(value).__name__}"
    raise IngestError(msg, where.with_path(key))


def _usage(
    data: Mapping[str, Any], key: str, shape: UsageShape, where: SourceLocation
) -> Usage | None:
    """The response's usage object at `key`, read (`None`: the response has none)."""
    return read_usage(data.get(key), shape, where=where.with_path(key))


def _keys(data: Mapping[str, Any]) -> str:
    return ", ".join(sorted(str(k) for k in data)) or "none"
