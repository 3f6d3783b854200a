"""Every text of a node that a model or a summarizer reads, and how a redacted one goes back.

A node sends more than its text parts: a file's path heads its content, a document may
be base64 JSON, an image's address can carry a token, a sub-agent's id labels its answer.
Signed thinking is read too, but cannot change: its signature covers it byte for byte.
Tool-call arguments are JSON and need their own care (see `_processor`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterator

from context_graph.graph.content import ContentPart, DocumentPart, ImagePart, TextPart, ThinkingPart
from context_graph.graph.native import NativeCompaction, readable_text
from context_graph.graph.nodes import FileNode, Node, SubagentResultNode, SummaryNode

__all__ = [
    "Redact",
    "field_texts",
    "native_text",
    "part_texts",
    "redact_fields",
    "redact_native",
    "redact_part",
    "signed_texts",
]

#: Redacts one text (returns it unchanged when it holds no secret).
Redact = Callable[[str], str]

_BASE64 = ";base64,"


def part_texts(part: ContentPart) -> Iterator[str]:
    """The texts of a part that the redactor may change."""
    if isinstance(part, TextPart):
        yield part.text
    elif isinstance(part, ThinkingPart) and part.signature is None:
        yield part.thinking
    elif isinstance(part, DocumentPart):
        if part.title:
            yield part.title
        if part.data is not None:
            yield from (text for text, _ in _data_views(part.data, part.media_type))
    if isinstance(part, ImagePart | DocumentPart) and part.url:
        yield _url_view(part.url)


def signed_texts(node: Node) -> Iterator[str]:
    """The text of every signed block (read by the model, never editable).

    Signed thinking, and the summary of an Anthropic compaction block with a signature
    (the provider refuses a block whose `content` differs from what it signed).
    """
    for part in node.content:
        if isinstance(part, ThinkingPart) and part.signature is not None:
            yield part.thinking
    native = _native(node)
    if native is not None and native.item.get("signature") is not None:
        text = readable_text(native)
        if text is not None:
            yield text


def native_text(node: Node) -> str | None:
    """The readable summary of an unsigned native compaction, which goes back verbatim.

    The node's own content is redacted like any text, but the artifact is what its
    provider is sent: its summary must be redacted as well, or the secret goes back.
    """
    native = _native(node)
    if native is None or native.item.get("signature") is not None:
        return None
    return readable_text(native)


def redact_native(node: Node, redact: Redact) -> NativeCompaction | None:
    """The node's native artifact with its readable summary redacted; None if unchanged."""
    native = _native(node)
    text = native_text(node)
    if native is None or text is None or (new := redact(text)) == text:
        return None
    return NativeCompaction(provider=native.provider, item={**native.item, "content": new})


def _native(node: Node) -> NativeCompaction | None:
    return node.native if isinstance(node, SummaryNode) else None


def field_texts(node: Node) -> dict[str, str]:
    """Node fields other than content that the request or a summarizer shows as text."""
    if isinstance(node, FileNode):
        return {"path": node.path}  # `[file <path>]` in the request, "Files read" in briefs
    if isinstance(node, SubagentResultNode) and node.agent_id:
        return {"agent_id": node.agent_id}  # `[sub-agent <id> result]` in the request
    return {}


def redact_fields(node: Node, redact: Redact) -> dict[str, str]:
    """The fields of `field_texts` that change once redacted, with their new values."""
    return {
        name: new for name, value in field_texts(node).items() if (new := redact(value)) != value
    }


def redact_part(part: ContentPart, redact: Redact, redact_body: Redact) -> ContentPart:
    """`part` with its secrets replaced, or `part` itself when it holds none.

    `redact_body` redacts a body (text, thinking, document data, which may be JSON);
    `redact` a short field (a title, an address).

    An image or document fetched from an address that carries a credential becomes a
    text part naming the redacted address: the provider could no longer fetch it, and
    an unfetchable image fails the whole request.
    """
    if isinstance(part, TextPart):
        return _with(part, "text", redact_body)
    if isinstance(part, ThinkingPart):
        return part if part.signature is not None else _with(part, "thinking", redact_body)
    if isinstance(part, DocumentPart):
        updates: dict[str, str] = {}
        if part.title and (title := redact(part.title)) != part.title:
            updates["title"] = title
        data = _redact_data(part.data, part.media_type, redact_body) if part.data else None
        if data is not None:
            updates["data"] = data
        part = part.model_copy(update=updates) if updates else part
    if isinstance(part, ImagePart | DocumentPart) and part.url:
        return _redact_url(part, part.url, redact)
    return part


def _with(part: TextPart | ThinkingPart, name: str, redact: Redact) -> ContentPart:
    value = getattr(part, name)
    new = redact(value)
    return part if new == value else part.model_copy(update={name: new})


def _data_views(data: str, media_type: str | None) -> list[tuple[str, bool]]:
    """What a model may read of a document's data: `(text, is_base64)`, most direct first.

    `text/plain` data goes out as text (Anthropic, OpenAI); every other document goes
    out as base64 that the provider decodes (`application/json` from Gemini's
    `inlineData`). Data that is not base64 is read as it is; base64 that decodes to
    binary (a PDF) holds no text this redactor can read.
    """
    raw = _base64_bytes(data)
    decoded = _as_text(raw)
    views: list[tuple[str, bool]] = []
    if media_type == "text/plain" or raw is None:
        views.append((data, False))
    if decoded is not None:
        views.append((decoded, True))
    return views


def _redact_data(data: str, media_type: str | None, redact: Redact) -> str | None:
    """The redacted data, or `None` when it holds no secret."""
    for text, encoded in _data_views(data, media_type):
        new = redact(text)
        if new != text:
            return _encode_text(new) if encoded else new
    return None


def _url_view(url: str) -> str:
    """The text of an address: a base64 `data:` URL's decoded payload, else the URL."""
    head, sep, payload = url.partition(",")
    if url.startswith("data:") and head.endswith(";base64") and sep:
        return _decode_text(payload) or ""
    return url


def _redact_url(part: ImagePart | DocumentPart, url: str, redact: Redact) -> ContentPart:
    head, sep, payload = url.partition(",")
    if url.startswith("data:") and (head + sep).endswith(_BASE64):
        text = _decode_text(payload)
        if text is None or (new := redact(text)) == text:
            return part
        return part.model_copy(update={"url": head + sep + _encode_text(new)})
    new = redact(url)
    if new == url:
        return part
    if url.startswith("data:"):  # inline: nothing to fetch, so redacting in place is safe
        return part.model_copy(update={"url": new})
    title = f' "{part.title}"' if isinstance(part, DocumentPart) and part.title else ""
    return TextPart(text=f"[{part.type}{title} not sent: its address held a credential: {new}]")


def _base64_bytes(data: str) -> bytes | None:
    """The bytes that strict base64 `data` encodes; `None` when it is not base64."""
    if not data:
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _as_text(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _decode_text(data: str) -> str | None:
    """The UTF-8 text that strict base64 `data` encodes; `None` for anything else."""
    return _as_text(_base64_bytes(data))


def _encode_text(text: str) -> str:
    """`text` as base64 of its UTF-8 bytes (the inverse of `_decode_text`)."""
    return base64.b64encode(text.encode("utf-8")).decode("ascii")
