"""Check a rendered request body against a provider's documented rules.

`validate` lists every rule a body breaks, not just the first, so one run shows all that
a renderer or a compaction got wrong. It never raises on the payload: anything that is
not JSON of the right shape becomes a violation.

`detect_request_format` tells which provider a body is written for, from the fields only
one provider uses.

Example:
    problems = validate({"messages": [{"role": "tool", "content": "4"}]}, "openai")
    # [Violation(rule='tool_call_id_invalid', index=0, path='messages[0].tool_call_id', ...)]
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.validate.common import COMMON_RULES, Collector, Violation, check_finite
from context_graph.validate.provider import ProviderValidator, ValidationFormat
from context_graph.validate.tool_fields import TOOL_RULES

__all__ = [
    "RULES",
    "ValidationFormat",
    "Violation",
    "detect_request_format",
    "request_format_clues",
    "validate",
]


def _validators() -> Mapping[ValidationFormat, ProviderValidator]:
    """The registry's validators, asked at call time: see `context_graph.formats.registry`."""
    from context_graph.formats.registry import PROVIDER_VALIDATORS

    return PROVIDER_VALIDATORS


def _all_rules() -> dict[str, str]:
    merged = dict(COMMON_RULES)
    merged.update(TOOL_RULES)
    for validator in _validators().values():
        merged.update(validator.rules)
    return dict(sorted(merged.items()))


class _Rules(Mapping[str, str]):
    """Every rule code, gathered from the registry's validators when first read."""

    @functools.cached_property
    def _table(self) -> Mapping[str, str]:
        return MappingProxyType(_all_rules())

    def __getitem__(self, code: str) -> str:
        return self._table[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table)

    def __len__(self) -> int:
        return len(self._table)

    def __repr__(self) -> str:
        return repr(dict(self._table))


#: Every rule code `validate` can report, with a one-line description (read-only).
RULES: Mapping[str, str] = _Rules()


def validate(payload: Any, format: ValidationFormat) -> list[Violation]:
    """List every rule of `format` that the request body `payload` breaks.

    Args:
        payload: A request body as it would be sent: OpenAI Chat Completions
            (`{"messages": [...]}`), Anthropic Messages (`{"system": ..., "messages":
            [...]}`), Gemini generateContent (`{"systemInstruction": ..., "contents":
            [...]}`) or the OpenAI Responses API (`{"instructions": ..., "input": [...]}`).
            Any value is accepted; malformed input is reported, never raised.
        format: Which provider's rules to apply.

    Returns:
        The violations, top-level ones first, then by message index; empty when the body
        is valid.

    Raises:
        ConfigurationError: `format` is not a known provider.
    """
    validators = _validators()
    validator = validators.get(format) if isinstance(format, str) else None
    if validator is None:
        shown = repr(format) if isinstance(format, str) else f"of type {type(format).__name__}"
        msg = f"unknown format {shown}; use one of {', '.join(sorted(validators))}"
        raise ConfigurationError(msg)
    out = Collector()
    check_finite(payload, out)
    validator.check(payload, out)
    return sorted(out.found, key=lambda v: -1 if v.index is None else v.index)


def request_format_clues(body: Any) -> dict[ValidationFormat, list[str]]:
    """What in `body` marks it as each provider's request, as phrases for a message.

    Example:
        request_format_clues({"contents": []})
        # {"openai": [], "anthropic": [], "gemini": ["top-level `contents`"]}

    Returns:
        For each format, the signs its `ProviderValidator.clues` finds, each once (first
        found first); empty lists when `body` is not a JSON object or shows none.
    """
    validators = _validators()
    clues: dict[ValidationFormat, list[str]] = {fmt: [] for fmt in validators}
    if not isinstance(body, dict):
        return clues
    for fmt, validator in validators.items():
        clues[fmt] = list(dict.fromkeys(validator.clues(body)))
    return clues


def detect_request_format(body: Any) -> ValidationFormat | None:
    """The provider whose request `body` is, or `None` when it cannot be told.

    A body is told by the fields only one provider uses (Gemini's `contents`, Anthropic's
    top-level `system` and `tool_use` blocks, OpenAI's `tool` role and `tool_calls`, the
    Responses API's `input` and `instructions`; see `request_format_clues`), unless the
    body also holds another format's conversation (`ProviderValidator.mixes`: Gemini's
    `contents` beside `messages`); failing those, by a field only one format requires
    (`ProviderValidator.leans`: a top-level `max_tokens` beside `messages`, Anthropic's).

    Example:
        detect_request_format({"system": "be brief", "messages": []})  # "anthropic"
        detect_request_format({"messages": [{"role": "user", "content": "hi"}]})  # None

    Returns:
        `None` for a body with no sign (user and assistant text alone is valid OpenAI
        and Anthropic), with signs of two formats (Gemini's `contents` beside
        `messages`, too), or that is not a JSON object.
    """
    if not isinstance(body, dict):
        return None
    validators = _validators()
    found = [fmt for fmt, signs in request_format_clues(body).items() if signs]
    if len(found) == 1:
        return None if validators[found[0]].mixes(body) else found[0]
    if found:
        return None
    leaning = [fmt for fmt, validator in validators.items() if validator.leans(body)]
    return leaning[0] if len(leaning) == 1 else None
