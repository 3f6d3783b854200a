"""Gemini `generateContent`'s constants: overheads, tool-call ids and shape, price, usage."""

from __future__ import annotations

import re

from context_graph.formats.gemini.as_chat import chat_messages, system_body
from context_graph.formats.gemini.calls import GeminiCalls
from context_graph.formats.gemini.usage import is_gemini_usage, read_gemini_usage
from context_graph.formats.wire import CachePrice, FormatOverhead, IdRule, Wire

__all__ = ["WIRE"]

WIRE = Wire(
    name="gemini",
    reader_name="gemini",
    # Not published: conservative estimates the calibrator corrects.
    overhead=FormatOverhead(
        per_message=4,
        per_tool_call=10,
        per_tool_result=8,
        per_request=4,
        per_tool=8,
        per_tools=8,
    ),
    id_rule=IdRule(re.compile(r"[^\x00-\x1f]+"), 64),
    price=CachePrice("Gemini", "Gemini 3 Pro", 2.00, read=0.1, write=1.0, minimum=4096),
    read_usage=read_gemini_usage,
    owns_usage=is_gemini_usage,
    history_key="contents",
    system_body=system_body,
    as_chat=chat_messages,
    call_shape=GeminiCalls(),
    signs_thinking=True,
    # The Gemini API's and Vertex AI's names, as LangChain and pydantic-ai spell them.
    providers=frozenset(
        {
            "google",
            "google_genai",
            "google_vertexai",
            "google-gla",
            "google-vertex",
            "gemini",
            "vertexai",
        }
    ),
)
