"""Anthropic Messages' constants: overheads, tool-call ids, price."""

from __future__ import annotations

import re

from context_graph.formats.wire import CachePrice, FormatOverhead, IdRule, Wire

__all__ = ["WIRE"]

WIRE = Wire(
    name="anthropic",
    reader_name="anthropic",
    # Not published: conservative estimates; `per_tools` is the tool-use system prompt
    # Anthropic documents (a few hundred tokens).
    overhead=FormatOverhead(
        per_message=4,
        per_tool_call=12,
        per_tool_result=8,
        per_request=4,
        per_tool=8,
        per_tools=346,
    ),
    # Anthropic accepts `^[a-zA-Z0-9_-]+$` and rejects an id used twice in one request.
    id_rule=IdRule(re.compile(r"[a-zA-Z0-9_-]+"), 64),
    price=CachePrice("Anthropic", "Claude Sonnet 4.5", 3.00, read=0.1, write=1.25, minimum=1024),
)
