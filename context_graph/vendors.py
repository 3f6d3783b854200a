"""Vendors: who serves a model and publishes the SDK package that calls it.

A vendor is not a wire format, though two are spelled alike: OpenAI serves two formats
(`openai` chat and `responses`), Google serves `gemini`, and `anthropic` is at once
Anthropic's name, its SDK package and its Messages format. Code that means the company or
its package names it here (typed `Vendor`); code that means a request's shape names the
format (`context_graph.formats.wires`). `python -m benchmarks.house` tells the two apart
by that type.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = ["ANTHROPIC", "GOOGLE", "OPENAI", "Vendor"]

#: A vendor's name; its SDK's top-level package has the same name (`google` for
#: google-genai's `google.genai`).
Vendor: TypeAlias = Literal["anthropic", "openai", "google"]

#: Anthropic, and its `anthropic` package.
ANTHROPIC: Final[Vendor] = "anthropic"
#: OpenAI, and its `openai` package.
OPENAI: Final[Vendor] = "openai"
#: Google, and google-genai's `google` package.
GOOGLE: Final[Vendor] = "google"
