"""`ProviderRenderer`: what the `Renderer` needs of one provider format.

The `Renderer` does the format-neutral work (units to neutral turns, the token budget,
which units to leave out, the render cache); a `ProviderRenderer` writes that into one
provider's request body and counts it. Each format has one, in its folder under
`context_graph.formats`, and `context_graph.formats.registry` maps every format to its
renderer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from context_graph.graph.content import ContentPart
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.render.tools import ToolSpec
from context_graph.render.turns import UnitTurns
from context_graph.tokens.calibration import FormatOverhead
from context_graph.tokens.counting import ProviderFormat

__all__ = [
    "EMPTY_USER_TEXT",
    "LEADING_USER_TEXT",
    "AssemblyStats",
    "CacheMarking",
    "Message",
    "ProviderRenderer",
]

#: One message (or content) of a request body, in its provider's JSON shape.
Message = dict[str, Any]

#: What an empty user turn is sent as: the APIs reject empty and whitespace-only text.
EMPTY_USER_TEXT = "[empty message]"
#: The user turn put before a history that opens with the assistant, or has nothing to send.
LEADING_USER_TEXT = "[conversation start]"


@dataclass
class AssemblyStats:
    """What `assemble` changed: merged neighbours, a leading turn, a stripped ending."""

    merges: int = 0
    """How many messages were merged into a same-role neighbour."""
    lead: bool = False
    """Whether a user turn of `LEADING_USER_TEXT` was put first."""
    stripped: Message | None = None
    """The final message as it was before assembly trimmed it (None: not trimmed)."""
    strip_result: Message | None = None
    """What the trimmed final message became (None: it was left out)."""


@runtime_checkable
class CacheMarking(Protocol):
    """Prompt-cache marks of a format that takes them (the registry's `CACHE_MARKING_FORMATS`).

    Contract: the marked body is the plain `assemble` body with marks added, nothing
    else changed, so that both cost the same tokens.
    """

    def assemble_marked(
        self,
        system: list[Message],
        units: Sequence[list[Message]],
        *,
        breakpoints: Sequence[tuple[int, int]],
        stats: AssemblyStats | None,
        mark_system: bool = True,
    ) -> dict[str, Any]:
        """The request body with the system prompt and each `(message, block)` marked.

        Positions count in the merged message list; negative ones from the end. With
        `mark_system` False the system prompt is left unmarked.
        """

    def mark_tools(self, tools: list[Message]) -> list[Message]:
        """The rendered tools field with a mark after its last tool (a new list)."""

    def last_block(
        self, system: list[Message], units: Sequence[list[Message]]
    ) -> tuple[int, int] | None:
        """The `(message, block)` position of the last block `units` assemble into."""


@runtime_checkable
class ProviderRenderer(Protocol):
    """One provider's request format, for the `Renderer`.

    Contract: every method is a pure function of its arguments (a provider renderer
    holds no state, so one instance serves every `Renderer`); nothing it is given is
    mutated. `unit_messages` renders a unit standing alone, `assemble` joins units in
    order into a body the provider accepts (merging neighbours, opening with a user
    turn of `LEADING_USER_TEXT` where the format needs one, reporting what it changed
    in `stats`), and `count_payload` of a body equals `count_messages` of its parts
    plus the request and system overheads (and `count_tools` of its `tools` field),
    so the renderer can size a body without recounting it. `assemble` reads only the
    messages, in order: where one unit ends and the next begins does not change the
    body, so the renderer may hand over the units it assembled before as one list.
    """

    @property
    def format(self) -> ProviderFormat:
        """The format's name, its key in the registry."""

    @property
    def overhead(self) -> FormatOverhead:
        """The tokens the format adds around content (per message, call, result, request)."""

    @property
    def cache_marking(self) -> CacheMarking | None:
        """How to mark the prompt cache, or None for a format that takes no marks."""

    def system(self, parts: Sequence[ContentPart]) -> list[Message]:
        """The system prompt's parts, as the format's system field holds them."""

    def unit_messages(self, unit: UnitTurns) -> list[Message]:
        """The messages of one unit, standing alone (not merged with neighbours)."""

    def assemble(
        self,
        system: list[Message],
        units: Sequence[list[Message]],
        stats: AssemblyStats | None = None,
    ) -> dict[str, Any]:
        """The request body: the system field, then every unit's messages in order."""

    def count_messages(self, messages: Sequence[Message], cache: NodeTokenCache) -> int:
        """Tokens of messages, each with its overhead."""

    def count_payload(self, payload: dict[str, Any], cache: NodeTokenCache) -> int:
        """Tokens of a whole request body in this format, its `tools` field included."""

    def render_tools(self, specs: Sequence[ToolSpec]) -> list[Message]:
        """The format's `tools` field for `specs`, in their order."""

    def count_tools(self, tools: list[Message], cache: NodeTokenCache) -> int:
        """Tokens of a rendered `tools` field, with the format's tool overheads."""
