"""Content parts: what a message carries, as nodes and events hold it.

Text, images, documents, thinking blocks and Responses reasoning items, discriminated by
`type`, and the opaque signature a provider puts over a piece of its own output. Events
(`context_graph.graph.events`) and nodes (`context_graph.graph.nodes`) both carry them, so
they live apart from either.
"""

from __future__ import annotations

from typing import Annotated, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from context_graph.formats.wires import WIRES, FormatName, only_formats

__all__ = [
    "THINKING_SIGNERS",
    "ContentPart",
    "DocumentPart",
    "ImagePart",
    "ProviderSignature",
    "ReasoningPart",
    "RedactedThinkingPart",
    "TextPart",
    "ThinkingPart",
    "ThinkingSigner",
]

_FROZEN = ConfigDict(frozen=True, extra="forbid")

#: The formats whose provider signs its thinking (`Wire.signs_thinking`).
THINKING_SIGNERS: tuple[str, ...] = tuple(
    name for name, wire in WIRES.items() if wire.signs_thinking
)

ThinkingSigner: TypeAlias = Annotated[
    FormatName, AfterValidator(only_formats(THINKING_SIGNERS, "signs no thinking"))
]
"""A format whose provider signs its thinking: its name."""


class TextPart(BaseModel):
    """Plain text."""

    model_config = _FROZEN
    type: Literal["text"] = "text"
    text: str
    """The text itself."""


class ImagePart(BaseModel):
    """An image, inline (base64) or by URL."""

    model_config = _FROZEN
    type: Literal["image"] = "image"
    media_type: str | None = None
    """MIME type such as `image/png`, when known."""
    data: str | None = None
    """Base64 data of an inline image."""
    url: str | None = None
    """Address of an image given by URL."""


class DocumentPart(BaseModel):
    """A document block (PDF or plain text) as Anthropic accepts it."""

    model_config = _FROZEN
    type: Literal["document"] = "document"
    media_type: str | None = None
    """MIME type such as `application/pdf`."""
    data: str | None = None
    """Base64 or plain-text data of the document."""
    url: str | None = None
    """Address of a document given by URL."""
    title: str | None = None
    """The document's title, if given."""


class ThinkingPart(BaseModel):
    """A model's visible reasoning; sent back to the provider byte for byte."""

    model_config = _FROZEN
    type: Literal["thinking"] = "thinking"
    thinking: str
    """The reasoning text."""
    signature: str | None = None
    """The provider's signature over the block; required to send it back."""
    provider: ThinkingSigner | None = None
    """Who signed it, when known: a signature is only valid for its own provider.
    `None` is read as Anthropic when a signature is present (the common case)."""


class RedactedThinkingPart(BaseModel):
    """Encrypted reasoning; opaque, sent back exactly as received."""

    model_config = _FROZEN
    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str
    """The opaque payload."""


class ReasoningPart(BaseModel):
    """An OpenAI Responses `reasoning` item: the model's opaque reasoning, sent back as received."""

    model_config = _FROZEN
    type: Literal["reasoning"] = "reasoning"
    id: str | None = None
    """The item's id (`rs_...`), sent back with it."""
    summary: tuple[str, ...] = ()
    """The readable summary texts, in order (may be empty)."""
    encrypted_content: str | None = None
    """The opaque payload, sent back byte for byte and never read."""


class ProviderSignature(BaseModel):
    """A provider's opaque signature over a piece of its own output (a tool call).

    Gemini signs function calls (`thoughtSignature`) and refuses a later request whose
    calls lack it; the signature is sent back, unchanged, only to the provider that made it.
    """

    model_config = _FROZEN
    provider: str = Field(min_length=1)
    """Who signed it, as a format name: `gemini`."""
    value: str
    """The signature exactly as received (Gemini: base64 text)."""


ContentPart: TypeAlias = Annotated[
    TextPart | ImagePart | DocumentPart | ThinkingPart | RedactedThinkingPart | ReasoningPart,
    Field(discriminator="type"),
]
