"""The OpenAI Responses API's constants: overheads, tool-call ids, price, usage."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from context_graph.formats.openai_chat.wire import OPENAI_OVERHEAD, OPENAI_PRICE
from context_graph.formats.openai_responses.as_chat import chat_messages, system_body
from context_graph.formats.openai_responses.usage import (
    is_responses_usage,
    read_responses_usage,
)
from context_graph.formats.wire import ArtifactProblem, IdRule, NativeArtifact, Wire

__all__ = ["COMPACTION", "WIRE"]


def _check_compaction(item: Mapping[str, Any]) -> None:
    """A `compaction` item carries its `encrypted_content`."""
    encrypted = item.get("encrypted_content")
    if not isinstance(encrypted, str) or not encrypted:
        shown = repr(encrypted)
        shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
        msg = (
            "a Responses compaction item needs its `encrypted_content` as a "
            f"non-empty string, got {shown}"
        )
        raise ArtifactProblem(msg, "item.encrypted_content")


#: A `compaction` input item whose `encrypted_content` only OpenAI can read.
COMPACTION = NativeArtifact(
    keys=frozenset({"type", "id", "encrypted_content", "created_by"}),
    optional_text=("id", "created_by"),
    check=_check_compaction,
    readable_key=None,
    reader="OpenAI",
    noun="compaction item",
    # The API keeps the user's messages beside the item.
    keeps_user_turns=True,
)

WIRE = Wire(
    name="responses",
    reader_name="openai_responses",
    # The same models as chat: no figure of its own was measured for Responses.
    overhead=OPENAI_OVERHEAD,
    # The Responses API refuses a `call_id` over 64 characters (`string_above_max_length`).
    id_rule=IdRule(re.compile(r"[^\x00-\x1f]+"), 64),
    price=OPENAI_PRICE,
    read_usage=read_responses_usage,
    owns_usage=is_responses_usage,
    history_key="input",
    system_body=system_body,
    as_chat=chat_messages,
    native=COMPACTION,
)
