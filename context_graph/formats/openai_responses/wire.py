"""The OpenAI Responses API's constants: overheads, tool-call ids, price."""

from __future__ import annotations

import re

from context_graph.formats.openai_chat.wire import OPENAI_OVERHEAD, OPENAI_PRICE
from context_graph.formats.wire import IdRule, Wire

__all__ = ["WIRE"]

WIRE = Wire(
    name="responses",
    reader_name="openai_responses",
    # The same models as chat: no figure of its own was measured for Responses.
    overhead=OPENAI_OVERHEAD,
    # The Responses API refuses a `call_id` over 64 characters (`string_above_max_length`).
    id_rule=IdRule(re.compile(r"[^\x00-\x1f]+"), 64),
    price=OPENAI_PRICE,
)
