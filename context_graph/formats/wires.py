"""The registry's constant half: every wire format's `Wire`, by name.

Split from `context_graph.formats.registry` because the graph and token layers read
these (id rules, overheads) below the renderers, which import those layers: importing
the renderers here would close a circle. A new format is a folder with its `wire`
module and one entry here, and one in the registry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Literal, TypeAlias

from context_graph.formats.anthropic.wire import WIRE as ANTHROPIC
from context_graph.formats.gemini.wire import WIRE as GEMINI
from context_graph.formats.openai_chat.wire import WIRE as OPENAI_CHAT
from context_graph.formats.openai_responses.wire import WIRE as OPENAI_RESPONSES
from context_graph.formats.wire import Wire

__all__ = ["DEFAULT_FORMAT", "FORMAT_NAMES", "READ_ORDER", "WIRES", "FormatName", "only_formats"]

#: A wire format's name.
FormatName: TypeAlias = Literal["openai", "anthropic", "gemini", "responses"]

#: Every format's constants, read-only, in the order `context_graph.render.FORMATS` lists.
WIRES: Mapping[str, Wire] = MappingProxyType(
    {wire.name: wire for wire in (OPENAI_CHAT, ANTHROPIC, GEMINI, OPENAI_RESPONSES)}
)

#: The formats' names, in that order.
FORMAT_NAMES: tuple[FormatName, ...] = ("openai", "anthropic", "gemini", "responses")

#: The format of every renderer, manager and replay not told one: named once here so that
#: the generic code never spells a format itself.
DEFAULT_FORMAT: FormatName = "openai"

#: The readers' names (`Wire.reader_name`) in the order they try to recognise a body:
#: the formats with unmistakable fields first, chat last (a bare message list is chat).
READ_ORDER: tuple[str, ...] = tuple(
    wire.reader_name for wire in (ANTHROPIC, GEMINI, OPENAI_RESPONSES, OPENAI_CHAT)
)


def only_formats(names: tuple[str, ...], lacking: str) -> Callable[[FormatName], FormatName]:
    """A field validator that admits the formats of `names` (those with some capability).

    Any other format is refused with a `ValueError` that says it is `lacking` the
    capability ("signs no thinking") and lists `names`.
    """

    def admit(name: FormatName) -> FormatName:
        if name not in names:
            msg = f"{name!r} {lacking}; expected one of {', '.join(names)}"
            raise ValueError(msg)
        return name

    return admit
