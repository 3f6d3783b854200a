"""Per-format message overhead, and calibration against the counts a provider reports.

The rest of token counting is in `context_graph.tokens.counting`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from context_graph.errors import ConfigurationError
from context_graph.formats.wire import FormatOverhead
from context_graph.formats.wires import WIRES

__all__ = ["FORMAT_OVERHEADS", "Calibrator", "FormatOverhead"]


#: Each provider format's overhead (read-only); each format's folder holds its own.
FORMAT_OVERHEADS: Mapping[str, FormatOverhead] = MappingProxyType(
    {name: wire.overhead for name, wire in WIRES.items()}
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
            ConfigurationError: as `resumable`.
        """
        self._factor, self._observations = self.resumable(factor, observations)

    def resumable(self, factor: float, observations: int) -> tuple[float, int]:
        """What `resume` would take, checked, without taking it.

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
        return float(factor), observations

    def apply(self, estimated: int) -> int:
        """Return `estimated` corrected by the factor, rounded up."""
        return math.ceil(estimated * self._factor)
