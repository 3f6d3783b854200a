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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from context_graph.errors import ConfigurationError
from context_graph.graph.events import AgentEvent
from context_graph.graph.sdk_replies import read_response
from context_graph.importers import load_events
from context_graph.tokens.counting import ProviderFormat

__all__ = [
    "ANTHROPIC_MESSAGES",
    "GEMINI_CONTENT",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "Api",
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
    """A response, read: its events, the provider's prompt tokens, the items a loop appends."""

    events: list[AgentEvent]
    prompt_tokens: int | None
    items: list[Any]


@dataclass(frozen=True)
class Api:
    """One managed SDK method.

    Attributes:
        name: The method as a user calls it (`chat.completions.create`), for messages.
        format: The format the request is rendered in.
        importer: The importer that reads its conversations.
        history_key: The keyword argument holding the conversation.
        system_key: The keyword argument holding the system prompt (`None`: in the
            conversation itself).
        is_model: Whether a conversation item is the model's (the reply a loop appended).
        read_history: The conversation of a call, as plain items.
        read_system: The system prompt of a call, plain (`None`: none).
        read_tools: The tool definitions of a call (`None`: none given).
        write: The call's arguments with the rendered payload in place of its own.
        read_reply: The reply of a response.
        source: The importer's input for a system prompt and conversation items.
        server_state: Arguments that point at history kept on the provider's servers,
            which the manager's render would duplicate: refused.
    """

    name: str
    format: ProviderFormat
    importer: str
    history_key: str
    is_model: Callable[[Any], bool]
    read_history: Callable[[Mapping[str, Any]], list[Any]]
    read_system: Callable[[Mapping[str, Any]], Any]
    read_tools: Callable[[Mapping[str, Any]], Sequence[Any] | None]
    write: Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]]
    read_reply: Callable[[Any], Reply]
    source: Callable[[Any, list[Any]], dict[str, Any]]
    server_state: tuple[str, ...] = ()

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
        return load_events(self.source(system, items), format=self.importer)


# --- shared pieces -------------------------------------------------------------------------


def _history(key: str, *, text_role: str | None = None) -> Callable[[Mapping[str, Any]], list[Any]]:
    def read(kwargs: Mapping[str, Any]) -> list[Any]:
        value = kwargs.get(key)
        if isinstance(value, str) and text_role is not None:
            return [{"role": text_role, "content": value}]
        if not isinstance(value, list | tuple):
            msg = f"`{key}` must be a list (the whole conversation), got {type(value).__name__}"
            raise ConfigurationError(msg)
        return plain(list(value))  # type: ignore[no-any-return]

    return read


def _kwarg(key: str) -> Callable[[Mapping[str, Any]], Any]:
    def read(kwargs: Mapping[str, Any]) -> Any:
        value = kwargs.get(key)
        return plain(value) if _given(value) else None

    return read


def _tools(kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
    value = kwargs.get("tools")
    if value is None or not _given(value):
        return None
    return list(value)


def _replace(*keys: str) -> Callable[[dict[str, Any], Mapping[str, Any]], dict[str, Any]]:
    def write(kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in kwargs.items() if k not in keys}
        out.update(payload)
        return out

    return write


def _role(*roles: str) -> Callable[[Any], bool]:
    return lambda item: isinstance(item, Mapping) and item.get("role") in roles


def _sdk_reply(response: Any, item: Callable[[Any], Any]) -> Reply:
    read = read_response(response)
    return Reply([read.turn], read.prompt_tokens, [item(response)])


# --- OpenAI Chat Completions ------------------------------------------------------------------


def _chat_item(response: Any) -> Any:
    return plain(response.choices[0].message)


OPENAI_CHAT = Api(
    name="chat.completions.create",
    format="openai",
    importer="openai",
    history_key="messages",
    is_model=_role("assistant"),
    read_history=_history("messages"),
    read_system=lambda kwargs: None,
    read_tools=_tools,
    write=_replace("messages", "tools"),
    read_reply=lambda response: _sdk_reply(response, _chat_item),
    source=lambda system, items: {"messages": items},
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
    data = plain(response)
    for key in ("previous_response_id", "conversation"):
        data.pop(key, None)  # the request's own server state; ours never sets it
    usage = data.get("usage")
    tokens = usage.get("input_tokens") if isinstance(usage, Mapping) else None
    events = load_events(data, format="openai_responses")
    return Reply(events, tokens if isinstance(tokens, int) else None, list(data.get("output", [])))


def _responses_source(system: Any, items: list[Any]) -> dict[str, Any]:
    source: dict[str, Any] = {"input": items}
    if system is not None:
        source["instructions"] = system
    return source


OPENAI_RESPONSES = Api(
    name="responses.create",
    format="responses",
    importer="openai_responses",
    history_key="input",
    is_model=_is_output,
    read_history=_history("input", text_role="user"),
    read_system=_kwarg("instructions"),
    read_tools=_tools,
    write=_replace("input", "instructions", "tools"),
    read_reply=_responses_reply,
    source=_responses_source,
    server_state=("previous_response_id", "conversation"),
)


# --- Anthropic Messages -------------------------------------------------------------------------


def _anthropic_item(response: Any) -> Any:
    return {"role": "assistant", "content": plain(response.content)}


def _anthropic_source(system: Any, items: list[Any]) -> dict[str, Any]:
    source: dict[str, Any] = {"messages": items}
    if system is not None:
        source["system"] = system
    return source


ANTHROPIC_MESSAGES = Api(
    name="messages.create",
    format="anthropic",
    importer="anthropic",
    history_key="messages",
    is_model=_role("assistant"),
    read_history=_history("messages"),
    read_system=_kwarg("system"),
    read_tools=_tools,
    write=_replace("messages", "system", "tools"),
    read_reply=lambda response: _sdk_reply(response, _anthropic_item),
    source=_anthropic_source,
)


# --- google-genai ------------------------------------------------------------------------------


def _gemini_contents(kwargs: Mapping[str, Any]) -> list[Any]:
    from google.genai import _transformers

    return plain(_transformers.t_contents(kwargs.get("contents")))  # type: ignore[no-any-return]


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


def _gemini_system(kwargs: Mapping[str, Any]) -> Any:
    value = _field(_config(kwargs), "system_instruction", "systemInstruction")
    if value is None:
        return None
    from google.genai import _transformers

    return plain(_transformers.t_content(value))


def _gemini_tools(kwargs: Mapping[str, Any]) -> Sequence[Any] | None:
    value = _field(_config(kwargs), "tools", "tools")
    return list(value) if value is not None else None


def _gemini_write(kwargs: dict[str, Any], payload: Mapping[str, Any]) -> dict[str, Any]:
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


def _gemini_item(response: Any) -> Any:
    return plain(response.candidates[0].content)


def _gemini_reply(response: Any) -> Reply:
    # Read as a one-item conversation, not as a response: a call without an id gets the
    # made-up id the importer gives it in a conversation, which the next call's
    # `functionResponse`, read after this same item, then answers.
    prompt_tokens = read_response(response).prompt_tokens
    item = _gemini_item(response)
    return Reply(load_events({"contents": [item]}, format="gemini"), prompt_tokens, [item])


def _gemini_source(system: Any, items: list[Any]) -> dict[str, Any]:
    source: dict[str, Any] = {"contents": items}
    if system is not None:
        source["systemInstruction"] = system
    return source


GEMINI_CONTENT = Api(
    name="models.generate_content",
    format="gemini",
    importer="gemini",
    history_key="contents",
    is_model=_role("model"),
    read_history=_gemini_contents,
    read_system=_gemini_system,
    read_tools=_gemini_tools,
    write=_gemini_write,
    read_reply=_gemini_reply,
    source=_gemini_source,
)
