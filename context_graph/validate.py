"""Check a rendered request body against a provider's documented rules.

`validate` lists every rule a body breaks, not just the first, so one run shows all that
a renderer or a compaction got wrong. It never raises on the payload: anything that is
not JSON of the right shape becomes a violation.

Example:
    problems = validate({"messages": [{"role": "tool", "content": "4"}]}, "openai")
    # [Violation(rule='tool_call_id_invalid', index=0, path='messages[0].tool_call_id', ...)]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

from context_graph._validate_anthropic import ANTHROPIC_RULES, validate_anthropic
from context_graph._validate_common import COMMON_RULES, Collector, Violation
from context_graph._validate_gemini import GEMINI_RULES, validate_gemini
from context_graph._validate_openai import OPENAI_RULES, validate_openai
from context_graph.errors import ConfigurationError

__all__ = ["RULES", "ValidationFormat", "Violation", "validate"]

ValidationFormat: TypeAlias = Literal["openai", "anthropic", "gemini"]

#: Every rule code `validate` can report, with a one-line description.
RULES: dict[str, str] = dict(
    sorted({**COMMON_RULES, **OPENAI_RULES, **ANTHROPIC_RULES, **GEMINI_RULES}.items())
)

_VALIDATORS: dict[str, Callable[[Any, Collector], None]] = {
    "openai": validate_openai,
    "anthropic": validate_anthropic,
    "gemini": validate_gemini,
}


def validate(payload: Any, format: ValidationFormat) -> list[Violation]:
    """List every rule of `format` that the request body `payload` breaks.

    Args:
        payload: A request body as it would be sent: OpenAI Chat Completions
            (`{"messages": [...]}`), Anthropic Messages (`{"system": ..., "messages":
            [...]}`) or Gemini generateContent (`{"systemInstruction": ..., "contents":
            [...]}`). Any value is accepted; malformed input is reported, never raised.
        format: Which provider's rules to apply.

    Returns:
        The violations, top-level ones first, then by message index; empty when the body
        is valid.

    Raises:
        ConfigurationError: `format` is not a known provider.
    """
    check = _VALIDATORS.get(format) if isinstance(format, str) else None
    if check is None:
        shown = repr(format) if isinstance(format, str) else f"of type {type(format).__name__}"
        msg = f"unknown format {shown}; use one of {', '.join(sorted(_VALIDATORS))}"
        raise ConfigurationError(msg)
    out = Collector()
    check(payload, out)
    return sorted(out.found, key=lambda v: -1 if v.index is None else v.index)
