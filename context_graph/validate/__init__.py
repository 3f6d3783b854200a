"""Request validation: each provider's rules on a request body, checked offline.

```python
from context_graph.validate import validate

problems = validate(result.payload, "anthropic")  # [] when the body is valid
```

Each format is a `ProviderValidator` (in the format's folder under
`context_graph.formats`; `PROVIDER_VALIDATORS` maps the format names to them). The tests
also check bodies against the SDKs' own request types (`benchmarks.sdk_types`, outside
the installed package).
"""

from __future__ import annotations

from typing import Any

from context_graph.validate.common import Collector
from context_graph.validate.provider import ProviderValidator, ValidationFormat
from context_graph.validate.request import (
    RULES,
    Violation,
    detect_request_format,
    request_format_clues,
    validate,
)


def __getattr__(name: str) -> Any:
    """`PROVIDER_VALIDATORS`, read from the registry when first asked.

    Not imported at the top: see `context_graph.formats.registry`.
    """
    if name == "PROVIDER_VALIDATORS":
        from context_graph.formats.registry import PROVIDER_VALIDATORS

        return PROVIDER_VALIDATORS
    msg = f"module {__name__!r} has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "PROVIDER_VALIDATORS",
    "RULES",
    "Collector",
    "ProviderValidator",
    "ValidationFormat",
    "Violation",
    "detect_request_format",
    "request_format_clues",
    "validate",
]
