"""Secret redaction: credentials in any node's text become typed placeholders.

`redact_text(text)` is the plain function; `SecretRedactor` is the processor that
proposes a redacted copy of every node holding a secret; `strip_signed_secrets` gives a
summarizer the nodes without the signed thinking that could not be redacted.

```python
clean, findings = redact_text("AWS_ACCESS_KEY_ID=AKIA...")
proposal = await SecretRedactor().propose(nodes, ctx)
nodes_for_a_summarizer = strip_signed_secrets(view_nodes)
```

See docs/processors/redact.md for what is detected and how well (precision and recall
on the labelled set in tests/processors/data/).
"""

from __future__ import annotations

from processors.redact.redactor import SIGNED_SECRETS, SecretRedactor, strip_signed_secrets
from processors.redact.rules import SECRET_TYPES
from processors.redact.scan import (
    DEFAULT_ENTROPY_THRESHOLD,
    DEFAULT_MIN_LENGTH,
    SecretFinding,
    find_secrets,
    redact_text,
)
from processors.registry import register_processor

__all__ = [
    "DEFAULT_ENTROPY_THRESHOLD",
    "DEFAULT_MIN_LENGTH",
    "SECRET_TYPES",
    "SIGNED_SECRETS",
    "SecretFinding",
    "SecretRedactor",
    "find_secrets",
    "redact_text",
    "strip_signed_secrets",
]

register_processor(SecretRedactor)
