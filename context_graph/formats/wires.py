"""The registry's constant half: every wire format's `Wire`, by name.

Split from `context_graph.formats.registry` because the graph and token layers read
these (id rules, overheads) below the renderers, which import those layers: importing
the renderers here would close a circle. A new format is a folder with its `wire`
module and one entry here, and one in the registry.

Outside its folder and the registry, a format is named by its constant here
(`RESPONSES_FORMAT`, typed `FormatName`), never by its string: what a provider is called
by a framework resolves here too (`provider_format`), from each wire's `providers`.
`python -m benchmarks.house` counts the files that spell a format's name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Final, Literal, TypeAlias

from context_graph.formats.anthropic.wire import WIRE as ANTHROPIC_WIRE
from context_graph.formats.gemini.wire import WIRE as GEMINI_WIRE
from context_graph.formats.openai_chat.wire import WIRE as OPENAI_CHAT_WIRE
from context_graph.formats.openai_responses.wire import WIRE as OPENAI_RESPONSES_WIRE
from context_graph.formats.wire import Wire

__all__ = [
    "ANTHROPIC_FORMAT",
    "DEFAULT_FORMAT",
    "FORMAT_NAMES",
    "GEMINI_FORMAT",
    "OPENAI_FORMAT",
    "READ_ORDER",
    "RESPONSES_FORMAT",
    "WIRES",
    "FormatName",
    "only_formats",
    "provider_format",
]

#: A wire format's name.
FormatName: TypeAlias = Literal["openai", "anthropic", "gemini", "responses"]

#: OpenAI Chat Completions (`context_graph/formats/openai_chat/`).
OPENAI_FORMAT: Final[FormatName] = "openai"
#: Anthropic Messages (`context_graph/formats/anthropic/`).
ANTHROPIC_FORMAT: Final[FormatName] = "anthropic"
#: Gemini `generateContent` (`context_graph/formats/gemini/`).
GEMINI_FORMAT: Final[FormatName] = "gemini"
#: The OpenAI Responses API (`context_graph/formats/openai_responses/`).
RESPONSES_FORMAT: Final[FormatName] = "responses"

#: Every format's constants, read-only, in the order `context_graph.render.FORMATS` lists.
WIRES: Mapping[str, Wire] = MappingProxyType(
    {
        wire.name: wire
        for wire in (OPENAI_CHAT_WIRE, ANTHROPIC_WIRE, GEMINI_WIRE, OPENAI_RESPONSES_WIRE)
    }
)

#: The formats' names, in that order.
FORMAT_NAMES: tuple[FormatName, ...] = (
    OPENAI_FORMAT,
    ANTHROPIC_FORMAT,
    GEMINI_FORMAT,
    RESPONSES_FORMAT,
)

#: The format of every renderer, manager and replay not told one: named once here so that
#: the generic code never spells a format itself.
DEFAULT_FORMAT: FormatName = OPENAI_FORMAT

#: The readers' names (`Wire.reader_name`) in the order they try to recognise a body:
#: the formats with unmistakable fields first, chat last (a bare message list is chat).
READ_ORDER: tuple[str, ...] = tuple(
    wire.reader_name
    for wire in (ANTHROPIC_WIRE, GEMINI_WIRE, OPENAI_RESPONSES_WIRE, OPENAI_CHAT_WIRE)
)

# Each provider name to the one format that claims it (`Wire.providers`).
_BY_PROVIDER: Mapping[str, FormatName] = MappingProxyType(
    {provider: name for name in FORMAT_NAMES for provider in WIRES[name].providers}
)


def provider_format(provider: str | None) -> FormatName | None:
    """The format a provider's chat models speak, by what a framework calls the provider.

    The names are each format's `Wire.providers`; case is ignored. `None`: no provider
    given, or one no format claims.
    """
    if provider is None:
        return None
    return _BY_PROVIDER.get(provider.lower())


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
