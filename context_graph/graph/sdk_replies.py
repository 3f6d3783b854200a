"""What the provider SDKs return, read into events: a reply message, or a whole response.

`read_message` gives the `AssistantTurn` of a message, `read_response` also the usage of
a response (`context_graph.tokens.usage`: prompt, completion and cached tokens) and the
provider's own compactions it opens with. Each format's folder says which of its SDK's
objects it reads, and how (`context_graph.formats.<format>.replies`); this module asks
every format's reader (`context_graph.formats.registry.REPLY_READERS`) how sure it is
that a reply is its own, and the surest reads it.

A reply is taken as the SDK's object or as its plain dict (the JSON the API sent). No SDK
is imported: their objects are pydantic models and are read through `model_dump`. A
message is converted by the importer of its format (the same code that reads recorded
sessions), so a live loop and a replayed log give the same events.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeAlias

from pydantic import BaseModel

from context_graph.errors import IngestError, SourceLocation
from context_graph.formats.wires import FormatName
from context_graph.graph.call_shapes import plain
from context_graph.graph.content import (
    DocumentPart,
    ImagePart,
    ReasoningPart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.graph.events import AssistantTurn
from context_graph.graph.reply_reader import Claim, Reply, ReplyReader, mapping
from context_graph.urls import restore_urls

__all__ = ["Provider", "Reply", "is_reply", "read_message", "read_response"]

Provider: TypeAlias = FormatName
"""Whose reply it is: a format's name."""

_PARTS = (TextPart, ImagePart, DocumentPart, ThinkingPart, RedactedThinkingPart, ReasoningPart)


def is_reply(value: object) -> bool:
    """Whether `value` is a whole message or response (an SDK object or its dict), not parts."""
    if isinstance(value, BaseModel):
        return not isinstance(value, _PARTS)
    if isinstance(value, Mapping):
        return _message_reader(value) is not None or _holds_message(value)
    return False


def read_message(message: object, **fields: Any) -> AssistantTurn:
    """The assistant turn of one reply message; `fields` add to it or override it.

    Raises:
        IngestError: the message is malformed, not the assistant's, or a whole response
            (whose message is `choices[0].message` or `candidates[0].content`).
    """
    top = SourceLocation()
    data = _data(message, top)
    reader = _message_reader(data)
    if reader is None:
        if _holds_message(data):
            paths = " or ".join(r.message_at for r in _readers() if r.message_at)
            msg = (
                f"this is a whole response, not a message: pass {paths}, "
                "or give the response to `ContextManager.add_response`"
            )
        else:
            msg = f"unrecognized reply message (keys: {_keys(data)}); {_expected()}"
        raise IngestError(msg)
    return reader.read_message(data, top, fields)


def read_response(
    response: object, *, url_map: Mapping[str, str] | None = None, **fields: Any
) -> Reply:
    """The assistant turn and the usage of a whole response.

    Args:
        response: The response, as the SDK's object or its dict.
        url_map: Tags of shortened URLs and the query strings they stand for
            (`context_graph.urls.url_map`): every tag in the reply, in its text and in
            its tool calls' arguments, is turned back into the original.
        **fields: More `AssistantTurn` fields.

    Raises:
        IngestError: the response is malformed or of no kind recognized; names the path.
    """
    top = SourceLocation()
    data = _data(response, top)
    if url_map:
        data = restore_urls(data, url_map)
    reader = _response_reader(data)
    if reader is None:
        msg = f"unrecognized response (keys: {_keys(data)}); {_expected()}"
        raise IngestError(msg)
    return reader.read_response(data, top, fields)


def _readers() -> tuple[ReplyReader, ...]:
    # Asked here, not at the top: the formats' readers import the graph.
    from context_graph.formats.registry import REPLY_READERS

    return tuple(REPLY_READERS.values())


def _surest(claims: Iterable[tuple[Claim | None, ReplyReader]]) -> ReplyReader | None:
    """The reader of the surest claim (of two equally sure, the first listed)."""
    best: tuple[Claim, ReplyReader] | None = None
    for claim, reader in claims:
        if claim is not None and (best is None or claim > best[0]):
            best = (claim, reader)
    return None if best is None else best[1]


def _message_reader(data: Mapping[str, Any]) -> ReplyReader | None:
    return _surest((r.claims_message(data), r) for r in _readers())


def _response_reader(data: Mapping[str, Any]) -> ReplyReader | None:
    return _surest((r.claims_response(data), r) for r in _readers())


def _holds_message(data: Mapping[str, Any]) -> bool:
    """Whether `data` is a response that keeps its message inside (not one itself)."""
    return any(r.message_at and r.claims_response(data) is not None for r in _readers())


def _expected() -> str:
    named = [r.expected for r in _readers()]
    listed = f"{', '.join(named[:-1])} or {named[-1]}" if len(named) > 1 else named[0]
    return f"expected {listed}, as the SDK's object or its dict"


def _data(value: object, where: SourceLocation) -> Mapping[str, Any]:
    return mapping(plain(value, _PARTS), where, "a reply")


def _keys(data: Mapping[str, Any]) -> str:
    return ", ".join(sorted(str(k) for k in data)) or "none"
