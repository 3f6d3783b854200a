"""Published limits of current models: context window, output cap, prompt-cache minimum.

`model_limits(name)` finds a model by its id, by a dated or versioned alias
(`claude-sonnet-5-20260630`, `gpt-5-2025-08-07`, `gemini-2.5-pro-001`), or behind a
platform prefix (`models/`, `anthropic/`, Bedrock's `us.anthropic.` and `-v1:0`,
Vertex's `@20250929`); anything else is `None`, never a guess by family. Every figure
comes from a published page, named in `ModelLimits.source` and in docs/models.md; a
model whose figures were not found is left out.

The usable window is what a request may take: the context window less a reservation for
the answer, `min(max_output, OUTPUT_RESERVE_CAP)` (opencode's rule: the window holds the
prompt and the answer, and most agents ask for far less than the cap). A model the table
does not know gets `UNKNOWN_MODEL_BUDGET` and one `UnknownModelWarning` per process.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from context_graph.vendors import ANTHROPIC, GOOGLE, OPENAI, Vendor

__all__ = [
    "MODEL_LIMITS",
    "OUTPUT_RESERVE_CAP",
    "UNKNOWN_MODEL_BUDGET",
    "ModelLimits",
    "NoBudgetWarning",
    "UnknownModelWarning",
    "model_budget",
    "model_limits",
    "warn_no_budget",
]

#: The most tokens set aside for the answer (opencode reserves min(20,000, max output)).
OUTPUT_RESERVE_CAP: Final = 20_000

#: The budget of a model the table does not know: a 128k window less the reservation.
UNKNOWN_MODEL_BUDGET: Final = 128_000 - OUTPUT_RESERVE_CAP


class UnknownModelWarning(UserWarning):
    """A model the limits table does not know: the request gets `UNKNOWN_MODEL_BUDGET`."""


class NoBudgetWarning(UserWarning):
    """A render with neither a budget nor a model: nothing is cut to fit."""


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """One model's published limits."""

    model: str
    """The model's id, as the provider's API takes it."""
    provider: Vendor
    """Who serves it."""
    context_window: int
    """Tokens of prompt and answer together."""
    max_output: int
    """The most tokens one answer may have."""
    cache_min_tokens: int | None
    """The shortest prefix the provider caches (None: not published, marks are kept)."""
    source: str
    """The page the figures come from."""

    @property
    def output_reserve(self) -> int:
        """Tokens kept free for the answer: `min(max_output, OUTPUT_RESERVE_CAP)`."""
        return min(self.max_output, OUTPUT_RESERVE_CAP)

    @property
    def usable(self) -> int:
        """The budget a request gets: the window less `output_reserve`."""
        return self.context_window - self.output_reserve


_CLAUDE = "https://platform.claude.com/docs/en/models/{}/overview"
_CLAUDE_TABLE = "https://platform.claude.com/docs/en/models/haiku-5-5/overview"
_CLAUDE_OLD = "https://platform.claude.com/docs/zh/about-claude/models/overview"
_GEMINI = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/models/gemini/{}"
_GPT5 = "https://vercel.com/ai-gateway/models/gpt-5-fast.md (links platform.openai.com/docs/models)"


def _claude(model: str, window: int, output: int, cache: int | None, page: str) -> ModelLimits:
    return ModelLimits(model, ANTHROPIC, window, output, cache, page)


#: Every model the table knows, by id. Cache minimums of Anthropic models: the prompt
#: caching page as quoted in anthropics/anthropic-sdk-python#1194 (4.x models) and
#: dev.to/creeta "Claude's prompt cache fails silently below 1,024 tokens" (5.x models).
MODEL_LIMITS: Final[Mapping[str, ModelLimits]] = MappingProxyType(
    {
        limits.model: limits
        for limits in (
            # Current lineup (the Haiku 5.5 page's comparison table lists all three).
            _claude("claude-opus-5-5", 1_000_000, 128_000, None, _CLAUDE_TABLE),
            _claude("claude-sonnet-5-5", 1_000_000, 128_000, None, _CLAUDE_TABLE),
            _claude("claude-haiku-5-5", 1_000_000, 128_000, None, _CLAUDE.format("haiku-5-5")),
            # Still served.
            _claude("claude-opus-5", 1_000_000, 128_000, 512, _CLAUDE.format("opus-5")),
            _claude("claude-sonnet-5", 1_000_000, 128_000, 1_024, _CLAUDE.format("sonnet-5")),
            _claude("claude-haiku-4-5", 200_000, 64_000, 4_096, _CLAUDE_OLD),
            ModelLimits("gpt-5", OPENAI, 400_000, 128_000, None, _GPT5),
            ModelLimits(
                "gemini-2.5-pro", GOOGLE, 1_048_576, 65_535, None, _GEMINI.format("2-5-pro")
            ),
            ModelLimits(
                "gemini-3-flash-preview",
                GOOGLE,
                1_048_576,
                65_536,
                None,
                _GEMINI.format("3-flash"),
            ),
        )
    }
)

# Platform spellings around an id, taken off one at a time.
_PREFIX = re.compile(
    r"^(?:models/|publishers/google/models/|anthropic/|openai/|google/|"
    r"(?:us|eu|apac|global)\.anthropic\.|anthropic\.)"
)
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_VERTEX_DATE = re.compile(r"@\d{8}$")
# Snapshot suffixes: Anthropic's -YYYYMMDD, OpenAI's -YYYY-MM-DD, Gemini's -NNN, -latest.
_SNAPSHOT = re.compile(r"(?:-\d{8}|-\d{4}-\d{2}-\d{2}|-\d{3}|-latest)$")


def model_limits(name: object) -> ModelLimits | None:
    """The limits of the model `name` names, or None for a model the table does not know.

    Matches the exact id, then the id without a platform prefix (`models/`,
    `anthropic/`, Bedrock's `us.anthropic.`), a Bedrock version (`-v1:0`), a Vertex
    date (`@20250929`) and a snapshot suffix (`-20250929`, `-2025-08-07`, `-001`,
    `-latest`). A different model of the same family (`gpt-5-mini` for `gpt-5`) is
    not matched.
    """
    if not isinstance(name, str):
        return None
    key = name.strip().lower()
    found = MODEL_LIMITS.get(key)
    if found is not None:
        return found
    while (stripped := _PREFIX.sub("", key)) != key:
        key = stripped
    key = _VERTEX_DATE.sub("", _BEDROCK_VERSION.sub("", key))
    return MODEL_LIMITS.get(key) or MODEL_LIMITS.get(_SNAPSHOT.sub("", key))


_warned: set[str] = set()


def model_budget(name: str) -> int:
    """The usable window of `name`; `UNKNOWN_MODEL_BUDGET` (and one warning) if unknown.

    Warns `UnknownModelWarning` the first time this process meets a model name.
    """
    limits = model_limits(name)
    if limits is not None:
        return limits.usable
    if name not in _warned:
        _warned.add(name)
        msg = (
            f"model {name!r} is not in context_graph.models.MODEL_LIMITS; its requests get "
            f"a budget of {UNKNOWN_MODEL_BUDGET:,} tokens. Pass budget= to set it."
        )
        warnings.warn(msg, UnknownModelWarning, stacklevel=3)
    return UNKNOWN_MODEL_BUDGET


def warn_no_budget(where: str) -> None:
    """Warn once per process that a render has neither a budget nor a model."""
    if "" in _warned:
        return
    _warned.add("")
    msg = (
        f"{where}: no budget and no model, so no request is ever cut to fit and only "
        "triggers that need no budget compact; pass budget= or model="
    )
    warnings.warn(msg, NoBudgetWarning, stacklevel=4)
