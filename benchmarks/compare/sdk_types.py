"""Check OpenAI request messages against the official `openai` SDK's request types.

The walker is `benchmarks.sdk_types` (shared with the tests); here a message is
checked on its own, so that the answer can be cached per message, and an empty message
list, which the SDK's type allows but the API refuses, is reported too.
"""

from __future__ import annotations

import functools
from typing import Any

from benchmarks.sdk_types import type_problems


@functools.cache
def _message_type() -> Any:
    from openai.types.chat import ChatCompletionMessageParam

    return ChatCompletionMessageParam


def message_problems(message: Any) -> list[str]:
    """Where one message breaks `ChatCompletionMessageParam` (empty when it conforms).

    Paths start at `message` so that the answer can be cached whatever its position.
    """
    return type_problems(message, _message_type(), "message")


def payload_shape_problems(payload: Any) -> list[str]:
    """Problems of the body around the messages: `messages` must be a non-empty array."""
    if not isinstance(payload, dict):
        return ["$: expected an object"]
    messages = payload.get("messages")
    if not isinstance(messages, list):
        return ["messages: expected an array"]
    # The SDK's type allows an empty list; the API rejects it, so it is reported too.
    return [] if messages else ["messages: empty (the API requires at least one message)"]
