"""The shapes of a wire format's constants, the same for every format.

A format's folder fills one `Wire` in its `wire` module; `context_graph.formats.wires`
gathers them by name. Nothing here names a format.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

if TYPE_CHECKING:  # only annotations: importing `context_graph.tokens` here would
    # reach `formats.wires` while it is being built (the tokens package reads it)
    from context_graph.formats.chat_items import ChatReader
    from context_graph.tokens.usage_counts import Usage, UsageCounts

__all__ = [
    "ArtifactProblem",
    "CachePrice",
    "CallProblem",
    "CallShape",
    "FormatOverhead",
    "IdRule",
    "NativeArtifact",
    "Places",
    "Wire",
]


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


class ArtifactProblem(ValueError):
    """A compaction artifact that breaks its format's shape, at `path` inside it."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class NativeArtifact:
    """A format's own compaction artifact: what its provider returns and takes back.

    `context_graph.graph.native.NativeCompaction` holds one as received and checks it
    against this; the renderers send it back only to its own format.
    """

    keys: frozenset[str]
    """The keys the provider's SDK types the artifact with (as returned and as sent)."""
    optional_text: tuple[str, ...]
    """Keys that, when present and not null, must be strings."""
    check: Callable[[Mapping[str, Any]], None]
    """The format's own further rules; raises `ArtifactProblem`."""
    readable_key: str | None
    """The key holding a readable summary (None: the artifact is opaque)."""
    reader: str
    """Who alone can read the artifact, for the note other formats are sent instead."""
    noun: str
    """What the provider calls it, for error messages ("compaction block")."""
    keeps_user_turns: bool
    """Whether the provider keeps the user's messages beside the artifact (it then stands
    for every earlier node but those), rather than ignoring everything before it."""


class CallProblem(ValueError):
    """A tool call in a format's own shape that breaks it, at `path` inside the call."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


Places: TypeAlias = dict[str, str]
"""Where each `ToolCall` field was read, as the caller spelled it (`name` -> `function.name`)."""


class CallShape(Protocol):
    """A format's own tool-call shape, which `ToolCall` reads beside the shared ones.

    `context_graph.graph.call_shapes` reads the shared shapes (flat, `function`,
    `tool_use`); a format whose SDK gives calls in a shape of its own describes it here.
    Its methods read plain data, never mutate it, and raise `CallProblem`.
    """

    def wrapper(self, value: Mapping[str, Any]) -> str | None:
        """The key of the part that wraps one of its calls (None: no such part).

        A wrapped call is read before any shared shape is tried.
        """
        ...

    def read_wrapped(
        self, value: Mapping[str, Any], key: str, k: int
    ) -> tuple[dict[str, Any], Places]:
        """The `ToolCall` fields of the call wrapped at `key`, and where each was read.

        `k` is the call's rank among the same-named calls of its turn.
        """
        ...

    def is_bare(self, value: Mapping[str, Any]) -> bool:
        """Whether `value`, of no shared shape, is one of its calls without the wrapper."""
        ...

    def read_bare(self, value: Mapping[str, Any], k: int) -> tuple[dict[str, Any], Places]:
        """The `ToolCall` fields of a bare call, and where each was read."""
        ...

    def name_of(self, value: Any) -> str | None:
        """The name of one of its calls, wrapped or bare; None for any other value.

        Such a call without an id is given one from its rank among same-named calls.
        """
        ...


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
    read_usage: Callable[[UsageCounts], Usage | None]
    """Reads the provider's usage object (`None`: it reports no input)."""
    owns_usage: Callable[[Mapping[str, Any]], bool]
    """Whether a usage object (as plain keys) is this provider's, by keys only its usage
    has: a recorded session's usage is summed by the one format that claims it."""
    history_key: str
    """The request body's key holding the conversation (`messages`, `contents`, `input`):
    `{history_key: []}` is the format's empty request."""
    system_body: Callable[[str], dict[str, Any]]
    """A request holding only the given system prompt (and an empty conversation)."""
    as_chat: ChatReader
    """Reads a rendered body back as Chat Completions messages, each assistant message's
    reasoning kept beside it (`context_graph.formats.chat_items`), for the frameworks
    that are handed chat messages."""
    native: NativeArtifact | None = None
    """The provider's own compaction artifact, if it makes one."""
    call_shape: CallShape | None = None
    """The provider SDK's own tool-call shape, if it has one the shared shapes miss."""
    signs_thinking: bool = False
    """Whether the provider signs the thinking it returns (a signature only it accepts
    back), so that a `ThinkingPart` may name the format as its signer."""
    providers: frozenset[str] = frozenset()
    """What frameworks and SDKs call the providers whose chat models speak the format
    (LangChain's `ls_provider`, pydantic-ai's `system`, the SDK packages' names), in
    lowercase; `context_graph.formats.wires.provider_format` reads them. No two formats
    claim one name."""
