"""Every provider format the validator checks, each with its `ProviderValidator`.

A new format is a module with its `ProviderValidator` beside the others, and one entry
here (and its name in `ValidationFormat`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from context_graph.validate.anthropic_messages import AnthropicMessagesValidator
from context_graph.validate.gemini_contents import GeminiContentsValidator
from context_graph.validate.openai_chat import OpenAIChatValidator
from context_graph.validate.openai_responses import OpenAIResponsesValidator
from context_graph.validate.provider import ProviderValidator, ValidationFormat

__all__ = ["PROVIDER_VALIDATORS"]

#: The validator of each format, read-only.
PROVIDER_VALIDATORS: Mapping[ValidationFormat, ProviderValidator] = MappingProxyType(
    {
        "openai": OpenAIChatValidator(),
        "anthropic": AnthropicMessagesValidator(),
        "gemini": GeminiContentsValidator(),
        "responses": OpenAIResponsesValidator(),
    }
)
