"""Provider-native compaction: a provider's own compaction artifact, kept as received.

Two providers compact a conversation on their side and hand the client an artifact to
send back in place of what it stands for: Anthropic a `compaction` content block at the
start of an assistant message (the `compact_20260112` context-management edit), readable
`content` with optional opaque fields; the OpenAI Responses API a `compaction` item whose
`encrypted_content` only OpenAI can read. A `NativeCompaction` holds one of them byte for
byte; the `Compaction` event that carries it becomes a summary node standing for every
earlier node (a Responses item: every earlier node but the user's messages, which the
API keeps beside it), rendered verbatim to its own provider and set aside for any other
(which renders the nodes it stands for instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, JsonValue, field_serializer, model_validator
from pydantic_core import PydanticCustomError

__all__ = ["NativeCompaction", "NativeProvider", "opaque_note", "readable_text"]

NativeProvider: TypeAlias = Literal["anthropic", "responses"]
"""The formats whose compaction artifacts are read: each one's format name."""

# The keys each provider's SDK types the artifact with (as returned, and as sent back).
_KEYS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "anthropic": frozenset(
            {"type", "content", "encrypted_content", "signature", "tool_changes", "cache_control"}
        ),
        "responses": frozenset({"type", "id", "encrypted_content", "created_by"}),
    }
)
_OPTIONAL_TEXT: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {"anthropic": ("encrypted_content", "signature"), "responses": ("id", "created_by")}
)


def _problem(reason: str, path: str) -> PydanticCustomError:
    """A validation error naming the key inside `item` (the event's errors show the path)."""
    return PydanticCustomError("native_compaction", "{reason}", {"reason": reason, "path": path})


class NativeCompaction(BaseModel):
    """One provider's compaction artifact, exactly as the provider returned it.

    `item` is the Anthropic `compaction` block or the Responses `compaction` item as plain
    JSON; it is checked against the provider's shape (its `type`, the keys and value
    types its SDK declares) and is otherwise never read or changed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: NativeProvider
    """Whose artifact it is: the only format it is sent back to."""
    item: Mapping[str, JsonValue]
    """The block (Anthropic) or the input item (Responses), as received."""

    @model_validator(mode="after")
    def _check_shape(self) -> NativeCompaction:
        item = self.item
        if item.get("type") != "compaction":
            msg = f'`type` must be "compaction", got {item.get("type")!r}'
            raise _problem(msg, "item.type")
        unknown = sorted(set(item) - _KEYS[self.provider])
        if unknown:
            msg = (
                f"unknown key `{unknown[0]}` for a {self.provider} compaction; expected "
                f"{', '.join(sorted(_KEYS[self.provider]))}"
            )
            raise _problem(msg, f"item.{unknown[0]}")
        for key in _OPTIONAL_TEXT[self.provider]:
            _optional_text(item, key)
        if self.provider == "anthropic":
            _check_anthropic(item)
        else:
            encrypted = item.get("encrypted_content")
            if not isinstance(encrypted, str) or not encrypted:
                msg = (
                    "a Responses compaction item needs its `encrypted_content` as a "
                    f"non-empty string, got {_shown(encrypted)}"
                )
                raise _problem(msg, "item.encrypted_content")
        object.__setattr__(self, "item", MappingProxyType(dict(item)))
        return self

    @field_serializer("item")
    def _dump_item(self, value: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        return dict(value)


def _check_anthropic(item: Mapping[str, Any]) -> None:
    content = item.get("content")
    if content is not None and (not isinstance(content, str) or not content):
        msg = f"`content` must be the summary text or null, got {_shown(content)}"
        raise _problem(msg, "item.content")
    changes = item.get("tool_changes")
    if changes is not None and not (
        isinstance(changes, list | tuple) and all(isinstance(c, Mapping) for c in changes)
    ):
        msg = f"`tool_changes` must be a list of objects or null, got {_shown(changes)}"
        raise _problem(msg, "item.tool_changes")


def _optional_text(item: Mapping[str, Any], key: str) -> None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        msg = f"`{key}` must be a string or null, got {_shown(value)}"
        raise _problem(msg, f"item.{key}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def readable_text(native: NativeCompaction) -> str | None:
    """The artifact's readable summary (Anthropic's `content`); None when it has none."""
    if native.provider != "anthropic":
        return None
    content = native.item.get("content")
    return content if isinstance(content, str) and content else None


def opaque_note(native: NativeCompaction) -> str:
    """What another provider is told in place of an artifact with no readable text."""
    who = "OpenAI" if native.provider == "responses" else "Anthropic"
    return (
        f"[the conversation before this point was compacted by {who} into an opaque "
        f"artifact that only {who} can read, and no earlier record of it is available]"
    )
