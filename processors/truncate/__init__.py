"""Truncation: head + tail of long tool outputs with an explicit omission marker.

```python
proposal = await ToolOutputTruncator(max_tokens=2_000, policies={"pytest": "errors_first"}).propose(
    nodes, ctx
)
```

See docs/processors/truncate.md.
"""

from __future__ import annotations

from processors.truncate.fit import ERROR_PATTERN, Policy
from processors.truncate.truncator import (
    POLICIES,
    OutputFormat,
    ToolOutputTruncator,
    Truncation,
    truncate_text,
)

__all__ = [
    "ERROR_PATTERN",
    "POLICIES",
    "OutputFormat",
    "Policy",
    "ToolOutputTruncator",
    "Truncation",
    "truncate_text",
]
