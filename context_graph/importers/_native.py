"""Provider compaction artifacts read into `Compaction` events, with the importers' errors.

The Anthropic and Responses importers (and the SDK reply reader) turn an Anthropic
`compaction` block or a Responses `compaction` item into a `Compaction` event carrying
it verbatim (`context_graph.graph.native`). A malformed one is refused with an
`IngestError` naming the key inside the block, never half-read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pydantic import JsonValue, ValidationError

from context_graph.errors import IngestError, SourceLocation
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.events import Compaction
from context_graph.graph.json_limits import check_json_value
from context_graph.graph.native import NativeCompaction, NativeProvider, readable_text

__all__ = ["ORIGINS", "anthropic_compactions", "native_compaction"]

#: The `origin` of each provider's compaction.
ORIGINS: Mapping[str, str] = {"anthropic": "anthropic", "responses": "openai_responses"}


def native_compaction(
    provider: NativeProvider,
    item: Mapping[str, Any],
    where: SourceLocation,
    *,
    timestamp: str | None = None,
    meta: Mapping[str, JsonValue] | None = None,
) -> Compaction:
    """The `Compaction` event of one artifact read at `where`.

    Raises:
        IngestError: the artifact is malformed or too large to keep (names the key).
    """
    for key, value in item.items():
        if isinstance(key, str):  # other keys are refused below
            check_json_value(value, path=key, location=where)
    try:
        native = NativeCompaction(provider=provider, item=dict(item))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        deeper = (first.get("ctx") or {}).get("path")
        loc = [str(p) for p in first["loc"]]
        path = deeper if isinstance(deeper, str) else ".".join(loc)
        key = path.removeprefix("item").lstrip(".")
        what = "compaction block" if provider == "anthropic" else "compaction item"
        msg = f"{what} is malformed: {first['msg']}"
        raise IngestError(msg, where.with_path(key) if key else where) from None
    text = readable_text(native)
    content: tuple[ContentPart, ...] = (TextPart(text=text),) if text else ()
    return Compaction(
        content=content,
        origin=ORIGINS[provider],
        native=native,
        timestamp=timestamp,
        meta=dict(meta or {}),
        source=where,
    )


_Block = TypeVar("_Block", bound=tuple[Mapping[str, Any], SourceLocation])


def anthropic_compactions(blocks: Sequence[_Block]) -> tuple[list[Compaction], list[_Block]]:
    """The `compaction` blocks a message's located blocks open with, as events; the rest.

    The API puts the block first in the reply that compacted; one anywhere else is
    refused (what it stands for would be ambiguous). A block with null `content` is a
    compaction that failed, which the API treats as a no-op: it stands for nothing and
    is left out.

    Raises:
        IngestError: a block is malformed, or comes after another kind of block.
    """
    events: list[Compaction] = []
    lead = 0
    while lead < len(blocks) and blocks[lead][0].get("type") == "compaction":
        block, at = blocks[lead]
        event = native_compaction("anthropic", block, at)
        if event.content:
            events.append(event)
        lead += 1
    for block, at in blocks[lead:]:
        if block.get("type") == "compaction":
            msg = (
                "a `compaction` block must come first in its assistant message, before any "
                "other block, as the API returns it"
            )
            raise IngestError(msg, at.with_path("type"))
    return events, list(blocks[lead:])
