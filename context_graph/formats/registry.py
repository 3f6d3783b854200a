"""The registry: every wire format's renderer, validator and reader, by name.

The generic machinery asks here by format name and never imports a format's folder
itself: `Renderer(format=...)` takes `PROVIDER_RENDERERS[format]`, `validate` takes
`PROVIDER_VALIDATORS[format]`, `load_sessions(format=...)` takes a module of `READERS`,
`context_graph.graph.sdk_replies` asks each of `REPLY_READERS` whose an SDK reply is.
Capabilities are asked here too, never by comparing a format's name: which formats take
prompt-cache marks is `CACHE_MARKING_FORMATS`. The constants (the default format,
overheads, id rules, prices) are in `context_graph.formats.wires`.

The generic packages import this module inside their functions, not at their top: a
format's modules import the generic packages' building blocks (`render.provider`,
`validate.common`, `importers._base`), so a format module imported first would
otherwise come back to itself half-built through this registry.

A new format is a folder holding `wire`, `render`, `validate`, `read` and `replies`, and one entry
in each table here and in `wires`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType, ModuleType

import context_graph.formats.anthropic.read as anthropic_read
import context_graph.formats.gemini.read as gemini_read
import context_graph.formats.openai_chat.read as openai_chat_read
import context_graph.formats.openai_responses.read as openai_responses_read
from context_graph.formats.anthropic.render import AnthropicMessagesRenderer
from context_graph.formats.anthropic.replies import AnthropicReplies
from context_graph.formats.anthropic.validate import AnthropicMessagesValidator
from context_graph.formats.gemini.render import GeminiContentsRenderer
from context_graph.formats.gemini.replies import GeminiReplies
from context_graph.formats.gemini.validate import GeminiContentsValidator
from context_graph.formats.openai_chat.render import OpenAIChatRenderer
from context_graph.formats.openai_chat.replies import OpenAIChatReplies
from context_graph.formats.openai_chat.validate import OpenAIChatValidator
from context_graph.formats.openai_responses.render import OpenAIResponsesRenderer
from context_graph.formats.openai_responses.replies import OpenAIResponsesReplies
from context_graph.formats.openai_responses.validate import OpenAIResponsesValidator
from context_graph.formats.wires import (
    ANTHROPIC_FORMAT,
    DEFAULT_FORMAT,
    FORMAT_NAMES,
    GEMINI_FORMAT,
    OPENAI_FORMAT,
    RESPONSES_FORMAT,
    WIRES,
    FormatName,
)
from context_graph.graph.reply_reader import ReplyReader
from context_graph.render.provider import ProviderRenderer
from context_graph.validate.provider import ProviderValidator

__all__ = [
    "CACHE_MARKING_FORMATS",
    "DEFAULT_FORMAT",
    "FORMAT_NAMES",
    "PROVIDER_RENDERERS",
    "PROVIDER_VALIDATORS",
    "READERS",
    "REPLY_READERS",
    "WIRES",
    "FormatName",
]

#: The renderer of each format, read-only, in the order of `FORMAT_NAMES`.
PROVIDER_RENDERERS: Mapping[FormatName, ProviderRenderer] = MappingProxyType(
    {
        OPENAI_FORMAT: OpenAIChatRenderer(),
        ANTHROPIC_FORMAT: AnthropicMessagesRenderer(),
        GEMINI_FORMAT: GeminiContentsRenderer(),
        RESPONSES_FORMAT: OpenAIResponsesRenderer(),
    }
)

#: The formats whose renderer can mark the prompt cache (`ProviderRenderer.cache_marking`),
#: the only ones `Renderer(cache_breakpoints=True)` and a manager's policy accept it for.
CACHE_MARKING_FORMATS: tuple[FormatName, ...] = tuple(
    name for name, renderer in PROVIDER_RENDERERS.items() if renderer.cache_marking is not None
)

#: The validator of each format, read-only, in the order of `FORMAT_NAMES`.
PROVIDER_VALIDATORS: Mapping[FormatName, ProviderValidator] = MappingProxyType(
    {
        OPENAI_FORMAT: OpenAIChatValidator(),
        ANTHROPIC_FORMAT: AnthropicMessagesValidator(),
        GEMINI_FORMAT: GeminiContentsValidator(),
        RESPONSES_FORMAT: OpenAIResponsesValidator(),
    }
)

#: The reader of each format (a module with `sniff` and `to_sessions`, as every importer
#: has), keyed by the format's name among the importers (`Wire.reader_name`).
READERS: Mapping[str, ModuleType] = MappingProxyType(
    {
        WIRES[ANTHROPIC_FORMAT].reader_name: anthropic_read,
        WIRES[GEMINI_FORMAT].reader_name: gemini_read,
        WIRES[RESPONSES_FORMAT].reader_name: openai_responses_read,
        WIRES[OPENAI_FORMAT].reader_name: openai_chat_read,
    }
)

#: The reader of each format's SDK replies, read-only, in the order of `FORMAT_NAMES`
#: (which breaks a tie between two equally sure claims on one reply).
REPLY_READERS: Mapping[FormatName, ReplyReader] = MappingProxyType(
    {
        OPENAI_FORMAT: OpenAIChatReplies(),
        ANTHROPIC_FORMAT: AnthropicReplies(),
        GEMINI_FORMAT: GeminiReplies(),
        RESPONSES_FORMAT: OpenAIResponsesReplies(),
    }
)
