"""Streaming through a managed client: the SDK's own stream, watched, its reply ingested whole.

A managed streaming call (`create(stream=True)`, the SDKs' `stream(...)` helpers,
google-genai's `generate_content_stream`) takes in the caller's conversation and sends
the manager's render like any managed call, then hands back the object the bare client
would: the same SDK stream, whose events reach the caller as they arrive. The stream's
iterator is wrapped: each event also goes to a collector that assembles the reply with
the SDK's own helpers (openai's `ChatCompletionStreamState`, the Responses
`response.completed` event's whole response, anthropic's `accumulate_event` and the
`message_stop` snapshot, Gemini's chunks merged part by part). The reply is ingested,
and its usage reported, at the event that completes it (the chunk with the last
`finish_reason`, or the usage chunk after it when usage was asked for;
`response.completed`; `message_stop`; the chunk with `finishReason`), before that event
is handed on. A stream that never gets there (the caller stops reading or closes it,
the connection drops, an error event arrives) ingests nothing, and the conversation
stays as the call took it in, so the next call passes its history as usual. A stream
that completes after a later call on the same method took its conversation in is not
ingested either: its reply would land after items the caller sent later.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from context_graph.errors import ConfigurationError
from context_graph.render import RenderResult
from context_graph.tokens.counting import ProviderFormat
from orchestrator.integrations.clients_apis import Api
from orchestrator.integrations.stream_collectors import GeminiChunks, StreamCollector

__all__ = [
    "Renderer",
    "StreamingNotSupportedError",
    "Turns",
    "gemini_stream",
    "stream_helper",
    "watch_stream",
]

Deliver = Callable[[Any], None]


class StreamingNotSupportedError(ConfigurationError):
    """A streaming call on a managed client whose reply could not be taken in whole."""


class Renderer(Protocol):
    """What a managed stream needs of its `ContextManager`: its render."""

    async def render(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
        model: str | None = None,
    ) -> RenderResult:
        """Compact when due, then render."""

    def render_sync(
        self,
        *,
        format: ProviderFormat | None = None,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
        model: str | None = None,
    ) -> RenderResult:
        """The blocking twin of `render`."""


class Turns(Protocol):
    """What a managed stream needs of its method's `Conversation`."""

    @property
    def api(self) -> Api:
        """The method."""

    @property
    def taken(self) -> int:
        """How many calls' conversations were taken in so far."""

    def take(self, kwargs: Mapping[str, Any]) -> None:
        """Ingest what is new in a call's conversation and system prompt."""

    def give(self, response: Any) -> None:
        """Ingest a response's reply and report its usage."""


# --- Watching an iterator -----------------------------------------------------------------------


def _deliverer(conversation: Turns, turn: int) -> Deliver:
    """Gives a reply to `conversation` once, if no call after call `turn` has taken in."""
    given: list[bool] = []

    def deliver(response: Any) -> None:
        if not given and conversation.taken == turn:
            given.append(True)
            conversation.give(response)

    return deliver


def _watch(iterator: Iterator[Any], collector: StreamCollector, deliver: Deliver) -> Iterator[Any]:
    try:
        for event in iterator:
            response = collector.feed(event)
            if response is not None:
                deliver(response)
            yield event
        response = collector.finish()
        if response is not None:
            deliver(response)
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()  # a caller that stopped early frees the connection now, not at collection


async def _awatch(
    iterator: AsyncIterator[Any], collector: StreamCollector, deliver: Deliver
) -> AsyncIterator[Any]:
    try:
        async for event in iterator:
            response = collector.feed(event)
            if response is not None:
                deliver(response)
            yield event
        response = collector.finish()
        if response is not None:
            deliver(response)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def watch_stream(
    stream: Any, conversation: Turns, kwargs: Mapping[str, Any], turn: int | None = None
) -> Any:
    """`stream`, an SDK stream object, with its events watched (see the module docstring).

    The SDKs' streams (`openai.Stream`, `anthropic.Stream`, the helpers' streams, and
    their async twins) all read their events from one iterator, `_iterator`, whatever
    the caller uses (iteration, `text_stream`, `get_final_message()`, `until_done()`):
    wrapping it watches every way of reading, and the caller keeps the SDK's object.
    `turn` is the call's number in `conversation.taken` (`None`: the last call).

    Raises:
        StreamingNotSupportedError: the stream keeps no such iterator (an SDK version
            this module does not know).
    """
    api = conversation.api
    iterator: Any = getattr(stream, "_iterator", None)
    turn = conversation.taken if turn is None else turn
    if api.collect_stream is None:
        msg = (
            f"{api.name}: no collector assembles this method's streamed reply; "
            "call without streaming, or use the bare client"
        )
        raise StreamingNotSupportedError(msg)
    collector, deliver = api.collect_stream(kwargs), _deliverer(conversation, turn)
    if hasattr(iterator, "__anext__"):
        stream._iterator = _awatch(iterator, collector, deliver)
    elif hasattr(iterator, "__next__"):
        stream._iterator = _watch(iterator, collector, deliver)
    else:
        msg = (
            f"{api.name}: a {type(stream).__module__}.{type(stream).__qualname__} keeps no "
            "event iterator this managed client can watch (an SDK version it does not know); "
            "call without streaming, or use the bare client"
        )
        raise StreamingNotSupportedError(msg)
    return stream


# --- The SDKs' streaming methods ----------------------------------------------------------------


class _StreamManager:
    """An SDK helper's stream manager, opened on the manager's render when entered."""

    def __init__(
        self, manager: Renderer, conversation: Turns, bare: Callable[..., Any], kwargs: Any
    ) -> None:
        self._manager, self._conversation, self._bare = manager, conversation, bare
        self._kwargs: dict[str, Any] = dict(kwargs)
        self._turn = conversation.taken
        self._inner: Any = None

    def _open(self, result: RenderResult) -> Any:
        self._inner = self._bare(**self._conversation.api.write(dict(self._kwargs), result.payload))
        return self._inner

    def _watch(self, stream: Any) -> Any:
        return watch_stream(stream, self._conversation, self._kwargs, self._turn)

    def __enter__(self) -> Any:
        api = self._conversation.api
        result = self._manager.render_sync(format=api.format, tools=api.read_tools(self._kwargs))
        return self._watch(self._open(result).__enter__())

    def __exit__(self, *exc: Any) -> None:
        if self._inner is not None:
            self._inner.__exit__(*exc)

    async def __aenter__(self) -> Any:
        api = self._conversation.api
        result = await self._manager.render(format=api.format, tools=api.read_tools(self._kwargs))
        return self._watch(await self._open(result).__aenter__())

    async def __aexit__(self, *exc: Any) -> None:
        if self._inner is not None:
            await self._inner.__aexit__(*exc)


def stream_helper(
    manager: Renderer, conversation: Turns, bare: Callable[..., Any]
) -> Callable[..., Any]:
    """A managed `stream(...)` helper (`chat.completions`, `responses`, `messages`).

    The call takes the conversation in (and refuses what a managed call refuses) at
    once; the manager renders, and the bare helper sends, when the returned manager is
    entered (`with` or `async with`, as the bare helper's), which gives the SDK's stream.
    """
    api = conversation.api

    def managed(**kwargs: Any) -> _StreamManager:
        api.refuse_server_state(kwargs)
        conversation.take(kwargs)
        return _StreamManager(manager, conversation, bare, kwargs)

    return managed


def gemini_stream(
    manager: Renderer, conversation: Turns, bare: Callable[..., Any], *, is_async: bool
) -> Callable[..., Any]:
    """A managed `generate_content_stream`: the bare one's chunks, watched."""
    api = conversation.api

    def managed(**kwargs: Any) -> Iterator[Any]:
        conversation.take(kwargs)
        turn = conversation.taken
        result = manager.render_sync(format=api.format, tools=api.read_tools(kwargs))
        chunks = bare(**api.write(dict(kwargs), result.payload))
        return _watch(chunks, GeminiChunks(), _deliverer(conversation, turn))

    async def amanaged(**kwargs: Any) -> AsyncIterator[Any]:
        conversation.take(kwargs)
        turn = conversation.taken
        result = await manager.render(format=api.format, tools=api.read_tools(kwargs))
        chunks = await bare(**api.write(dict(kwargs), result.payload))
        return _awatch(chunks, GeminiChunks(), _deliverer(conversation, turn))

    return amanaged if is_async else managed
