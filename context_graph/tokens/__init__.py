"""Token counting: the counter protocol, the tiktoken counter, the node cache, calibration.

The offline tiktoken counter is the default; calibration learns a provider's count from
the usage it reports.
"""

from __future__ import annotations

from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import (
    NodeTokenCache,
    ProviderFormat,
    TiktokenCounter,
    TokenCounter,
    default_counter,
)

__all__ = [
    "Calibrator",
    "NodeTokenCache",
    "ProviderFormat",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
]
