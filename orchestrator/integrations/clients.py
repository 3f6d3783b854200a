"""Managed SDK clients: `manager.wrap(client)` puts a manager between a loop and its model.

The wrapped client is the SDK's own client with its model-calling methods replaced:

- `openai.OpenAI` / `AsyncOpenAI`: `chat.completions.create` and `.parse` (format
  `openai`), `responses.create` and `.parse` (format `responses`);
- `anthropic.Anthropic` / `AsyncAnthropic`: `messages.create` and `beta.messages.create`
  / `.parse`, one conversation (format `anthropic`);
- google-genai's `genai.Client`: `models.generate_content` and `aio.models.generate_content`
  (format `gemini`).

The same methods under `with_raw_response` are managed too (the reply is read from the
raw response's `parse()`), and `with_options(...)` / `copy(...)` give a client managed
in the same conversations. Every other attribute is the client's own, unmanaged, but
the ways to the model a wrapper cannot stand in front of, which would send the whole
history behind the manager's back, raise `UnmanagedCallError`: `with_streaming_response`,
OpenAI's `beta.chat` and `beta.responses`, google-genai's `chats`. A managed call:

1. takes in what is new of the caller's conversation (`messages`, `input` or `contents`,
   and the system prompt: `instructions`, `system` or `config.system_instruction`); see
   `orchestrator.integrations.conversation`. The caller passes its whole conversation,
   as it would to the bare client, or (resuming) only what came after the part the
   manager's record holds.
2. renders the managed history in the method's format, under the manager's budget, with
   the call's `tools` (or the manager's own when the call has none), and sends that in
   place of the caller's conversation, system prompt and tools; every other argument
   (`model`, `max_tokens`, `temperature`, ...) goes as given.
3. ingests the reply, reports its usage (`report_usage`: the prompt tokens calibrate the
   count; prompt, completion and cached tokens add to `stats().usage` and its
   `cache_hit_rate`), and returns the SDK's own response object.

Streaming is managed too (`orchestrator.integrations.streams`): `stream=True`, the
`stream(...)` helpers and `generate_content_stream` take in and render the same way and
return the SDK's own stream, whose reply is ingested when it completes. Anthropic's
`beta.messages.tool_runner` (a loop of its own, on the bare client) raises
`UnmanagedCallError`.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

from context_graph import vendors
from context_graph.errors import ConfigurationError
from orchestrator.integrations.clients_apis import (
    ANTHROPIC_MESSAGES,
    GEMINI_CONTENT,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Api,
)
from orchestrator.integrations.conversation import Conversation, Manager
from orchestrator.integrations.streams import (
    StreamingNotSupportedError,
    gemini_stream,
    stream_helper,
    watch_stream,
)

__all__ = [
    "Conversation",
    "Manager",
    "StreamingNotSupportedError",
    "UnmanagedCallError",
    "wrap_client",
]

_C = TypeVar("_C")
_SUPPORTED = (
    "openai.OpenAI, openai.AsyncOpenAI, anthropic.Anthropic, anthropic.AsyncAnthropic "
    "and google.genai.Client"
)


class UnmanagedCallError(ConfigurationError):
    """A way to reach the model that a managed client cannot put the manager in front of."""


class _Managed:
    """An SDK object with some attributes replaced; every other one is the object's own.

    The replaced attributes are given by their names (`_Managed(client, chat=...)`).
    """

    def __init__(self, target: Any, /, **overrides: Any) -> None:
        self._target = target
        self._overrides = overrides

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


class _Refused:
    """An SDK attribute a managed client refuses: any use of it raises."""

    def __init__(self, name: str, fix: str) -> None:
        self._name, self._fix = name, fix

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("_"):  # copy, pickle and the like probe for these
            raise AttributeError(attribute)
        msg = (
            f"{self._name}.{attribute} on a managed client would reach the model without "
            f"the manager (the whole history, over the budget); {self._fix}"
        )
        raise UnmanagedCallError(msg)


def _parsed(raw: Any) -> Any:
    """The SDK object of a `with_raw_response` call's answer (awaitable for some async SDKs)."""
    return raw.parse()


def _sync(
    manager: Manager, conversation: Conversation, create: Any, read: Callable[[Any], Any] | None
) -> Any:
    api = conversation.api

    def managed(**kwargs: Any) -> Any:
        _refuse(api, kwargs)
        conversation.take(kwargs)
        # A manager without a budget of its own renders under the call's model's window.
        tools, model = api.read_tools(kwargs), kwargs.get("model")
        result = manager.render_sync(format=api.format, tools=tools, model=model)
        response = create(**api.write(dict(kwargs), result.payload))
        if kwargs.get("stream") is True:
            return watch_stream(response, conversation, kwargs)
        # A tool must never receive a shortened URL: the reply is restored, then ingested.
        reply = manager.restore_urls(response if read is None else read(response))
        conversation.give(reply)
        return reply if read is None else response

    return managed


def _async(
    manager: Manager,
    conversation: Conversation,
    create: Callable[..., Awaitable[Any]],
    read: Callable[[Any], Any] | None,
) -> Any:
    api = conversation.api

    async def managed(**kwargs: Any) -> Any:
        _refuse(api, kwargs)
        conversation.take(kwargs)
        tools, model = api.read_tools(kwargs), kwargs.get("model")
        result = await manager.render(format=api.format, tools=tools, model=model)
        response = await create(**api.write(dict(kwargs), result.payload))
        if kwargs.get("stream") is True:
            return watch_stream(response, conversation, kwargs)
        parsed = response if read is None else read(response)
        # A tool must never receive a shortened URL: the reply is restored, then ingested.
        reply = manager.restore_urls(await parsed if inspect.isawaitable(parsed) else parsed)
        conversation.give(reply)
        return reply if read is None else response

    return managed


def _resource(
    manager: Manager,
    conversation: Conversation,
    resource: Any,
    *,
    is_async: bool,
    where: str | None = None,
) -> _Managed:
    """A resource's `create` and `parse`, plain and `with_raw_response`, managed.

    `with_streaming_response` is refused (its body is read after the call returns); the
    `stream(...)` helper is managed (`orchestrator.integrations.streams`). `where` is the
    resource's path in the messages, by default that of the conversation's method
    (`chat.completions` for `chat.completions.create`).
    """
    where = where or conversation.api.name.rpartition(".")[0]
    make = _async if is_async else _sync
    names = [name for name in ("create", "parse") if hasattr(resource, name)]
    raw = resource.with_raw_response
    overrides: dict[str, Any] = {
        name: make(manager, conversation, getattr(resource, name), None) for name in names
    }
    overrides["with_raw_response"] = _Managed(
        raw,
        **{
            n: make(manager, conversation, getattr(raw, n), _parsed)
            for n in names
            if hasattr(raw, n)
        },
    )
    overrides["with_streaming_response"] = _Refused(
        f"{where}.with_streaming_response",
        f"call `{where}.create` (or `{where}.with_raw_response.create` for the HTTP response)",
    )
    if hasattr(resource, "stream"):
        overrides["stream"] = stream_helper(manager, conversation, resource.stream)
    if hasattr(resource, "tool_runner"):  # a loop of its own, on the bare client
        runner = _Refused(where, f"write the loop with `{where}.create`")
        overrides["tool_runner"] = lambda *args, **kwargs: runner.tool_runner
    return _Managed(resource, **overrides)


def _options(rewrap: Callable[[Any], _Managed], method: Callable[..., Any]) -> Callable[..., Any]:
    """`with_options` / `copy`: the new client, managed in the same conversations."""

    def managed(*args: Any, **kwargs: Any) -> _Managed:
        return rewrap(method(*args, **kwargs))

    return managed


def _openai(
    manager: Manager,
    client: Any,
    *,
    is_async: bool,
    chat: Conversation | None = None,
    responses: Conversation | None = None,
) -> _Managed:
    chat = chat or Conversation(manager, OPENAI_CHAT)
    responses = responses or Conversation(manager, OPENAI_RESPONSES)

    def rewrap(copy: Any) -> _Managed:
        return _openai(manager, copy, is_async=is_async, chat=chat, responses=responses)

    completions = _resource(manager, chat, client.chat.completions, is_async=is_async)
    fix = "call `chat.completions.create` / `responses.create` (or `.parse`) instead"
    return _Managed(
        client,
        chat=_Managed(client.chat, completions=completions),
        responses=_resource(manager, responses, client.responses, is_async=is_async),
        beta=_Managed(
            client.beta,
            chat=_Refused("beta.chat", fix),
            responses=_Refused("beta.responses", fix),
        ),
        with_options=_options(rewrap, client.with_options),
        copy=_options(rewrap, client.copy),
    )


def _anthropic(
    manager: Manager, client: Any, *, is_async: bool, conversation: Conversation | None = None
) -> _Managed:
    # One conversation: `beta.messages` takes the same messages, with beta features.
    conversation = conversation or Conversation(manager, ANTHROPIC_MESSAGES)

    def rewrap(copy: Any) -> _Managed:
        return _anthropic(manager, copy, is_async=is_async, conversation=conversation)

    messages = _resource(manager, conversation, client.messages, is_async=is_async)
    beta = _resource(
        manager, conversation, client.beta.messages, is_async=is_async, where="beta.messages"
    )
    return _Managed(
        client,
        messages=messages,
        beta=_Managed(client.beta, messages=beta),
        with_options=_options(rewrap, client.with_options),
        copy=_options(rewrap, client.copy),
    )


def _gemini(manager: Manager, client: Any) -> _Managed:
    # One conversation: the blocking and the `aio` methods are one client's.
    conversation = Conversation(manager, GEMINI_CONTENT)
    chats = _Refused(
        "chats",
        "a chat session keeps its own history and calls the bare client: call "
        "`models.generate_content` with the whole conversation instead",
    )
    models = _Managed(
        client.models,
        generate_content=_sync(manager, conversation, client.models.generate_content, None),
        generate_content_stream=gemini_stream(
            manager, conversation, client.models.generate_content_stream, is_async=False
        ),
    )
    aio_models = _Managed(
        client.aio.models,
        generate_content=_async(manager, conversation, client.aio.models.generate_content, None),
        generate_content_stream=gemini_stream(
            manager, conversation, client.aio.models.generate_content_stream, is_async=True
        ),
    )
    aio = _Managed(client.aio, models=aio_models, chats=chats)
    return _Managed(client, models=models, aio=aio, chats=chats)


def wrap_client(manager: Manager, client: _C) -> _C:
    """`client` with its model calls managed by `manager` (see the module docstring).

    Raises:
        ConfigurationError: `client` is none of the supported SDK clients.
    """
    # Each vendor's SDK is its top-level package, named after the vendor.
    package = type(client).__module__.split(".")[0]
    managed: _Managed | None = None
    if package == vendors.OPENAI:
        import openai

        if isinstance(client, openai.OpenAI | openai.AsyncOpenAI):
            managed = _openai(manager, client, is_async=isinstance(client, openai.AsyncOpenAI))
    elif package == vendors.ANTHROPIC:
        import anthropic

        if isinstance(client, anthropic.Anthropic | anthropic.AsyncAnthropic):
            is_async = isinstance(client, anthropic.AsyncAnthropic)
            managed = _anthropic(manager, client, is_async=is_async)
    elif package == vendors.GOOGLE:
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
