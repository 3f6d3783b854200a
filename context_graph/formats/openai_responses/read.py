"""OpenAI Responses API: an input item list, a request body, or a response object.

Three shapes are read: a bare list of items (`[{"type": "message", ...}, {"type":
"function_call", ...}]`, easy-input messages `{"role", "content"}` among them), a request
body `{"instructions", "input"}` (`input` a list or a string), and a response object
`{"object": "response", "output": [...]}` or the compact endpoint's
`{"object": "response.compaction", "output": [...]}` (the user's messages, then the
`compaction` item: the next request's input).

Items map to events (`ItemReader`, which the Codex CLI importer shares):

- `instructions` and `system` / `developer` messages become `SystemPrompt` events, as the
  Chat Completions importer reads those roles (a developer one has `meta["role"]`);
  `user` messages become `UserTurn`s.
- The model's items between two inputs form one `AssistantTurn`: `message` text parts in
  order, each `reasoning` item as a `ReasoningPart` where it stood (its summary texts, id
  and `encrypted_content`, never read), `function_call`s as calls whose `arguments` text is
  kept exactly, `custom_tool_call`s as calls whose `arguments` is the raw `input` text with
  `meta["responses_type"] == "custom_tool_call"`.
- `function_call_output` / `custom_tool_call_output` become `ToolResult`s (the latter with
  `meta["responses_type"] == "custom_tool_call_output"`); an output must follow its call.
- A `compaction` item (the `responses.compact` endpoint's, or server-side compaction's)
  becomes a `Compaction` event carrying the item verbatim, standing for every item before
  it but the user's messages, which the API keeps beside it (`context_graph.graph.native`).
- Items that carry nothing the model reads back (`web_search_call`, `file_search_call`,
  MCP and other built-in tool items) are kept, as received, in the assistant turn's
  `meta["responses_items"]`: a `Note` would be pinned into every request's system
  prompt, text the model never saw there.

A `previous_response_id`, a `conversation` or an `item_reference` points at history kept
on OpenAI's servers, which an offline import cannot fetch: it is refused (`IngestError`),
never imported as if the items in hand were the whole conversation.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import JsonValue

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.harness import is_harness_message
from context_graph.formats.openai_responses.read_content import (
    content_parts,
    optional_str,
    plain_json,
)
from context_graph.graph.content import (
    ContentPart,
    ReasoningPart,
    TextPart,
)
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.importers._base import (
    ImportedSession,
    Names,
    RawInput,
    expect_list,
    expect_mapping,
    expect_str,
)
from context_graph.importers._native import native_compaction

__all__ = [
    "OTHER_ITEMS",
    "ItemReader",
    "looks_like_items",
    "refuse_server_state",
    "sniff",
    "to_sessions",
]

#: Item types kept in `meta["responses_items"]` of their assistant turn, not as content.
OTHER_ITEMS: frozenset[str] = Names(
    """
    additional_tools apply_patch_call apply_patch_call_output code_interpreter_call
    compaction_summary compaction_trigger computer_call computer_call_output
    configuration_update file_search_call image_generation_call local_shell_call
    local_shell_call_output mcp_approval_request mcp_approval_response mcp_call
    mcp_list_tools program program_output shell_call shell_call_output tool_search_call
    tool_search_output web_search_call
    """.split()
)
#: The `object` of a response (`output` holds its items): a model's, or the compact
#: endpoint's compacted window. A tuple: the value tested may be any JSON, a list too.
_RESPONSE_OBJECTS = ("response", "response.compaction")
_CONTENT_ITEMS = Names(
    "message reasoning function_call function_call_output custom_tool_call "
    "custom_tool_call_output compaction".split()
)
_ITEMS = Names(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
    }
)
_ITEMS = Names(_CONTENT_ITEMS | OTHER_ITEMS | {"item_reference"})
_ROLES = Names({"user", "assistant", "system", "developer"})
# Content part types only the Responses API uses (Chat Completions says `text`, `image_url`).
_OWN_PARTS = Names({"input_text", "input_image", "input_file", "output_text"})
_SERVER_STATE = ("previous_response_id", "conversation")
RESPONSES_TYPE = "responses_type"

NoticeRule = Callable[[Sequence[ContentPart]], bool]


# --- detection ------------------------------------------------------------------------------


def sniff(raw: RawInput) -> bool:
    """Whether `raw` is a Responses item list, request body or response object."""
    data = raw.data
    if isinstance(data, Mapping):
        if data.get("object") in _RESPONSE_OBJECTS:
            return isinstance(data.get("output"), list)
        if "messages" in data or "contents" in data or "input" not in data:
            return False
        value = data["input"]
        return isinstance(value, str) or looks_like_items(value, marked=False)
    return looks_like_items(data)


def looks_like_items(value: Any, *, marked: bool = True) -> bool:
    """Whether `value` is a non-empty list of Responses input items.

    With `marked`, at least one item must say it is a Responses item (a `type`, or a part
    type only this API uses): a list of plain `{"role", "content"}` messages is left to
    the Chat Completions importer, which reads it the same.
    """
    if not isinstance(value, list) or not value:
        return False
    if not all(_looks_like_item(item) for item in value):
        return False
    return not marked or any(_marked(item) for item in value)


def _looks_like_item(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    if "type" in item:
        return item["type"] in _ITEMS and (item["type"] != "message" or item.get("role") in _ROLES)
    return item.get("role") in _ROLES and "content" in item


def _marked(item: Mapping[str, Any]) -> bool:
    content = item.get("content")
    parts = content if isinstance(content, list) else []
    return "type" in item or any(
        isinstance(p, Mapping) and p.get("type") in _OWN_PARTS for p in parts
    )


# --- sessions -------------------------------------------------------------------------------


def to_sessions(raw: RawInput) -> list[ImportedSession]:
    """Convert an item list, request body or response object to one session.

    Raises:
        IngestError: the payload or an item is malformed, or it continues history kept on
            OpenAI's servers (names the place).
    """
    data = raw.data
    meta: dict[str, JsonValue] = {"format": "openai_responses"}
    reader = ItemReader()
    if isinstance(data, Mapping):
        refuse_server_state(data, raw.at())
        for key in ("model", "id", "status"):
            if isinstance(data.get(key), str):
                meta[key] = data[key]
        if isinstance(data.get("usage"), Mapping):
            meta["usage"] = dict(data["usage"])
        answer = data.get("object") in _RESPONSE_OBJECTS
        if answer:  # a request's model did not write its input
            reader.model = data["model"] if isinstance(data.get("model"), str) else None
        _instructions(reader, data.get("instructions"), raw)
        key = "output" if answer else "input"
        items = data.get(key)
        if isinstance(items, str):
            reader.read({"role": "user", "content": items}, raw.at(None, key))
            items = []
        for index, item in enumerate(expect_list(items, raw.at(None, key), f"`{key}`")):
            reader.read(item, raw.at(index, f"{key}[{index}]"))
    else:
        for index, item in enumerate(expect_list(data, raw.at(), "a Responses item list")):
            reader.read(item, raw.at(index, f"[{index}]"))
    return [ImportedSession(name="openai_responses", events=reader.finish(), meta=meta)]


def refuse_server_state(body: Mapping[str, Any], where: SourceLocation) -> None:
    """Raise `IngestError` if `body` continues a conversation kept on OpenAI's servers."""
    for key in _SERVER_STATE:
        value = body.get(key)
        if value is not None:
            msg = (
                f"`{key}` {json.dumps(value)[:80]} names history stored on OpenAI's servers, "
                "which cannot be read offline: export the whole conversation as `input` "
                "items (every earlier input and output) and import that instead"
            )
            raise IngestError(msg, where.with_path(key))


def _instructions(reader: ItemReader, value: Any, raw: RawInput) -> None:
    where = raw.at(None, "instructions")
    if value is None:
        return
    if isinstance(value, str):
        if value:
            reader.system((TextPart(text=value),), where, {})
        return
    for index, item in enumerate(expect_list(value, where, "`instructions`")):
        reader.read(item, where.with_path(f"[{index}]"))


# --- items ----------------------------------------------------------------------------------


@dataclass
class _Turn:
    """The assistant turn being built from the model's items."""

    where: SourceLocation
    timestamp: str | None
    model: str | None
    parts: list[ContentPart] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    meta: dict[str, JsonValue] = field(default_factory=dict)
    message_id: str | None = None
    items: list[JsonValue] = field(default_factory=list)
    reasoning_text: list[JsonValue] = field(default_factory=list)

    def event(self) -> AssistantTurn:
        """The finished turn."""
        meta = dict(self.meta)
        if self.items:
            meta["responses_items"] = self.items
        if self.reasoning_text:
            meta["reasoning_text"] = self.reasoning_text
        return AssistantTurn(
            content=tuple(self.parts),
            tool_calls=tuple(self.calls),
            message_id=self.message_id,
            model=self.model,
            timestamp=self.timestamp,
            meta=meta,
            source=self.where,
        )


@dataclass
class ItemReader:
    """Turns Responses items into events, one item at a time, in order.

    Attributes:
        model: The model credited with the assistant turns opened from now on.
        notice: Tells which user messages the harness wrote (they become notices); by
            default a message of harness blocks alone (`context_graph.formats.harness`:
            Codex's `<environment_context>` and AGENTS.md messages, a reminder).
    """

    model: str | None = None
    notice: NoticeRule = field(default=is_harness_message)
    events: list[AgentEvent] = field(default_factory=list)
    turn: _Turn | None = None
    calls: set[str] = field(default_factory=set)

    def read(self, value: Any, where: SourceLocation, timestamp: str | None = None) -> None:
        """Convert one item at `where`.

        Raises:
            IngestError: the item is malformed, or refers to a stored item.
        """
        item = expect_mapping(value, where, "item")
        kind = item.get("type", "message")
        if kind not in _ITEMS:
            msg = f"unknown item type {kind!r}"
            raise IngestError(msg, where.with_path("type"))
        if kind == "item_reference":
            msg = (
                "an `item_reference` names an item stored on OpenAI's servers, which cannot "
                "be read offline: export the item itself and import that instead"
            )
            raise IngestError(msg, where.with_path("id"))
        if kind == "message":
            self._message(item, where, timestamp)
        elif kind == "compaction":
            event = native_compaction("responses", item, where, timestamp=timestamp)
            self.flush()
            self.events.append(event)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._output(item, where, timestamp, custom=kind == "custom_tool_call_output")
        else:
            turn = self._open(where, timestamp)
            if kind == "reasoning":
                turn.parts.append(_reasoning(item, where, turn.reasoning_text))
            elif kind in ("function_call", "custom_tool_call"):
                turn.calls.append(self._call(item, where, custom=kind == "custom_tool_call"))
            else:
                turn.items.append(plain_json(item, where))

    def system(
        self, parts: tuple[ContentPart, ...], where: SourceLocation, meta: dict[str, JsonValue]
    ) -> None:
        """Add a system prompt (the request's `instructions`, a developer message)."""
        self.flush()
        self.events.append(SystemPrompt(content=parts, meta=meta, source=where))

    def flush(self) -> None:
        """Emit the assistant turn being built, if any."""
        turn, self.turn = self.turn, None
        if turn is None:
            return
        self.events.append(turn.event())

    def finish(self) -> list[AgentEvent]:
        """Emit the last turn and return every event so far."""
        self.flush()
        return self.events

    # -- item kinds --

    def _open(self, where: SourceLocation, timestamp: str | None) -> _Turn:
        if self.turn is None:
            self.turn = _Turn(where, timestamp, self.model)
        return self.turn

    def _message(self, item: Mapping[str, Any], where: SourceLocation, ts: str | None) -> None:
        role = item.get("role")
        if role not in _ROLES:
            msg = f"unknown message role {role!r}; expected one of {', '.join(sorted(_ROLES))}"
            raise IngestError(msg, where.with_path("role"))
        parts = _content(item, where)
        if role == "assistant":
            turn = self._open(where, ts)
            turn.parts.extend(parts)
            message_id = optional_str(item, "id", where)
            turn.message_id = turn.message_id or message_id
            if isinstance(item.get("phase"), str):
                turn.meta["phase"] = item["phase"]
            return
        if role == "user":
            self.flush()
            notice = self.notice(parts)
            self.events.append(UserTurn(content=parts, notice=notice, timestamp=ts, source=where))
            return
        meta: dict[str, JsonValue] = {"role": "developer"} if role == "developer" else {}
        self.flush()
        self.events.append(SystemPrompt(content=parts, meta=meta, timestamp=ts, source=where))

    def _call(self, item: Mapping[str, Any], where: SourceLocation, *, custom: bool) -> ToolCall:
        call_id = _nonempty(item, "call_id", where)
        name = _nonempty(item, "name", where)
        key = "input" if custom else "arguments"
        arguments = expect_str(item.get(key), where.with_path(key), f"`{key}`")
        meta: dict[str, JsonValue] = {RESPONSES_TYPE: "custom_tool_call"} if custom else {}
        self.calls.add(call_id)
        return ToolCall(id=call_id, name=name, arguments=arguments, meta=meta)

    def _output(
        self, item: Mapping[str, Any], where: SourceLocation, ts: str | None, *, custom: bool
    ) -> None:
        call_id = _nonempty(item, "call_id", where)
        if call_id not in self.calls:
            msg = f"output for call `{call_id}` has no call before it"
            raise IngestError(msg, where.with_path("call_id"))
        self.flush()
        content = content_parts(item.get("output"), where.with_path("output"), "`output`")
        meta: dict[str, JsonValue] = {RESPONSES_TYPE: "custom_tool_call_output"} if custom else {}
        result = ToolResult(call_id=call_id, content=content, meta=meta, timestamp=ts, source=where)
        self.events.append(result)


def _reasoning(
    item: Mapping[str, Any], where: SourceLocation, reasoning_text: list[JsonValue]
) -> ReasoningPart:
    """A `reasoning` item as a part; its readable `content` texts go to `reasoning_text`."""
    summary = []
    parts = expect_list(item.get("summary", []), where.with_path("summary"), "`summary`")
    for i, part in enumerate(parts):
        here = where.with_path(f"summary[{i}]")
        block = expect_mapping(part, here, "summary part")
        summary.append(expect_str(block.get("text"), here.with_path("text"), "summary `text`"))
    texts = item.get("content")
    if texts is not None:
        for i, part in enumerate(expect_list(texts, where.with_path("content"), "`content`")):
            here = where.with_path(f"content[{i}]")
            block = expect_mapping(part, here, "reasoning content part")
            text = expect_str(block.get("text"), here.with_path("text"), "reasoning `text`")
            reasoning_text.append(text)
    return ReasoningPart(
        id=optional_str(item, "id", where),
        summary=tuple(summary),
        encrypted_content=optional_str(item, "encrypted_content", where),
    )


# --- content --------------------------------------------------------------------------------


def _content(item: Mapping[str, Any], where: SourceLocation) -> tuple[ContentPart, ...]:
    if "content" not in item:
        raise IngestError("message has no `content`", where)
    return content_parts(item["content"], where.with_path("content"), "`content`")


# --- fields ---------------------------------------------------------------------------------


def _nonempty(item: Mapping[str, Any], key: str, where: SourceLocation) -> str:
    value = expect_str(item.get(key), where.with_path(key), f"`{key}`")
    if not value:
        raise IngestError(f"`{key}` must not be empty", where.with_path(key))
    return value
