"""What `manager.wrap(client)` knows of each SDK method it manages: one `Api` per method.

An `Api` reads a call's keyword arguments (the conversation, the system prompt, the
tools), writes the rendered request back into them, and reads the reply: its events,
its prompt tokens, and the reply as the conversation items a loop appends to its list.
Conversations are read with the importer of their format (the code that reads recorded
sessions), so a managed call and a replayed log give the same events. SDK objects are
read as the JSON the API would see (`model_dump`); no SDK is imported here but
google-genai, lazily, whose `contents` take several shorthand forms only it expands.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel

from context_graph.errors import ConfigurationError
from context_graph.formats.wires import (
    ANTHROPIC_FORMAT,
    GEMINI_FORMAT,
    OPENAI_FORMAT,
    RESPONSES_FORMAT,
    WIRES,
)
from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import ToolCallNode
from context_graph.graph.sdk_replies import read_response
from context_graph.importers import load_events
from context_graph.tokens.counting import ProviderFormat
from context_graph.tokens.usage import Usage
from orchestrator.integrations.stream_collectors import (
    ChatChunks,
    GeminiChunks,
    MessageEvents,
    ResponsesEvents,
    StreamCollector,
)

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI_CONTENT",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "Api",
    "Arguments",
    "Keywords",
    "Reply",
    "plain",
]


def plain(value: Any) -> Any:
    """`value` as plain JSON data: SDK objects dumped (no `None` fields), lists and dicts copied."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True, by_alias=True)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _given(value: Any) -> bool:
    """Whether a keyword argument was given: not `None`, nor the OpenAI SDKs' `NOT_GIVEN`."""
    return value is not None and type(value).__name__ not in ("NotGiven", "Omit")


@dataclass(frozen=True)
class Reply:
    """A response, read: its events, the provider's usage, the items a loop appends."""

    events: list[AgentEvent]
    usage: Usage | None
    items: list[Any]


class Arguments(Protocol):
    """How a method's keyword arguments hold the conversation, the system prompt and the tools."""

    @property
    def history_key(self) -> str:
        """The keyword argument holding the conversation."""

    @property
    def system_source(self) -> str | None:
        """Where the importer reads the system prompt (`None`: in the conversation itself)."""

    def read_history(self, kwargs: Mapping[str, Any]) -> list[Any]:
        """The conversation of a call, as plain items."""

    def read_system(self, kwargs: Mapping[str, Any]) -> Any:
        """The system prompt of a call, plain (`None`: none)."""

    def read_tools(self, kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
        """The tool definitions of a call (`None`: none given)."""

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments with the rendered payload in place of its own."""


@dataclass(frozen=True)
class Api:
    """One managed SDK method.

    Attributes:
        name: The method as a user calls it (`chat.completions.create`), for messages.
        format: The format the request is rendered in.
        arguments: How its keyword arguments hold the conversation, system prompt and tools.
        is_model: Whether a conversation item is the model's (the reply a loop appended).
        read_reply: The reply of a response.
        lead: Conversation items that make the given record calls, for a caller's list
            that opens with their answers (a resumed loop): read before it, so that the
            answers pair with the calls, then left out.
        server_state: Arguments that point at history kept on the provider's servers,
            which the manager's render would duplicate: refused.
        collect_stream: What assembles the whole reply from a streamed call's events,
            given the call's arguments (`None`: a streamed call is refused).
    """

    name: str
    format: ProviderFormat
    arguments: Arguments
    is_model: Callable[[Any], bool]
    read_reply: Callable[[Any], Reply]
    lead: Callable[[Sequence[ToolCallNode]], list[Any]]
    server_state: tuple[str, ...] = ()
    collect_stream: Callable[[Mapping[str, Any]], StreamCollector] | None = None

    @property
    def importer(self) -> str:
        """The importer that reads its conversations (its format's reader)."""
        return WIRES[self.format].reader_name

    @property
    def history_key(self) -> str:
        """The keyword argument holding the conversation."""
        return self.arguments.history_key

    def read_history(self, kwargs: Mapping[str, Any]) -> list[Any]:
        """The conversation of a call, as plain items."""
        return self.arguments.read_history(kwargs)

    def read_system(self, kwargs: Mapping[str, Any]) -> Any:
        """The system prompt of a call, plain (`None`: none)."""
        return self.arguments.read_system(kwargs)

    def read_tools(self, kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
        """The tool definitions of a call (`None`: none given)."""
        return self.arguments.read_tools(kwargs)

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments with the rendered payload in place of its own."""
        return self.arguments.write(kwargs, payload)

    def refuse_server_state(self, kwargs: Mapping[str, Any]) -> None:
        """Raise `ConfigurationError` if the call continues history kept on the servers."""
        for key in self.server_state:
            if _given(kwargs.get(key)):
                msg = (
                    f"{self.name}({key}=...) on a managed client: the manager sends the whole "
                    f"history itself; leave out `{key}` (the history would be sent twice)"
                )
                raise ConfigurationError(msg)

    def events(self, system: Any, items: list[Any]) -> list[AgentEvent]:
        """The events of a system prompt (or `None`) and conversation items, in order."""
        if system is None and not items:
            return []
        source: dict[str, Any] = {self.arguments.history_key: items}
        if system is not None and self.arguments.system_source is not None:
            source[self.arguments.system_source] = system
        return load_events(source, format=self.importer)


@dataclass(frozen=True)
class Keywords:
    """Arguments as plain keywords: the conversation, the system prompt, `tools`.

    Attributes:
        history_key: The keyword argument holding the conversation.
        system_key: The keyword argument holding the system prompt, which the importer
            reads under the same name (`None`: in the conversation itself).
        text_role: The role of a conversation given as one string (`None`: refused).
    """

    history_key: str
    system_key: str | None = None
    text_role: str | None = None

    @property
    def system_source(self) -> str | None:
        """Where the importer reads the system prompt: the keyword's own name."""
        return self.system_key

    def read_history(self, kwargs: Mapping[str, Any]) -> list[Any]:
        """The conversation of a call, as plain items."""
        key = self.history_key
        value = kwargs.get(key)
        if isinstance(value, str) and self.text_role is not None:
            return [{"role": self.text_role, "content": value}]
        if not isinstance(value, list | tuple):
            msg = f"`{key}` must be a list (the whole conversation), got {type(value).__name__}"
            raise ConfigurationError(msg)
        return plain(list(value))  # type: ignore[no-any-return]

    def read_system(self, kwargs: Mapping[str, Any]) -> Any:
        """The system prompt of a call, plain (`None`: none)."""
        if self.system_key is None:
            return None
        value = kwargs.get(self.system_key)
        return plain(value) if _given(value) else None

    def read_tools(self, kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
        """The tool definitions of a call (`None`: none given)."""
        value = kwargs.get("tools")
        if value is None or not _given(value):
            return None
        return list(value)

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments with the rendered payload in place of its own."""
        keys = {self.history_key, self.system_key, "tools"}
        out = {k: v for k, v in kwargs.items() if k not in keys}
        out.update(payload)
        return out


def _role(*roles: str) -> Callable[[Any], bool]:
    return lambda item: isinstance(item, Mapping) and item.get("role") in roles


def _sdk_reply(item: Callable[[Any], Any]) -> Callable[[Any], Reply]:
    """The reply of an SDK response read whole, whose loop appends `item(response)`."""

    def read(response: Any) -> Reply:
        read = read_response(response)
        return Reply([read.turn], read.usage, [item(response)])

    return read


def _arguments(call: ToolCallNode) -> dict[str, Any]:
    """A call's arguments as the object Anthropic and Gemini take (the lead is never sent)."""
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _chat_lead(calls: Sequence[ToolCallNode]) -> list[Any]:
    made = [
        {
            "id": c.tool_call_id,
            "type": "function",
            "function": {"name": c.name, "arguments": c.arguments},
        }
        for c in calls
    ]
    return [{"role": "assistant", "content": None, "tool_calls": made}] if made else []


def _anthropic_lead(calls: Sequence[ToolCallNode]) -> list[Any]:
    made = [
        {"type": "tool_use", "id": c.tool_call_id, "name": c.name, "input": _arguments(c)}
        for c in calls
    ]
    return [{"role": "assistant", "content": made}] if made else []


def _responses_lead(calls: Sequence[ToolCallNode]) -> list[Any]:
    return [
        {
            "type": "function_call",
            "call_id": c.tool_call_id,
            "name": c.name,
            "arguments": c.arguments,
        }
        for c in calls
    ]


def _gemini_lead(calls: Sequence[ToolCallNode]) -> list[Any]:
    made = [
        {"functionCall": {"id": c.tool_call_id, "name": c.name, "args": _arguments(c)}}
        for c in calls
    ]
    return [{"role": "model", "parts": made}] if made else []


# --- OpenAI Chat Completions and Anthropic Messages --------------------------------------------

OPENAI_CHAT = Api(
    "chat.completions.create",
    OPENAI_FORMAT,
    Keywords("messages"),
    _role("assistant"),
    _sdk_reply(lambda response: plain(response.choices[0].message)),
    _chat_lead,
    collect_stream=ChatChunks,
)
ANTHROPIC_MESSAGES = Api(
    "messages.create",
    ANTHROPIC_FORMAT,
    Keywords("messages", system_key="system"),
    _role("assistant"),
    _sdk_reply(lambda response: {"role": "assistant", "content": plain(response.content)}),
    _anthropic_lead,
    collect_stream=lambda _kwargs: MessageEvents(),
)


# --- OpenAI Responses ---------------------------------------------------------------------------

_OUTPUT_TYPES = frozenset(
    "reasoning function_call custom_tool_call web_search_call file_search_call "
    "code_interpreter_call image_generation_call mcp_call compaction".split()
)


def _is_output(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    kind = item.get("type", "message")
    return kind in _OUTPUT_TYPES or (kind == "message" and item.get("role") == "assistant")


def _responses_reply(response: Any) -> Reply:
    # Read by what the model added (`output`): a `Response` also echoes its request
    # (`instructions`, `tools`, settings), which is not new and must not be taken in.
    read = read_response(response)
    return Reply(list(read.events), read.usage, plain(list(response.output)))


OPENAI_RESPONSES = Api(
    "responses.create",
    RESPONSES_FORMAT,
    Keywords("input", system_key="instructions", text_role="user"),
    _is_output,
    _responses_reply,
    _responses_lead,
    server_state=("previous_response_id", "conversation"),
    collect_stream=lambda _kwargs: ResponsesEvents(),
)


# --- google-genai ------------------------------------------------------------------------------


def _config(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    config = kwargs.get("config")
    if config is None:
        return {}
    if isinstance(config, BaseModel):
        return dict(config)  # its fields by name, values untouched (a schema class stays one)
    if isinstance(config, Mapping):
        return dict(config)
    msg = f"`config` must be a GenerateContentConfig or a dict, got {type(config).__name__}"
    raise ConfigurationError(msg)


def _field(config: Mapping[str, Any], name: str, alias: str) -> Any:
    value = config.get(name, config.get(alias))
    return value if _given(value) else None


class _GeminiArguments:
    """`contents` in any form google-genai expands; the system prompt and tools in `config`."""

    history_key = "contents"
    system_source = "systemInstruction"

    def read_history(self, kwargs: Mapping[str, Any]) -> list[Any]:
        """The conversation, expanded by google-genai's own transformer."""
        from google.genai import _transformers

        return plain(_transformers.t_contents(kwargs.get("contents")))  # type: ignore[no-any-return]

    def read_system(self, kwargs: Mapping[str, Any]) -> Any:
        """`config.system_instruction`, as a content (`None`: none)."""
        value = _field(_config(kwargs), "system_instruction", "systemInstruction")
        if value is None:
            return None
        from google.genai import _transformers

        return plain(_transformers.t_content(value))

    def read_tools(self, kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
        """`config.tools` (`None`: none given)."""
        value = _field(_config(kwargs), "tools", "tools")
        return list(value) if value is not None else None

    def write(self, kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        """`contents`, and `config` with the rendered system instruction and tools."""
        keys = ("system_instruction", "systemInstruction", "tools")
        config = {k: v for k, v in _config(kwargs).items() if k not in keys and v is not None}
        if "systemInstruction" in payload:
            config["system_instruction"] = payload["systemInstruction"]
        if "tools" in payload:
            config["tools"] = payload["tools"]
        out = {k: v for k, v in kwargs.items() if k not in ("contents", "config")}
        out["contents"] = payload["contents"]
        if config:
            out["config"] = config
        return out


def _gemini_reply(response: Any) -> Reply:
    # Read as a one-item conversation, not as a response: a call without an id gets the
    # made-up id the importer gives it in a conversation, which the next call's
    # `functionResponse`, read after this same item, then answers.
    usage = read_response(response).usage
    item = plain(response.candidates[0].content)
    events = load_events({"contents": [item]}, format=WIRES[GEMINI_FORMAT].reader_name)
    return Reply(events, usage, [item])


GEMINI_CONTENT = Api(
    "models.generate_content",
    GEMINI_FORMAT,
    _GeminiArguments(),
    _role("model"),
    _gemini_reply,
    _gemini_lead,
    collect_stream=lambda _kwargs: GeminiChunks(),
)
