"""Token counting: the counter protocol, the offline tiktoken counter, calibration.

Counts texts only and imports nothing of the graph: what a node costs is the graph's
(`context_graph.graph.node_tokens`). The offline tiktoken counter is the default
(`counting`, loading its file through `encodings`); `calibration` holds each provider
format's overhead and learns a provider's count from the usage it reports.
"""

from __future__ import annotations

from context_graph.tokens.calibration import FORMAT_OVERHEADS, Calibrator, FormatOverhead
from context_graph.tokens.counting import (
    ProviderFormat,
    SeamCounter,
    TiktokenCounter,
    TokenCounter,
    default_counter,
)

__all__ = [
    "FORMAT_OVERHEADS",
    "Calibrator",
    "FormatOverhead",
    "ProviderFormat",
    "SeamCounter",
    "TiktokenCounter",
    "TokenCounter",
    "default_counter",
]
