"""Managed SDK clients: `manager.wrap(client)` puts a manager between a loop and its model.

The wrapped client is the SDK's own client with its model-calling methods replaced:

- `openai.OpenAI` / `AsyncOpenAI`: `chat.completions.create` (format `openai`) and
  `responses.create` (format `responses`);
- `anthropic.Anthropic` / `AsyncAnthropic`: `messages.create` (format `anthropic`);
- google-genai's `genai.Client`: `models.generate_content` and `aio.models.generate_content`
  (format `gemini`).

Every other attribute is the client's own, unmanaged. A managed call:

1. takes in what is new of the caller's conversation (`messages`, `input` or `contents`,
   and the system prompt: `instructions`, `system` or `config.system_instruction`). The
   caller passes its whole conversation, as it would to the bare client; the wrapper
   counts what it has taken in (every item of earlier calls, and the reply it returned)
   and ingests the items after that. The reply is recognised where the loop appended it
   (the model's items right after the previous call's conversation) and skipped, since
   it was ingested when it arrived. A system prompt is ingested when it differs from the
   previous call's. A conversation that does not start with the one taken in (shorter,
   or with an item changed) is refused (`ConfigurationError`): the engine's record is
   append-only.
2. renders the managed history in the method's format, under the manager's budget, with
   the call's `tools` (or the manager's own when the call has none), and sends that in
   place of the caller's conversation, system prompt and tools; every other argument
   (`model`, `max_tokens`, `temperature`, ...) goes as given.
3. ingests the reply, reports its prompt tokens (`report_usage`), and returns the SDK's
   own response object.

Streaming is managed too (`orchestrator.integrations.streams`): `stream=True`, the
`stream(...)` helpers and `generate_content_stream` take in and render the same way and
return the SDK's own stream, whose reply is ingested when it completes.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from context_graph.errors import ConfigurationError
from context_graph.graph.events import AgentEvent
from context_graph.render import RenderResult
from context_graph.tokens.counting import ProviderFormat
from orchestrator.integrations.clients_apis import (
    ANTHROPIC_MESSAGES,
    GEMINI_CONTENT,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
)
from orchestrator.integrations.streams import (
    StreamingNotSupportedError,
    gemini_stream,
    stream_helper,
    watch_stream,
)

__all__ = ["Conversation", "Manager", "StreamingNotSupportedError", "wrap_client"]

_C = TypeVar("_C")
_SUPPORTED = (
    "openai.OpenAI, openai.AsyncOpenAI, anthropic.Anthropic, anthropic.AsyncAnthropic "
    "and google.genai.Client"
)


class Manager(Protocol):
    """What a managed client needs of its `ContextManager`."""

    def ingest(self, events: Iterable[AgentEvent | dict[str, Any]]) -> tuple[str, ...]:
        """Add a batch of events, whole or not at all."""

    async def render(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
    ) -> RenderResult:
        """Compact when due, then render."""

    def render_sync(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
    ) -> RenderResult:
        """The blocking twin of `render`."""

    def report_usage(self, prompt_tokens: int) -> float:
        """Report the provider's prompt tokens for the last render."""


class Conversation:
    """What one managed method has taken in of its caller's conversation.

    Args:
        manager: The manager the conversation is kept in.
        api: The method.
    """

    def __init__(self, manager: Manager, api: Api) -> None:
        self._manager = manager
        self._api = api
        self._keys: list[str] = []
        """The caller's items taken in (those of the last call), as JSON."""
        self._reply: list[Any] = []
        """The last reply, as the items a loop appends."""
        self._reply_due = False
        """The reply is not yet in a conversation the caller passed."""
        self._system: Any = None
        self._taken = 0

    @property
    def taken(self) -> int:
        """How many calls' conversations were taken in (a stream's reply must be of the last)."""
        return self._taken

    @property
    def api(self) -> Api:
        """The method this conversation belongs to."""
        return self._api

    def take(self, kwargs: Mapping[str, Any]) -> None:
        """Ingest what is new in a call's conversation and system prompt.

        Raises:
            ConfigurationError: the conversation is not a list, or does not start with the
                one the last call passed.
            IngestError: a new item is malformed; nothing was ingested.
        """
        api = self._api
        history = api.read_history(kwargs)
        system = api.read_system(kwargs)
        keys = [json.dumps(item, sort_keys=True) for item in history]
        if keys[: len(self._keys)] != self._keys:
            changed = next(
                (i for i, (a, b) in enumerate(zip(keys, self._keys, strict=False)) if a != b),
                len(keys),
            )
            msg = (
                f"{api.name}: `{api.history_key}[{changed}]` is not the item this managed "
                f"client took in there ({len(self._keys)} items so far); pass the whole "
                "conversation, extended, on every call (the record is append-only: start a "
                "new manager for a rewritten history)"
            )
            raise ConfigurationError(msg)
        start = len(self._keys) + self._appended_reply(history)
        events = api.events(
            system if system != self._system else None, [*self._reply, *history[start:]]
        )
        # The last reply leads the items only so that answers to its calls pair with them.
        skip = len(self._reply)
        fresh = [e for e in events if _after(e, skip)]
        if fresh:
            self._manager.ingest(fresh)
        self._keys, self._system, self._reply_due = keys, system, False
        self._taken += 1

    def _appended_reply(self, history: list[Any]) -> int:
        """How many items of the last reply the caller appended where they belong."""
        if not self._reply_due:
            return 0
        count = 0
        while (
            count < len(self._reply)
            and len(self._keys) + count < len(history)
            and self._api.is_model(history[len(self._keys) + count])
        ):
            count += 1
        return count

    def give(self, response: Any) -> None:
        """Ingest a response's reply and report its prompt tokens.

        Raises:
            IngestError: the response is malformed; nothing was ingested.
        """
        reply = self._api.read_reply(response)
        self._manager.ingest(reply.events)
        if reply.prompt_tokens:
            self._manager.report_usage(reply.prompt_tokens)
        self._reply, self._reply_due = reply.items, True


def _after(event: AgentEvent, skip: int) -> bool:
    """Whether an event was read from the system prompt or an item at `skip` or later."""
    index = None if event.source is None else event.source.index
    return index is None or index >= skip


class _Managed:
    """An SDK object with some attributes replaced; every other one is the object's own."""

    def __init__(self, target: Any, overrides: Mapping[str, Any]) -> None:
        self._target = target
        self._overrides = dict(overrides)

    def __getattr__(self, name: str) -> Any:
        overrides = self.__dict__.get("_overrides", {})
        if name in overrides:
            return overrides[name]
        return getattr(self.__dict__["_target"], name)

    def __repr__(self) -> str:
        return f"<managed {self._target!r}>"


def _refuse(api: Api, kwargs: Mapping[str, Any]) -> None:
    """Refuse what a managed call cannot do: continue server-side history."""
    api.refuse_server_state(kwargs)


def _sync(manager: Manager, conversation: Conversation, create: Any) -> Any:
    api = conversation.api

    def managed(**kwargs: Any) -> Any:
        _refuse(api, kwargs)
        conversation.take(kwargs)
        result = manager.render_sync(format=api.format, tools=api.read_tools(kwargs))
        response = create(**api.write(dict(kwargs), result.payload))
        if kwargs.get("stream") is True:
            return watch_stream(response, conversation, kwargs)
        conversation.give(response)
        return response

    return managed


def _async(
    manager: Manager, conversation: Conversation, create: Callable[..., Awaitable[Any]]
) -> Any:
    api = conversation.api

    async def managed(**kwargs: Any) -> Any:
        _refuse(api, kwargs)
        conversation.take(kwargs)
        result = await manager.render(format=api.format, tools=api.read_tools(kwargs))
        response = await create(**api.write(dict(kwargs), result.payload))
        if kwargs.get("stream") is True:
            return watch_stream(response, conversation, kwargs)
        conversation.give(response)
        return response

    return managed


def _openai(manager: Manager, client: Any, *, is_async: bool) -> _Managed:
    make = _async if is_async else _sync
    chat, responses = Conversation(manager, OPENAI_CHAT), Conversation(manager, OPENAI_RESPONSES)
    completions = client.chat.completions
    return _Managed(
        client,
        {
            "chat": _Managed(
                client.chat,
                {
                    "completions": _Managed(
                        completions,
                        {
                            "create": make(manager, chat, completions.create),
                            "stream": stream_helper(manager, chat, completions.stream),
                        },
                    )
                },
            ),
            "responses": _Managed(
                client.responses,
                {
                    "create": make(manager, responses, client.responses.create),
                    "stream": stream_helper(manager, responses, client.responses.stream),
                },
            ),
        },
    )


def _anthropic(manager: Manager, client: Any, *, is_async: bool) -> _Managed:
    make = _async if is_async else _sync
    conversation = Conversation(manager, ANTHROPIC_MESSAGES)
    messages = client.messages
    overrides = {
        "create": make(manager, conversation, messages.create),
        "stream": stream_helper(manager, conversation, messages.stream),
    }
    return _Managed(client, {"messages": _Managed(messages, overrides)})


def _gemini(manager: Manager, client: Any) -> _Managed:
    # One conversation: the blocking and the `aio` methods are one client's.
    conversation = Conversation(manager, GEMINI_CONTENT)
    stream, aio_stream = (
        client.models.generate_content_stream,
        client.aio.models.generate_content_stream,
    )
    models = _Managed(
        client.models,
        {
            "generate_content": _sync(manager, conversation, client.models.generate_content),
            "generate_content_stream": gemini_stream(manager, conversation, stream, is_async=False),
        },
    )
    aio_models = _Managed(
        client.aio.models,
        {
            "generate_content": _async(manager, conversation, client.aio.models.generate_content),
            "generate_content_stream": gemini_stream(
                manager, conversation, aio_stream, is_async=True
            ),
        },
    )
    return _Managed(client, {"models": models, "aio": _Managed(client.aio, {"models": aio_models})})


def wrap_client(manager: Manager, client: _C) -> _C:
    """`client` with its model calls managed by `manager` (see the module docstring).

    Raises:
        ConfigurationError: `client` is none of the supported SDK clients.
    """
    package = type(client).__module__.split(".")[0]
    managed: _Managed | None = None
    if package == "openai":
        import openai

        if isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
            managed = _openai(manager, client, is_async=isinstance(client, openai.AsyncOpenAI))
    elif package == "anthropic":
        import anthropic

        if isinstance(client, anthropic.Anthropic | anthropic.AsyncAnthropic):
            is_async = isinstance(client, anthropic.AsyncAnthropic)
            managed = _anthropic(manager, client, is_async=is_async)
    elif package == "google":
        from google import genai

        if isinstance(client, genai.Client):
            managed = _gemini(manager, client)
    if managed is None:
        msg = (
            f"wrap: cannot manage a {type(client).__module__}.{type(client).__qualname__}; "
            f"expected one of {_SUPPORTED}"
        )
        raise ConfigurationError(msg)
    return managed  # type: ignore[return-value]  # a stand-in with the client's interface
