"""Provider-native compaction: a provider's own compaction artifact, kept as received.

Some providers compact a conversation on their side and hand the client an artifact to
send back in place of what it stands for; each such format describes its artifact in its
`wire` module (`Wire.native`: keys, rules, whether it is readable). A `NativeCompaction`
holds one byte for byte; the `Compaction` event that carries it becomes a summary node
standing for every earlier node (or every earlier node but the user's messages, for an
artifact whose provider keeps them beside it), rendered verbatim to its own format and
set aside for any other (which renders the nodes it stands for instead).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated, Any, TypeAlias

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    JsonValue,
    field_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from context_graph.formats.wire import ArtifactProblem, NativeArtifact
from context_graph.formats.wires import WIRES, FormatName, only_formats

__all__ = [
    "NATIVE_FORMATS",
    "NativeCompaction",
    "NativeProvider",
    "artifact",
    "opaque_note",
    "readable_text",
]

#: The formats whose provider makes a compaction artifact (its `Wire.native`).
NATIVE_FORMATS: tuple[str, ...] = tuple(name for name, wire in WIRES.items() if wire.native)

NativeProvider: TypeAlias = Annotated[
    FormatName, AfterValidator(only_formats(NATIVE_FORMATS, "makes no compaction artifact"))
]
"""The formats whose compaction artifacts are read: each one's format name."""


def artifact(provider: str) -> NativeArtifact:
    """The shape of `provider`'s compaction artifact (a name of `NATIVE_FORMATS`)."""
    native = WIRES[provider].native
    assert native is not None, provider  # the field's validator admits no other
    return native


def _problem(reason: str, path: str) -> PydanticCustomError:
    """A validation error naming the key inside `item` (the event's errors show the path)."""
    return PydanticCustomError("native_compaction", "{reason}", {"reason": reason, "path": path})


class NativeCompaction(BaseModel):
    """One provider's compaction artifact, exactly as the provider returned it.

    `item` is the provider's `compaction` block or input item as plain JSON; it is
    checked against the provider's shape (its wire's `NativeArtifact`: its `type`, the
    keys and value types its SDK declares) and is otherwise never read or changed.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: NativeProvider
    """Whose artifact it is: the only format it is sent back to."""
    item: Mapping[str, JsonValue]
    """The block or input item, as received."""

    @model_validator(mode="after")
    def _check_shape(self) -> NativeCompaction:
        item = self.item
        rules = artifact(self.provider)
        if item.get("type") != "compaction":
            msg = f'`type` must be "compaction", got {item.get("type")!r}'
            raise _problem(msg, "item.type")
        unknown = sorted(set(item) - rules.keys)
        if unknown:
            msg = (
                f"unknown key `{unknown[0]}` for a {self.provider} compaction; expected "
                f"{', '.join(sorted(rules.keys))}"
            )
            raise _problem(msg, f"item.{unknown[0]}")
        for key in rules.optional_text:
            _optional_text(item, key)
        try:
            rules.check(item)
        except ArtifactProblem as problem:
            raise _problem(str(problem), problem.path) from None
        object.__setattr__(self, "item", MappingProxyType(dict(item)))
        return self

    @field_serializer("item")
    def _dump_item(self, value: Mapping[str, JsonValue]) -> dict[str, JsonValue]:
        return dict(value)


def _optional_text(item: Mapping[str, Any], key: str) -> None:
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        msg = f"`{key}` must be a string or null, got {_shown(value)}"
        raise _problem(msg, f"item.{key}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def readable_text(native: NativeCompaction) -> str | None:
    """The artifact's readable summary (its format's `readable_key`); None when it has none."""
    key = artifact(native.provider).readable_key
    content = native.item.get(key) if key else None
    return content if isinstance(content, str) and content else None


def opaque_note(native: NativeCompaction) -> str:
    """What another provider is told in place of an artifact with no readable text."""
    who = artifact(native.provider).reader
    return (
        f"[the conversation before this point was compacted by {who} into an opaque "
        f"artifact that only {who} can read, and no earlier record of it is available]"
    )
