"""Model-backed summarizers: OpenAI-compatible endpoints and Anthropic.

The SDKs are optional extras (`pip install '.[openai]'` or `'.[anthropic]'` in the checkout) and
are imported only when an adapter is constructed.
"""

from __future__ import annotations

from processors.summarize.adapters.anthropic_client import AnthropicSummarizer
from processors.summarize.adapters.openai_client import OpenAISummarizer
from processors.summarize.adapters.prompt import SYSTEM_PROMPT, build_prompt, render_transcript

__all__ = [
    "SYSTEM_PROMPT",
    "AnthropicSummarizer",
    "OpenAISummarizer",
    "build_prompt",
    "render_transcript",
]
