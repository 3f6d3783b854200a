"""The shapes of a wire format's constants, the same for every format.

A format's folder fills one `Wire` in its `wire` module; `context_graph.formats.wires`
gathers them by name. Nothing here names a format.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["CachePrice", "FormatOverhead", "IdRule", "Wire"]


@dataclass(frozen=True, slots=True)
class FormatOverhead:
    """Tokens a provider format adds around the content.

    A format whose provider publishes its counting recipe follows it; the others are
    conservative estimates that `context_graph.tokens.Calibrator` corrects from
    reported usage.
    """

    per_message: int
    """Added for every message (role markers, separators)."""
    per_tool_call: int
    """Added for every tool call (id, type and name wrappers)."""
    per_tool_result: int
    """Added for every tool result (id wrapper)."""
    per_request: int
    """Added once per request (reply priming)."""
    per_tool: int = 0
    """Added for every tool definition the request carries (its wrapper)."""
    per_tools: int = 0
    """Added once when the request carries tool definitions (the provider's tool-use
    preamble, which some providers document as a few hundred tokens of system prompt)."""


@dataclass(frozen=True, slots=True)
class IdRule:
    """What a provider accepts as a tool-call id."""

    pattern: re.Pattern[str]
    max_length: int


@dataclass(frozen=True)
class CachePrice:
    """How one provider bills a request's input with its prompt cache."""

    provider: str
    model: str
    input_per_million: float
    read: float
    """Price of a cached token, as a multiple of the input price."""
    write: float
    """Price of a token written to the cache, as a multiple (1.0: no surcharge)."""
    minimum: int
    """The shortest prefix the cache serves (and, with a surcharge, writes)."""
    step: int = 1
    """Cached prefixes are served in multiples of this many tokens."""


@dataclass(frozen=True)
class Wire:
    """One wire format's constants: what the graph, token and price code need of it."""

    name: str
    """The format's name, its key everywhere (`Renderer(format=...)`, `validate`)."""
    reader_name: str
    """The format's name among the importers' formats (`load_sessions(format=...)`)."""
    overhead: FormatOverhead
    """The tokens the format adds around content."""
    id_rule: IdRule
    """What the provider accepts as a tool-call id."""
    price: CachePrice
    """How the provider that reads the format bills a request's input."""
