"""Compaction providers: a remote service writes the summary, the extractive brief backs it up.

A `CompactionProvider` is given the nodes of the span to compact, the user's instructions
and the identifiers that must survive verbatim, and returns a `Compacted`: readable
summary text, a provider-native artifact (`NativeCompaction`), or both. Providers are
registered by name, like processors, and a summarize stage names one:

```python
register_compaction_provider("mine", MyProvider)
HistorySummarizer(provider="mine")  # or `provider = "mine"` in a TOML summarize stage
```

Two are built in: `openai-compact` (`POST /v1/responses/compact` through the OpenAI SDK's
`responses.compact`) and `anthropic-compact` (the Messages API's `compact_20260112`
context-management edit, through the Anthropic SDK's `beta.messages.create`). The
summarize stage calls the provider first; on an error, a timeout or an empty result it
falls back to the extractive brief in safeguard mode (`processors.summarize.history`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pydantic import JsonValue

from context_graph.errors import ConfigurationError
from context_graph.formats.wires import RESPONSES_FORMAT
from context_graph.graph.native import NativeCompaction
from context_graph.graph.nodes import AssistantNode, Node, SystemNode, ToolCallNode

__all__ = [
    "AnthropicCompactProvider",
    "Compacted",
    "CompactionProvider",
    "OpenAICompactProvider",
    "as_mapping",
    "available_compaction_providers",
    "create_compaction_provider",
    "plain_messages",
    "register_compaction_provider",
    "resolve_provider",
    "safeguard_targets",
    "unregister_compaction_provider",
]


@dataclass(frozen=True, slots=True)
class Compacted:
    """What a compaction provider returned for a span.

    Attributes:
        text: The readable summary, or `None` when the provider gave only an opaque
            artifact.
        native: The provider's own artifact, sent back verbatim to that provider only.
        provider: The provider's registry name (recorded on the summary node).
    """

    text: str | None = None
    native: NativeCompaction | None = None
    provider: str = ""

    @property
    def empty(self) -> bool:
        """Whether it holds nothing to commit (no text and no artifact)."""
        return not (self.text and self.text.strip()) and self.native is None


@runtime_checkable
class CompactionProvider(Protocol):
    """Compacts a span of nodes into a summary, remotely or by any means it likes."""

    name: str

    async def compact(
        self, messages: Sequence[Node], instructions: str | None, identifiers: Sequence[str]
    ) -> Compacted:
        """The compaction of `messages`, which must keep `identifiers` verbatim."""


_LOCK = threading.Lock()
_FACTORIES: dict[str, Callable[..., CompactionProvider]] = {}


def register_compaction_provider(
    name: str, factory: Callable[..., CompactionProvider], *, replace: bool = False
) -> None:
    """Make a provider available under `name`; `factory(**options)` builds one.

    Raises:
        ConfigurationError: the name is empty or taken (pass `replace=True`).
    """
    if not isinstance(name, str) or not name:
        msg = f"compaction provider name must be a non-empty string, got {name!r}"
        raise ConfigurationError(msg)
    with _LOCK:
        taken = _FACTORIES.get(name)
        if taken is not None and taken is not factory and not replace:
            msg = f"compaction provider name {name!r} is taken; pass replace=True"
            raise ConfigurationError(msg)
        _FACTORIES[name] = factory


def unregister_compaction_provider(name: str) -> None:
    """Forget the provider registered as `name` (no error if there is none)."""
    with _LOCK:
        _FACTORIES.pop(name, None)


def available_compaction_providers() -> tuple[str, ...]:
    """Every registered provider name, sorted."""
    with _LOCK:
        return tuple(sorted(_FACTORIES))


def create_compaction_provider(name: str, **options: Any) -> CompactionProvider:
    """A new provider registered as `name`, built with `options`.

    Raises:
        ConfigurationError: no provider has that name, or it refuses the options.
    """
    with _LOCK:
        factory = _FACTORIES.get(name)
    if factory is None:
        names = ", ".join(available_compaction_providers()) or "none"
        msg = f"no compaction provider named {name!r}; available: {names}"
        raise ConfigurationError(msg)
    try:
        provider = factory(**options)
    except TypeError as exc:
        msg = f"compaction provider {name!r} refuses its options {sorted(options)}: {exc}"
        raise ConfigurationError(msg) from exc
    if not callable(getattr(provider, "compact", None)):
        msg = f"compaction provider {name!r} built {type(provider).__name__}, with no `compact`"
        raise ConfigurationError(msg)
    return provider


def _role(node: Node) -> str:
    return "assistant" if isinstance(node, AssistantNode | ToolCallNode) else "user"


def _line(node: Node) -> str:
    """A node as one message's text: tool calls and results say what they are."""
    if isinstance(node, ToolCallNode):
        return f"[tool call {node.name}] {node.arguments}"
    if node.answers_call:
        return f"[tool result] {node.text}".strip()
    return node.text


def plain_messages(messages: Sequence[Node]) -> list[dict[str, str]]:
    """The span as alternating role/text messages (consecutive same-role nodes joined)."""
    out: list[dict[str, str]] = []
    for node in messages:
        if isinstance(node, SystemNode):
            continue
        text = _line(node)
        if not text:
            continue
        role = _role(node)
        if out and out[-1]["role"] == role:
            out[-1]["content"] += f"\n\n{text}"
        else:
            out.append({"role": role, "content": text})
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "content": "(the conversation so far)"})
    return out


def _instructions(instructions: str | None, identifiers: Sequence[str]) -> str:
    keep = "Keep these exactly as written: " + ", ".join(identifiers) if identifiers else ""
    return "\n".join(t for t in (instructions or "", keep) if t)


class OpenAICompactProvider:
    """OpenAI's compact endpoint: the result is an opaque `compaction` item.

    Args:
        model: The model the endpoint compacts for.
        client: An `openai.AsyncOpenAI`; `None` makes one from the environment
            (`OPENAI_API_KEY`, `OPENAI_BASE_URL`) or `base_url`/`api_key`.
        base_url: The API's base URL, when no client is given.
        api_key: The key, when no client is given.
    """

    name = "openai-compact"

    def __init__(
        self,
        *,
        model: str = "gpt-5.2",
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
    ) -> None:
        self.model = model
        self._client = client
        self._base_url = base_url
        self._api_key = api_key

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI  # an optional dependency

            self._client = AsyncOpenAI(base_url=self._base_url, api_key=self._api_key)
        return self._client

    async def compact(
        self, messages: Sequence[Node], instructions: str | None, identifiers: Sequence[str]
    ) -> Compacted:
        """Send the span to `responses.compact`; its `compaction` item is the result."""
        reply = await self._get_client().responses.compact(
            model=self.model,
            input=plain_messages(messages),
            instructions=_instructions(instructions, identifiers) or None,
        )
        items = [i for i in reply.output if getattr(i, "type", None) == "compaction"]
        if len(items) != 1:
            msg = f"the compacted response holds {len(items)} compaction items, expected 1"
            raise ValueError(msg)
        item = items[0].model_dump(mode="json", exclude_none=True)
        native = NativeCompaction(provider=RESPONSES_FORMAT, item=item)
        return Compacted(native=native, provider=self.name)


class AnthropicCompactProvider:
    """Anthropic's server-side compaction: a `compaction` block with readable `content`.

    The span is sent with a `compact_20260112` edit that triggers at once and pauses
    after compacting, so the reply holds the compaction block and no new turn.

    Args:
        model: The model that compacts.
        client: An `anthropic.AsyncAnthropic`; `None` makes one from the environment
            or `base_url`/`api_key`.
        base_url: The API's base URL, when no client is given.
        api_key: The key, when no client is given.
        max_tokens: The reply's `max_tokens`.
    """

    name = "anthropic-compact"
    beta = "compact-2026-01-12"

    def __init__(
        self,
        *,
        model: str = "claude-sonnet-4-5",
        client: Any = None,
        base_url: str | None = None,
        api_key: str | None = None,
        max_tokens: int = 4096,
    ) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self._client = client
        self._base_url = base_url
        self._api_key = api_key

    def _get_client(self) -> Any:
        if self._client is None:
            from anthropic import AsyncAnthropic  # an optional dependency

            self._client = AsyncAnthropic(base_url=self._base_url, api_key=self._api_key)
        return self._client

    def edit(self, instructions: str | None, identifiers: Sequence[str]) -> dict[str, Any]:
        """The `context_management` body: compact now, then stop."""
        compact: dict[str, Any] = {
            "type": "compact_20260112",
            "pause_after_compaction": True,
            # The smallest trigger: the span is sent to be compacted, whatever its size.
            "trigger": {"type": "input_tokens", "value": 1},
        }
        text = _instructions(instructions, identifiers)
        if text:
            compact["instructions"] = text
        return {"edits": [compact]}

    async def compact(
        self, messages: Sequence[Node], instructions: str | None, identifiers: Sequence[str]
    ) -> Compacted:
        """Send the span with the compaction edit; the reply's `compaction` block is the result."""
        reply = await self._get_client().beta.messages.create(
            model=self.model,
            max_tokens=self.max_tokens,
            messages=plain_messages(messages),
            context_management=self.edit(instructions, identifiers),
            betas=[self.beta],
        )
        blocks = [b for b in reply.content if getattr(b, "type", None) == "compaction"]
        if len(blocks) != 1:
            msg = f"the reply holds {len(blocks)} compaction blocks, expected 1"
            raise ValueError(msg)
        block = blocks[0].model_dump(mode="json", exclude_none=True)
        text = block.get("content")
        if not isinstance(text, str) or not text.strip():
            # A null `content` is the server saying the compaction failed.
            return Compacted(provider=self.name)
        # The readable summary only: Anthropic's API ignores every message before a
        # `compaction` block, and this one stands for the span alone (the floor before it,
        # the first request, must still be read), so it is sent as our summary's text.
        return Compacted(text=text, provider=self.name)


def resolve_provider(
    provider: str | CompactionProvider | None, options: Mapping[str, JsonValue] | None
) -> CompactionProvider | None:
    """The provider itself, built from its registry name when given one.

    Raises:
        ConfigurationError: an unknown name, refused options, options for a provider
            given as an object, or an object with no `compact` method.
    """
    if isinstance(provider, str):
        kwargs = as_mapping(options if options is not None else {}, "HistorySummarizer")
        return create_compaction_provider(provider, **kwargs)
    if options is not None:
        msg = "HistorySummarizer: `provider_options` needs `provider` given by name"
        raise ConfigurationError(msg)
    if provider is not None and not callable(getattr(provider, "compact", None)):
        msg = "HistorySummarizer: `provider` must be a registry name or have an async `compact`"
        raise ConfigurationError(msg)
    return provider


def safeguard_targets(previous: Node | None, units: Sequence[Sequence[Node]]) -> list[Node]:
    """The targets of a safeguard summary: the previous summary, then the older units.

    The newer half of the units (at least one, when there are two or more) stays
    unsummarized, so the recent turns survive verbatim whatever the brief drops.
    """
    keep = max(1, len(units) // 2) if len(units) > 1 else 0
    head = [previous] if previous is not None else []
    return [*head, *(node for unit in units[: len(units) - keep] for node in unit)]


def as_mapping(options: object, where: str) -> Mapping[str, Any]:
    """`options` checked to be a table of keyword options."""
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        msg = f"{where}: `provider_options` must be a table of options, got {options!r}"
        raise ConfigurationError(msg)
    return options


register_compaction_provider(OpenAICompactProvider.name, OpenAICompactProvider)
register_compaction_provider(AnthropicCompactProvider.name, AnthropicCompactProvider)
