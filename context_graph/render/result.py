"""What a render returns (`RenderResult`), and counting a request body as the renderer does."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render.native import ForeignCompaction
from context_graph.tokens.counting import ProviderFormat, TokenCounter

__all__ = ["RenderResult", "count_payload"]


@dataclass(frozen=True)
class RenderResult:
    """A rendered request and what it took to fit it.

    Attributes:
        payload: The request body (`{"messages": ...}`, `{"system": ..., "messages": ...}`
            or `{"systemInstruction": ..., "contents": ...}`). Treat it as read-only: it
            is shared with the render cache.
        format: The provider format.
        tokens: The request's tokens by the renderer's counter, overheads included.
        tokens_before: What the whole history costs with nothing dropped.
        budget: The budget it was fitted to (`None`: no budget).
        units: How many interaction units the source had.
        dropped: The head node ids of the units left out, oldest first.
        call_ids: Provider call id -> the id of the tool-call node it stands for.
        signed_secrets: Secrets by type that a redactor had to leave inside signed
            thinking blocks of the units this request carries (a signed block cannot be
            edited; it goes only to the provider that signed it). Empty when none.
        foreign_compactions: Other providers' own compactions (`NativeCompaction`)
            that this format cannot read, oldest first, each with what was sent in its
            place: the nodes it stands for, or, with no earlier record, its readable
            summary or a note.
            Empty when none (a provider's own compaction goes back verbatim).
    """

    payload: dict[str, Any]
    format: ProviderFormat
    tokens: int
    tokens_before: int
    budget: int | None
    units: int
    dropped: tuple[str, ...]
    call_ids: Mapping[str, str] = field(default_factory=dict)
    signed_secrets: Mapping[str, int] = field(default_factory=dict)
    foreign_compactions: tuple[ForeignCompaction, ...] = ()

    def to_json(self, *, indent: int | None = None) -> str:
        """The payload as JSON text, byte-stable for the same result."""
        return json.dumps(self.payload, ensure_ascii=False, indent=indent)


def count_payload(
    payload: Mapping[str, Any], format: ProviderFormat, cache: NodeTokenCache | TokenCounter
) -> int:
    """Count a request body's tokens the way the renderer budgets them.

    Args:
        payload: A request body in `format`.
        format: The body's format (a name of `context_graph.render.FORMATS`).
        cache: A `NodeTokenCache`, or a bare `TokenCounter` (wrapped in a fresh cache).
    """
    if not isinstance(cache, NodeTokenCache):
        cache = NodeTokenCache(cache)
    # Asked here, not at the top: see `context_graph.formats.registry`.
    from context_graph.formats.registry import PROVIDER_RENDERERS

    return PROVIDER_RENDERERS[format].count_payload(dict(payload), cache)
