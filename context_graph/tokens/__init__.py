"""Token counting: the counter protocol, the offline tiktoken counter, calibration.

Counts texts only and imports nothing of the graph: what a node costs is the graph's
(`context_graph.graph.node_tokens`). The offline tiktoken counter is the default
(`counting`, loading its file through `encodings`); `calibration` holds each provider
format's overhead and learns a provider's count from the usage it reports; `usage`
reads what a provider says a call used (prompt, completion and cached tokens).
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
from context_graph.tokens.usage import Usage, UsageShape, UsageTotals, read_usage

__all__ = [
    "FORMAT_OVERHEADS",
    "Calibrator",
    "FormatOverhead",
    "ProviderFormat",
    "SeamCounter",
    "TiktokenCounter",
    "TokenCounter",
    "Usage",
    "UsageShape",
    "UsageTotals",
    "default_counter",
    "read_usage",
]
