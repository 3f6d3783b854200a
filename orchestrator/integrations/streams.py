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


# --- Collectors: each assembles one API's reply from its stream's events ------------------------


class _Collector(Protocol):
    def feed(self, event: Any) -> Any:
        """The whole response if `event` completes it (`None`: not yet)."""

    def finish(self) -> Any:
        """The whole response at the stream's normal end (`None`: it never completed)."""


class _ChatChunks:
    """`chat.completion.chunk`s (bare, or in the `chat.completions.stream` helper's events)."""

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        from openai.lib.streaming.chat import ChatCompletionStreamState

        self._state: Any = ChatCompletionStreamState()
        options = kwargs.get("stream_options")
        self._usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        self._finished = False

    def feed(self, event: Any) -> Any:
        chunk = event.chunk if getattr(event, "type", None) == "chunk" else event
        if getattr(chunk, "object", None) != "chat.completion.chunk":
            return None  # the helper's derived events repeat what its chunk events carry
        self._state.handle_chunk(chunk)
        snapshot = self._state.current_completion_snapshot
        choices = snapshot.choices
        self._finished = bool(choices) and all(c.finish_reason is not None for c in choices)
        if self._finished and (not self._usage or snapshot.usage is not None):
            return self.finish()
        return None

    def finish(self) -> Any:
        # A server that ignores `include_usage` ends the stream without the usage chunk.
        return _chat_completion(self._state.get_final_completion()) if self._finished else None


def _chat_completion(parsed: Any) -> Any:
    """A `ChatCompletion` of the helper's `ParsedChatCompletion`, without its parsing fields."""
    from openai.types.chat import ChatCompletion

    data = parsed.model_dump(mode="json", exclude_none=True)
    for choice in data.get("choices", []):
        message = choice.get("message", {})
        message.pop("parsed", None)
        for call in message.get("tool_calls", []):
            call.pop("index", None)
            call.get("function", {}).pop("parsed_arguments", None)
    return ChatCompletion.model_validate(data)


class _ResponsesEvents:
    """Responses events: `response.completed` carries the whole response."""

    def feed(self, event: Any) -> Any:
        return event.response if getattr(event, "type", None) == "response.completed" else None

    def finish(self) -> Any:
        return None


_MESSAGE_EVENTS = frozenset(
    "message_start content_block_start content_block_delta content_block_stop message_delta".split()
)


class _MessageEvents:
    """Anthropic events, accumulated by the SDK's `accumulate_event` until `message_stop`."""

    def __init__(self) -> None:
        self._snapshot: Any = None
        self._json: dict[int, bytes] = {}

    def feed(self, event: Any) -> Any:
        # The SDK's own accumulator; `anthropic.lib.streaming` does not re-export it.
        from anthropic.lib.streaming._messages import accumulate_event

        kind = getattr(event, "type", None)
        if kind in _MESSAGE_EVENTS:
            self._snapshot = accumulate_event(
                event=event, current_snapshot=self._snapshot, json_bufs=self._json
            )
        if kind == "message_stop":
            # The `messages.stream` helper's stop event carries its own snapshot.
            return getattr(event, "message", None) or self._snapshot
        return None

    def finish(self) -> Any:
        return None


class _GeminiChunks:
    """`GenerateContentResponse` chunks, merged when one carries `finish_reason`."""

    def __init__(self) -> None:
        self._chunks: list[Any] = []

    def feed(self, event: Any) -> Any:
        self._chunks.append(event)
        candidates = event.candidates or []
        return self.finish() if candidates and candidates[0].finish_reason else None

    def finish(self) -> Any:
        from google.genai import types

        chunks = self._chunks
        last = next((c for c in reversed(chunks) if c.candidates), None)
        if last is None or not last.candidates[0].finish_reason:
            return None
        parts: list[Any] = []
        for chunk in chunks:
            content = chunk.candidates[0].content if chunk.candidates else None
            for part in (content.parts if content else None) or []:
                _merge_part(parts, part)
        content = types.Content(role="model", parts=parts)
        candidate = last.candidates[0].model_copy(update={"content": content})
        usage = next((c.usage_metadata for c in reversed(chunks) if c.usage_metadata), None)
        return last.model_copy(update={"candidates": [candidate], "usage_metadata": usage})


def _merge_part(parts: list[Any], part: Any) -> None:
    """Append a streamed part, joining text to the text part before it of the same kind."""
    before = parts[-1] if parts else None
    if (
        before is not None
        and part.text is not None
        and before.text is not None
        and bool(part.thought) == bool(before.thought)
    ):
        # A signature closes the text it signs; it may come on a later, empty piece.
        signature = part.thought_signature or before.thought_signature
        update = {"text": before.text + part.text, "thought_signature": signature}
        parts[-1] = before.model_copy(update=update)
    else:
        parts.append(part)


def _collector(api: Api, kwargs: Mapping[str, Any]) -> _Collector:
    if api.format == "openai":
        return _ChatChunks(kwargs)
    if api.format == "responses":
        return _ResponsesEvents()
    if api.format == "anthropic":
        return _MessageEvents()
    return _GeminiChunks()


# --- Watching an iterator -----------------------------------------------------------------------


def _deliverer(conversation: Turns, turn: int) -> Deliver:
    """Gives a reply to `conversation` once, if no call after call `turn` has taken in."""
    given: list[bool] = []

    def deliver(response: Any) -> None:
        if not given and conversation.taken == turn:
            given.append(True)
            conversation.give(response)

    return deliver


def _watch(iterator: Iterator[Any], collector: _Collector, deliver: Deliver) -> Iterator[Any]:
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
    iterator: AsyncIterator[Any], collector: _Collector, deliver: Deliver
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
    collector, deliver = _collector(api, kwargs), _deliverer(conversation, turn)
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
        return _watch(chunks, _GeminiChunks(), _deliverer(conversation, turn))

    async def amanaged(**kwargs: Any) -> AsyncIterator[Any]:
        conversation.take(kwargs)
        turn = conversation.taken
        result = await manager.render(format=api.format, tools=api.read_tools(kwargs))
        chunks = await bare(**api.write(dict(kwargs), result.payload))
        return _awatch(chunks, _GeminiChunks(), _deliverer(conversation, turn))

    return amanaged if is_async else managed
