"""Every provider format the renderer speaks, each with its `ProviderRenderer`.

A new format is a module with its `ProviderRenderer` beside the others, and one entry
here (and its name in `ProviderFormat`, with its overheads).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from context_graph.render.anthropic_messages import AnthropicMessagesRenderer
from context_graph.render.gemini_contents import GeminiContentsRenderer
from context_graph.render.openai_chat import OpenAIChatRenderer
from context_graph.render.openai_responses import OpenAIResponsesRenderer
from context_graph.render.provider import ProviderRenderer
from context_graph.tokens.counting import ProviderFormat

__all__ = ["FORMATS", "PROVIDER_RENDERERS"]

#: The renderer of each format, read-only; the order is the order of `FORMATS`.
PROVIDER_RENDERERS: Mapping[ProviderFormat, ProviderRenderer] = MappingProxyType(
    {
        "openai": OpenAIChatRenderer(),
        "anthropic": AnthropicMessagesRenderer(),
        "gemini": GeminiContentsRenderer(),
        "responses": OpenAIResponsesRenderer(),
    }
)

#: The formats `Renderer` accepts.
FORMATS: tuple[ProviderFormat, ...] = tuple(PROVIDER_RENDERERS)
