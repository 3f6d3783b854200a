"""pydantic-ai `ThinkingPart`s as the engine's reasoning parts, and back.

Each provider keeps its reasoning its own way in a `ThinkingPart`: Anthropic a signed
thinking block (its redacted form with `id="redacted_thinking"` and the data as the
signature), OpenAI Responses one part per summary text of an `rs_` item (the encrypted
content as the signature), Google a thought (its signature on the next part's provider
details). Read as the engine's part of that provider, a signature only goes back to the
provider that made it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from context_graph import vendors
from context_graph.formats.wires import GEMINI_FORMAT, provider_format
from context_graph.graph.content import THINKING_SIGNERS
from orchestrator.integrations.extras import missing_extra
from orchestrator.integrations.rendered import reasoning_key

try:
    from pydantic_ai.messages import ModelResponsePart, ThinkingPart
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "pydantic-ai", "pydantic-ai", "pydantic-ai-slim") from exc

__all__ = ["add_thinking", "part_key", "rendered_keys", "thinking_parts"]


def add_thinking(part: ThinkingPart, content: list[dict[str, Any]]) -> None:
    """Add the engine part of a `ThinkingPart` to `content` (see the module)."""
    name = (part.provider_name or "").lower()
    if name == vendors.ANTHROPIC and part.id == "redacted_thinking" and part.signature:
        content.append({"type": "redacted_thinking", "data": part.signature})
        return
    if name == vendors.OPENAI and part.id and part.id.startswith("rs_"):
        last = content[-1] if content else None
        if last is not None and last["type"] == "reasoning" and last["id"] == part.id:
            last["summary"].append(part.content)  # one item, a part per summary text
            if part.signature:
                last["encrypted_content"] = part.signature
            return
        reasoning: dict[str, Any] = {"type": "reasoning", "id": part.id, "summary": [part.content]}
        if part.signature:
            reasoning["encrypted_content"] = part.signature
        content.append(reasoning)
        return
    # Every Google provider (`google-gla`, `google-vertex`, `google-cloud`, ...) signs as Gemini.
    signer = GEMINI_FORMAT if name.startswith(vendors.GOOGLE) else provider_format(name)
    provider = signer if signer in THINKING_SIGNERS else None
    content.append(
        {
            "type": "thinking",
            "thinking": part.content,
            "signature": part.signature,
            "provider": provider,
        }
    )


def rendered_keys(parts: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """The reasoning keys of engine parts, in order (parts without one left out)."""
    return [key for part in parts if (key := reasoning_key(part)) is not None]


def part_key(part: ModelResponsePart) -> tuple[str, ...] | None:
    """The reasoning key of a `ThinkingPart` (`None` for any other part)."""
    if not isinstance(part, ThinkingPart):
        return None
    content: list[dict[str, Any]] = []
    add_thinking(part, content)
    return reasoning_key(content[0]) or ("unread",)


def thinking_parts(
    reasoning: Sequence[Mapping[str, Any]], provider_name: str | None
) -> list[ModelResponsePart]:
    """The `ThinkingPart`s of the reasoning a render sent, for its provider to take back."""
    parts: list[ModelResponsePart] = []
    for part in reasoning:
        kind = part["type"]
        if kind == "thinking":
            parts.append(
                ThinkingPart(
                    content=part["thinking"],
                    signature=part["signature"],
                    provider_name=provider_name,
                )
            )
        elif kind == "redacted_thinking":
            parts.append(
                ThinkingPart(
                    content="",
                    id="redacted_thinking",
                    signature=part["data"],
                    provider_name=provider_name,
                )
            )
        elif kind == "reasoning":
            texts = part["summary"] or [""]
            for k, summary in enumerate(texts):
                last = k == len(texts) - 1
                signature = part.get("encrypted_content") if last else None
                parts.append(
                    ThinkingPart(
                        content=summary,
                        id=part["id"],
                        signature=signature,
                        provider_name=provider_name,
                    )
                )
    return parts
