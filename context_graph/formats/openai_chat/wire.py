"""OpenAI Chat Completions' constants: overheads, tool-call ids, price, usage."""

from __future__ import annotations

import re

from context_graph.formats.openai_chat.as_chat import chat_messages, system_body
from context_graph.formats.openai_chat.usage import is_chat_usage, read_chat_usage
from context_graph.formats.wire import CachePrice, FormatOverhead, IdRule, Wire

__all__ = ["OPENAI_OVERHEAD", "OPENAI_PRICE", "WIRE"]

#: OpenAI's published counting recipe (3 per message, 1 per name, 3 to prime the reply);
#: the Responses API serves the same models and reuses these figures.
OPENAI_OVERHEAD = FormatOverhead(
    per_message=3,
    per_tool_call=8,
    per_tool_result=4,
    per_request=3,
    per_tool=8,
    per_tools=12,
)

#: One current model's input price and OpenAI's caching rule (as of 2026); both of
#: OpenAI's APIs bill alike.
OPENAI_PRICE = CachePrice("OpenAI", "GPT-5.4", 2.50, read=0.1, write=1.0, minimum=1024, step=128)

WIRE = Wire(
    name="openai",
    reader_name="openai",
    overhead=OPENAI_OVERHEAD,
    # Chat Completions caps a tool-call id at 40 characters.
    id_rule=IdRule(re.compile(r"[^\x00-\x1f]+"), 40),
    price=OPENAI_PRICE,
    read_usage=read_chat_usage,
    owns_usage=is_chat_usage,
    history_key="messages",
    system_body=system_body,
    as_chat=chat_messages,
    # Azure OpenAI serves the same chat models. A framework names no provider for the
    # Responses API: it says so by its model class or a flag, which the integration reads.
    providers=frozenset({"openai", "azure", "azure_openai"}),
)
