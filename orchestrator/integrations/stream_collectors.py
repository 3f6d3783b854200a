"""Collectors: each assembles one SDK method's whole reply from the events of its stream.

A managed stream hands every event to its method's collector (`Api.collect_stream`),
which answers with the whole response at the event that completes it. Each SDK streams
in its own way and is assembled with its own helpers (openai's
`ChatCompletionStreamState`, the Responses `response.completed` event, anthropic's
`accumulate_event`, Gemini's chunks merged part by part); the SDKs are imported only
when a stream is collected.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

__all__ = ["ChatChunks", "GeminiChunks", "MessageEvents", "ResponsesEvents", "StreamCollector"]


class StreamCollector(Protocol):
    """Assembles one streamed reply; fed every event in order, never the caller's data."""

    def feed(self, event: Any) -> Any:
        """The whole response if `event` completes it (`None`: not yet)."""

    def finish(self) -> Any:
        """The whole response at the stream's normal end (`None`: it never completed)."""


class ChatChunks:
    """`chat.completion.chunk`s (bare, or in the `chat.completions.stream` helper's events)."""

    def __init__(self, kwargs: Mapping[str, Any]) -> None:
        from openai.lib.streaming.chat import ChatCompletionStreamState

        self._state: Any = ChatCompletionStreamState()
        options = kwargs.get("stream_options")
        self._usage = isinstance(options, Mapping) and bool(options.get("include_usage"))
        self._finished = False

    def feed(self, event: Any) -> Any:
        """The whole completion at the last `finish_reason`, or at the usage chunk after it."""
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
        """The completion, if its last `finish_reason` came (the usage chunk never did)."""
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


class ResponsesEvents:
    """Responses events: `response.completed` carries the whole response."""

    def feed(self, event: Any) -> Any:
        """The response that `response.completed` carries."""
        return event.response if getattr(event, "type", None) == "response.completed" else None

    def finish(self) -> Any:
        """Nothing: a stream without `response.completed` never completed."""
        return None


_MESSAGE_EVENTS = frozenset(
    "message_start content_block_start content_block_delta content_block_stop message_delta".split()
)


class MessageEvents:
    """Anthropic events, accumulated by the SDK's `accumulate_event` until `message_stop`."""

    def __init__(self) -> None:
        self._snapshot: Any = None
        self._json: dict[int, bytes] = {}

    def feed(self, event: Any) -> Any:
        """The message at `message_stop`, accumulated from the events before it."""
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
        """Nothing: a stream without `message_stop` never completed."""
        return None


class GeminiChunks:
    """`GenerateContentResponse` chunks, merged when one carries `finish_reason`."""

    def __init__(self) -> None:
        self._chunks: list[Any] = []

    def feed(self, event: Any) -> Any:
        """The chunks merged into one response at the chunk with `finish_reason`."""
        self._chunks.append(event)
        candidates = event.candidates or []
        return self.finish() if candidates and candidates[0].finish_reason else None

    def finish(self) -> Any:
        """The chunks merged, if one carried `finish_reason` (`None`: none did)."""
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
