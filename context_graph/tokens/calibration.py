"""Per-format message overhead, and calibration against the counts a provider reports.

The rest of token counting is in `context_graph.tokens.counting`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from context_graph.errors import ConfigurationError

__all__ = ["FORMAT_OVERHEADS", "Calibrator", "FormatOverhead"]


@dataclass(frozen=True, slots=True)
class FormatOverhead:
    """Tokens a provider format adds around the content.

    The OpenAI figures follow OpenAI's published counting recipe (3 per message, 1 per
    name, 3 to prime the reply); the Responses API serves the same models and gets the
    same figures per item. Anthropic and Gemini do not publish theirs; the figures
    here are conservative estimates that `Calibrator` corrects from reported usage.
    """

    per_message: int
    """Added for every message (role markers, separators)."""
    per_tool_call: int
    """Added for every tool call (id, type and name wrappers)."""
    per_tool_result: int
    """Added for every tool result (id wrapper)."""
    per_request: int
    """Added once per request (reply priming)."""
    per_tool: int = 0
    """Added for every tool definition the request carries (its wrapper)."""
    per_tools: int = 0
    """Added once when the request carries tool definitions (the provider's tool-use
    preamble: Anthropic documents a few hundred tokens of system prompt for it)."""


# OpenAI's two APIs are counted alike: no figure of its own was measured for Responses.
_OPENAI = FormatOverhead(
    per_message=3,
    per_tool_call=8,
    per_tool_result=4,
    per_request=3,
    per_tool=8,
    per_tools=12,
)

#: Each provider format's overhead (read-only).
FORMAT_OVERHEADS: Mapping[str, FormatOverhead] = MappingProxyType(
    {
        "openai": _OPENAI,
        "anthropic": FormatOverhead(
            per_message=4,
            per_tool_call=12,
            per_tool_result=8,
            per_request=4,
            per_tool=8,
            per_tools=346,
        ),
        "gemini": FormatOverhead(
            per_message=4,
            per_tool_call=10,
            per_tool_result=8,
            per_request=4,
            per_tool=8,
            per_tools=8,
        ),
        "responses": _OPENAI,
    }
)


class Calibrator:
    """Learns a bounded, smoothed correction factor from provider-reported prompt tokens.

    Providers whose tokenizers are not public (Anthropic, Gemini) count differently from
    our local counter. After each call, feed the local estimate and the provider's
    reported prompt tokens; `apply` then scales estimates by an exponential moving
    average of the ratio, clamped to `[lower, upper]` so that one odd report cannot
    swing the budget.
    """

    def __init__(self, *, smoothing: float = 0.3, lower: float = 0.5, upper: float = 2.0) -> None:
        if not 0.0 < smoothing <= 1.0:
            msg = f"smoothing must be in (0, 1], got {smoothing}"
            raise ConfigurationError(msg)
        if not 0.0 < lower <= 1.0 <= upper:
            msg = f"bounds must satisfy 0 < lower <= 1 <= upper, got {lower}, {upper}"
            raise ConfigurationError(msg)
        self._smoothing = smoothing
        self._lower = lower
        self._upper = upper
        self._factor = 1.0
        self._observations = 0

    @property
    def factor(self) -> float:
        """The current correction factor (1.0 before any observation)."""
        return self._factor

    @property
    def observations(self) -> int:
        """How many reports were taken into account."""
        return self._observations

    def observe(self, estimated: int, reported: int) -> float:
        """Take one report into account and return the new factor.

        Reports with a non-positive estimate or count carry no information and are
        ignored.
        """
        if estimated <= 0 or reported <= 0:
            return self._factor
        ratio = min(max(reported / estimated, self._lower), self._upper)
        if self._observations == 0:
            blended = ratio
        else:
            blended = (1 - self._smoothing) * self._factor + self._smoothing * ratio
        self._factor = min(max(blended, self._lower), self._upper)
        self._observations += 1
        return self._factor

    def resume(self, factor: float, observations: int) -> None:
        """Continue from a factor learned earlier (a restored session's).

        Raises:
            ConfigurationError: `factor` is outside this calibrator's bounds, or
                `observations` is not an int >= 0.
        """
        if isinstance(factor, bool) or not isinstance(factor, int | float):
            msg = f"Calibrator.resume: factor must be a number, got {factor!r}"
            raise ConfigurationError(msg)
        if not self._lower <= factor <= self._upper:
            msg = f"Calibrator.resume: factor {factor} is outside [{self._lower}, {self._upper}]"
            raise ConfigurationError(msg)
        if isinstance(observations, bool) or not isinstance(observations, int) or observations < 0:
            msg = f"Calibrator.resume: observations must be an int >= 0, got {observations!r}"
            raise ConfigurationError(msg)
        self._factor = float(factor)
        self._observations = observations

    def apply(self, estimated: int) -> int:
        """Return `estimated` corrected by the factor, rounded up."""
        return math.ceil(estimated * self._factor)
