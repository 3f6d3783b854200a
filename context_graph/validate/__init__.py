"""Request validation: each provider's rules on a request body, checked offline.

One module per wire format, and `sdk_types` checks a body against the SDKs' own request
types.
"""

from __future__ import annotations

from context_graph.validate.request import (
    RULES,
    ValidationFormat,
    Violation,
    detect_request_format,
    request_format_clues,
    validate,
)

__all__ = [
    "RULES",
    "ValidationFormat",
    "Violation",
    "detect_request_format",
    "request_format_clues",
    "validate",
]
