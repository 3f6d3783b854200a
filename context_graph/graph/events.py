"""The typed event API: what an agent loop tells the graph, one event per thing that happened.

Events are plain frozen data. `ContextGraph.ingest` turns a batch of them into nodes and
edges, whole or not at all. Importers for recorded sessions produce the same events, so
a live agent loop and a replayed log build the same graph.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StrictBool,
    TypeAdapter,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.call_shapes import call_fields, number_calls, plain, shape_error
from context_graph.graph.content import ContentPart, ProviderSignature, TextPart
from context_graph.graph.native import NativeCompaction
from context_graph.graph.nodes import ExitCode, TriggerSpec

__all__ = [
    "AgentEvent",
    "AssistantTurn",
    "Compaction",
    "FileRead",
    "Note",
    "SubagentResult",
    "SystemPrompt",
    "ToolCall",
    "ToolResult",
    "UserTurn",
    "Withdrawal",
    "coerce_events",
    "make_event",
]


def _coerce_content(value: Any) -> Any:
    """Accept a plain string where content parts are expected."""
    if isinstance(value, str):
        return (TextPart(text=value),)
    if isinstance(value, BaseModel | dict):
        return (value,)
    if not isinstance(value, list | tuple):
        # pydantic would say "a valid tuple", which is not what a caller passes.
        raise PydanticCustomError(
            "content_type",
            "content must be a string or a sequence of parts, got {kind}",
            {"kind": type(value).__name__},
        )
    return value


def _coerce_reply_content(value: Any) -> Any:
    """As `_coerce_content`, and `None` is no content (OpenAI's tool-call turns)."""
    return () if value is None else _coerce_content(value)


Content: TypeAlias = Annotated[tuple[ContentPart, ...], BeforeValidator(_coerce_content)]
ReplyContent: TypeAlias = Annotated[tuple[ContentPart, ...], BeforeValidator(_coerce_reply_content)]


class _EventBase(BaseModel):
    """Fields every event may carry."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    timestamp: str | None = None
    """When it happened (ISO 8601 preferred)."""
    meta: Mapping[str, JsonValue] = Field(default_factory=dict)
    """Extra metadata kept on the node."""
    priority: int = 0
    """Higher is kept longer by processors that rank nodes."""
    pinned: bool = False
    """Never compact or drop the resulting node."""
    triggers: tuple[TriggerSpec, ...] = ()
    """Triggers declared on the resulting node."""
    source: SourceLocation | None = Field(default=None, exclude=True)
    """Where the event came from, used to name the place in errors."""


class SystemPrompt(_EventBase):
    """The system prompt; pinned unless said otherwise."""

    type: Literal["system"] = "system"
    content: Content
    """The prompt."""
    pinned: bool = True


class UserTurn(_EventBase):
    """A user turn: text, images, documents.

    Set `notice` for a message in the user's role that the user did not write: the agent
    harness telling the model that a background task finished, what a local command
    printed, that a tool call was interrupted. It is sent like any user turn, but it is
    not a request: the render floor keeps the user's latest own request as well as the
    notice and what follows it, so the request a notice follows is never dropped or
    summarized away; and a notice opens no new turn.
    """

    type: Literal["user"] = "user"
    content: Content
    """What the user said or sent."""
    notice: StrictBool = Field(default=False, exclude_if=lambda value: value is False)
    """Written by the harness, not the user (left out of the JSON when false, so ordinary
    user turns keep the ids they always had)."""


class ToolCall(BaseModel):
    """One tool call inside an assistant turn.

    Besides these fields, the shapes the provider SDKs give are read, as plain dicts or
    as the SDKs' own objects: an OpenAI chat tool call (`{"id", "type": "function",
    "function": {"name", "arguments"}}`), an Anthropic `tool_use` block (`{"type":
    "tool_use", "id", "name", "input"}`), and a Gemini `functionCall` part (`{
    "functionCall": {"id"?, "name", "args"}, "thoughtSignature"?}`) or bare `FunctionCall`.
    A Gemini call without an id gets `gemini_<name>_<k>`, `k` counting the earlier calls
    with that name in the same turn (the Gemini importer's rule for one content).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(min_length=1)
    """The call id; may repeat over a session once the earlier call was answered."""
    name: str = Field(min_length=1)
    """The tool's name."""
    arguments: str = "{}"
    """The arguments as JSON text; a dict is accepted and encoded."""
    signature: ProviderSignature | None = Field(default=None, exclude_if=lambda v: v is None)
    """The provider's signature for this call (Gemini's `thoughtSignature`); left out of
    the JSON when absent, so calls without one keep the ids they always had."""
    meta: Mapping[str, JsonValue] = Field(default_factory=dict, exclude_if=lambda v: not v)
    """Extra metadata kept on the call's node (an OpenAI Responses custom tool call has
    `{"responses_type": "custom_tool_call"}`); left out of the JSON when empty, so calls
    without any keep the ids they always had."""

    @model_validator(mode="wrap")
    @classmethod
    def _read_provider_shape(cls, value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        if isinstance(value, ToolCall):
            return handler(value)
        value = plain(value, ToolCall)
        if not isinstance(value, Mapping):
            return handler(value)
        fields, paths = call_fields(value)
        if not paths:
            return handler(fields)
        try:
            return handler(fields)
        except ValidationError as exc:
            # Name the field as the caller spelled it (`function.name`, not `name`).
            first = exc.errors()[0]
            loc = [str(p) for p in first["loc"]]
            path = ".".join([paths.get(loc[0], loc[0]), *loc[1:]]) if loc else ""
            raise shape_error(first["msg"], path) from None

    @field_validator("arguments", mode="before")
    @classmethod
    def _encode_arguments(cls, value: Any) -> Any:
        if value is None:
            return "{}"
        if isinstance(value, dict | list):
            try:
                return json.dumps(value, ensure_ascii=False)
            except (TypeError, ValueError, RecursionError) as exc:
                reason = f"the arguments cannot be encoded as JSON: {exc}"
                raise shape_error(reason, "") from None
        return value


class AssistantTurn(_EventBase):
    """An assistant turn: its text and thinking blocks, and the tool calls it made."""

    type: Literal["assistant"] = "assistant"
    content: ReplyContent = ()
    """Text, thinking and redacted-thinking parts in the order the model produced them
    (`None`, as OpenAI sends on a turn of tool calls, is no content)."""
    tool_calls: Annotated[
        tuple[ToolCall, ...], BeforeValidator(lambda v: number_calls(v, ToolCall))
    ] = ()
    """The calls made by this turn, parallel calls included, in order; each in any shape
    `ToolCall` reads."""
    message_id: str | None = None
    """The provider's message id."""
    model: str | None = None
    """The model that produced the turn."""


class _AnswerEventBase(_EventBase):
    content: Content = ()
    """The output."""
    name: str | None = None
    """The tool's name; taken from the call when omitted."""
    is_error: bool = False
    """Whether the tool reported an error."""


class ToolResult(_AnswerEventBase):
    """The result of a tool call."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str = Field(min_length=1)
    """The id of the call it answers (the most recent unanswered call with that id)."""
    exit_code: ExitCode | None = Field(default=None, exclude_if=lambda v: v is None)
    """The command's exit status, when the tool reported one (0 is success); left out of
    the JSON when absent, so results without one keep the ids they always had."""


class FileRead(_AnswerEventBase):
    """A file's content as read; answers a call when `call_id` is given."""

    type: Literal["file_read"] = "file_read"
    path: str = Field(min_length=1)
    """The file's path."""
    call_id: str | None = None
    """The read call it answers, if it came from one."""
    line_range: tuple[int, int | None] | None = None
    """The 1-based first and last line read (inclusive); `None` for the whole file."""


class SubagentResult(_AnswerEventBase):
    """A sub-agent's final answer; answers the call that spawned it when `call_id` is given."""

    type: Literal["subagent_result"] = "subagent_result"
    call_id: str | None = None
    """The call that spawned the sub-agent."""
    agent_id: str | None = None
    """The sub-agent's id."""
    transcript: str | None = None
    """Where the sub-agent's own transcript is."""


class Note(_EventBase):
    """A pinned fact or memory."""

    type: Literal["note"] = "note"
    content: Content
    """The fact."""
    pinned: bool = True


class Compaction(_EventBase):
    """A compaction summary written by another tool; it abstracts everything before it.

    A provider's own compaction (an Anthropic `compaction` block, a Responses
    `compaction` item) carries the artifact in `native`: it is sent back verbatim to that
    provider, and any other renders the nodes it stands for instead
    (`context_graph.graph.native`). Its `content` is the readable summary, if any.
    """

    type: Literal["compaction"] = "compaction"
    content: Content
    """The summary text (empty for an opaque native artifact)."""
    origin: str = "external"
    """Who wrote it, e.g. `claude_code`."""
    native: NativeCompaction | None = Field(default=None, exclude_if=lambda v: v is None)
    """The provider's own artifact, verbatim; left out of the JSON when absent, so other
    compactions keep the ids they always had."""


class Withdrawal(BaseModel):
    """Withdraws recorded nodes: the record keeps them, and nothing shows them again.

    A withdrawn node stays in the pristine record (`graph[id]`, `transcript()`, its
    edges), but every view of the session leaves it out: the units, the renders, the
    pairing of calls and answers, the lookups by kind, tool, path or pin, and what a
    compaction or `context_expand` may bring back. Withdrawing a tool call's answer
    opens the call again: it renders as a call without a result until another result
    answers it. A withdrawal names only nodes recorded before its batch, and is refused
    (`IngestError`, nothing changed) for a node that is unknown, derived, withdrawn
    already, a call or assistant turn whose answers or calls stay, or one that an
    imported compaction recorded after it still stands for.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    type: Literal["withdrawal"] = "withdrawal"
    node_ids: tuple[str, ...] = Field(min_length=1)
    """The pristine nodes withdrawn, each once."""
    timestamp: str | None = None
    """When it happened (ISO 8601 preferred)."""
    meta: Mapping[str, JsonValue] = Field(default_factory=dict)
    """Extra metadata kept with the record (who withdrew, and why)."""
    source: SourceLocation | None = Field(default=None, exclude=True)
    """Where the event came from, used to name the place in errors."""

    @field_validator("node_ids")
    @classmethod
    def _unique(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for node_id in value:
            if node_id in seen:
                msg = f"node id {node_id!r} is named twice"
                raise ValueError(msg)
            seen.add(node_id)
        return value


AgentEvent: TypeAlias = Annotated[
    SystemPrompt
    | UserTurn
    | AssistantTurn
    | ToolResult
    | FileRead
    | SubagentResult
    | Note
    | Compaction
    | Withdrawal,
    Field(discriminator="type"),
]

_event_adapter: TypeAdapter[AgentEvent] = TypeAdapter(AgentEvent)

_EVENT_TYPES = (
    SystemPrompt,
    UserTurn,
    AssistantTurn,
    ToolResult,
    FileRead,
    SubagentResult,
    Note,
    Compaction,
    Withdrawal,
)


_EventT = TypeVar("_EventT", bound=BaseModel)


def make_event(cls: type[_EventT], /, **fields: Any) -> _EventT:
    """Validate one event of type `cls` from its fields, with the errors of `coerce_events`.

    Raises:
        IngestError: naming the field that is wrong (as event 0, a batch of one).
    """
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        raise IngestError(_describe(exc), SourceLocation(index=0)) from None


def coerce_events(events: Iterable[Any]) -> list[AgentEvent]:
    """Validate a batch of events given as models or plain dicts.

    Raises:
        IngestError: naming the event's index and the field that is wrong, or saying
            that `events` is not a batch.
    """
    if isinstance(events, str | bytes | Mapping | BaseModel) or not isinstance(events, Iterable):
        msg = (
            f"expected a batch of events (a list of event models or dicts), got "
            f"{type(events).__name__}; wrap a single event in a list"
        )
        raise IngestError(msg)
    out: list[AgentEvent] = []
    for index, raw in enumerate(events):
        if isinstance(raw, _EVENT_TYPES):
            out.append(raw)
            continue
        try:
            out.append(_event_adapter.validate_python(raw))
        except ValidationError as exc:
            raise IngestError(_describe(exc), SourceLocation(index=index)) from None
    return out


def _describe(exc: ValidationError) -> str:
    """The first problem of a failed validation, with the full path to the field."""
    first = exc.errors(include_url=False)[0]
    loc = [str(p) for p in first["loc"]] or (["type"] if "union_tag" in first["type"] else [])
    deeper = (first.get("ctx") or {}).get("path")
    if isinstance(deeper, str) and deeper:
        loc.append(deeper)
    where = ".".join(loc)
    return f"invalid event: {first['msg']}" + (f" at `{where}`" if where else "")
