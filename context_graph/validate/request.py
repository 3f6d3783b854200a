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

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from context_graph.errors import ConfigurationError
from context_graph.validate.common import COMMON_RULES, Collector, Violation, check_finite
from context_graph.validate.provider import ValidationFormat
from context_graph.validate.registry import PROVIDER_VALIDATORS

__all__ = [
    "RULES",
    "ValidationFormat",
    "Violation",
    "detect_request_format",
    "request_format_clues",
    "validate",
]


def _all_rules() -> dict[str, str]:
    merged = dict(COMMON_RULES)
    for validator in PROVIDER_VALIDATORS.values():
        merged.update(validator.rules)
    return dict(sorted(merged.items()))


#: Every rule code `validate` can report, with a one-line description (read-only).
RULES: Mapping[str, str] = MappingProxyType(_all_rules())


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
    validator = PROVIDER_VALIDATORS.get(format) if isinstance(format, str) else None
    if validator is None:
        shown = repr(format) if isinstance(format, str) else f"of type {type(format).__name__}"
        msg = f"unknown format {shown}; use one of {', '.join(sorted(PROVIDER_VALIDATORS))}"
        raise ConfigurationError(msg)
    out = Collector()
    check_finite(payload, out)
    validator.check(payload, out)
    return sorted(out.found, key=lambda v: -1 if v.index is None else v.index)


# Signs of each provider's request body that the others do not use. Weak signs count
# only when no strong one is found: OpenAI also accepts `max_tokens`, for one.
_OPENAI_ROLES = frozenset({"system", "developer", "tool", "function"})
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "server_tool_use"}
)
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
_GEMINI_KEYS = ("contents", "systemInstruction", "system_instruction", "generationConfig")


def request_format_clues(body: Any) -> dict[ValidationFormat, list[str]]:
    """What in `body` marks it as each provider's request, as phrases for a message.

    Example:
        request_format_clues({"contents": []})
        # {"openai": [], "anthropic": [], "gemini": ["top-level `contents`"]}

    Returns:
        For each format, the signs found (first found first); empty lists when `body`
        is not a JSON object or shows none.
    """
    clues: dict[ValidationFormat, list[str]] = {fmt: [] for fmt in PROVIDER_VALIDATORS}
    if not isinstance(body, dict):
        return clues
    for key in _GEMINI_KEYS:
        if key in body:
            clues["gemini"].append(f"top-level `{key}`")
    if isinstance(body.get("system"), str | list):
        clues["anthropic"].append("top-level `system`")
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        if isinstance(message, dict):
            _message_clues(message, clues)
    tools = body.get("tools")
    for tool in tools if isinstance(tools, list) else ():
        if isinstance(tool, dict):
            _tool_clues(tool, clues)
    for found in clues.values():
        found[:] = list(dict.fromkeys(found))
    return clues


def _message_clues(message: dict[str, Any], clues: dict[ValidationFormat, list[str]]) -> None:
    role = message.get("role")
    if isinstance(role, str) and role in _OPENAI_ROLES:
        clues["openai"].append(f"a message with role `{role}`")
    for key in ("tool_calls", "tool_call_id"):
        if key in message:
            clues["openai"].append(f"a message with `{key}`")
    content = message.get("content")
    for block in content if isinstance(content, list) else ():
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            continue
        if kind in _ANTHROPIC_BLOCKS:
            clues["anthropic"].append(f"a block of type `{kind}`")
        elif kind in _OPENAI_PARTS:
            clues["openai"].append(f"a content part of type `{kind}`")
        elif kind == "image" and "source" in block:
            clues["anthropic"].append("an `image` block with a `source`")
        if "cache_control" in block:
            clues["anthropic"].append("a block with `cache_control`")


def _tool_clues(tool: dict[str, Any], clues: dict[ValidationFormat, list[str]]) -> None:
    if tool.get("type") == "function" and "function" in tool:
        clues["openai"].append("a tool of type `function`")
    if "input_schema" in tool:
        clues["anthropic"].append("a tool with `input_schema`")
    if "functionDeclarations" in tool or "function_declarations" in tool:
        clues["gemini"].append("a tool with `functionDeclarations`")


def detect_request_format(body: Any) -> ValidationFormat | None:
    """The provider whose request `body` is, or `None` when it cannot be told.

    A body is told by the fields only one provider uses (Gemini's `contents`, Anthropic's
    top-level `system` and `tool_use` blocks, OpenAI's `tool` role and `tool_calls`;
    see `request_format_clues`); failing those, a top-level `max_tokens` with
    `messages` suggests Anthropic, which requires it.

    Example:
        detect_request_format({"system": "be brief", "messages": []})  # "anthropic"
        detect_request_format({"messages": [{"role": "user", "content": "hi"}]})  # None

    Returns:
        `None` for a body with no sign (user and assistant text alone is valid OpenAI
        and Anthropic), with signs of two formats (Gemini's `contents` beside
        `messages`, too), or that is not a JSON object.
    """
    clues = request_format_clues(body)
    found = [fmt for fmt, signs in clues.items() if signs]
    if found == ["gemini"] and isinstance(body, dict) and "messages" in body:
        return None  # Gemini has no `messages`: the body mixes two shapes
    if len(found) == 1:
        return found[0]
    if not found and isinstance(body, dict) and "max_tokens" in body and "messages" in body:
        return "anthropic"
    return None
