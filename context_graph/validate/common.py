"""What the per-provider validators share: the `Violation` record and a collector.

The helpers here never call `repr` or `str` on values from the payload: a deeply nested
list makes `repr` recurse past the interpreter's limit, and `str` of a huge integer
raises. Values are shown by type, strings by a short quoted prefix.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, TypeGuard

from pydantic import BaseModel, ConfigDict

__all__ = [
    "COMMON_RULES",
    "Collector",
    "Violation",
    "article",
    "as_list",
    "check_finite",
    "check_keys",
    "has_str",
    "is_obj",
    "never",
    "nonempty_str",
    "objects_in",
    "show",
]

#: Rules every provider checks; the providers add their own.
COMMON_RULES: Mapping[str, str] = MappingProxyType(
    {
        "payload_not_object": "The request body is not a JSON object.",
        "messages_missing": "The message list (`messages`, `contents`) is absent or not an array.",
        "messages_empty": "The message list is empty; a request needs at least one message.",
        "message_not_object": "An entry of the message list is not a JSON object.",
        "unknown_role": "A message has no role, or one the provider does not accept.",
        "content_missing": "A message lacks the content its role requires.",
        "content_invalid": "A message's content (or Gemini `parts`) has the wrong JSON type.",
        "content_empty": "A message's content (or Gemini `parts`) is empty where it may not be.",
        "unknown_field": "An object has a key the provider does not accept there.",
        "part_not_object": "A content part or block is not a JSON object.",
        "unknown_part_type": "A content part or block has a type the provider does not know.",
        "part_not_allowed_for_role": "A part type appears in a role that may not carry it.",
        "part_invalid": "A part lacks a required field, or a field has the wrong type.",
        "duplicate_tool_call_id": "Two tool calls share an id.",
        "system_invalid": "The system prompt (`system`, `systemInstruction`) has the wrong shape.",
        "system_role_in_messages": "A message has role `system`; the system prompt goes top-level.",
        "first_message_not_user": "The first message (or Gemini content) is not from the user.",
        "roles_not_alternating": "Two consecutive messages (or contents) have the same role.",
        "tool_input_not_object": "A tool call's input (Anthropic `input`, Gemini `args`) is not "
        "an object.",
        "tool_call_unanswered": "A tool call has no result where the provider requires one.",
        "tool_result_orphan": "A tool result answers no tool call of the turn right before it.",
        "duplicate_tool_result": "A tool call is answered more than once.",
        "non_finite_number": "A number is NaN or infinite, which JSON cannot carry (the SDKs "
        "refuse the body).",
        "media_empty": "An image or document part carries neither data nor an address.",
    }
)


class Violation(BaseModel):
    """One rule that a request body breaks."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: str
    """The stable snake_case code of the rule, a key of `RULES`."""
    index: int | None
    """The index of the message (or Gemini content) at fault; None for the top level."""
    path: str
    """A JSON path to the offending value, e.g. `messages[3].content[0].tool_use_id`."""
    message: str
    """A sentence naming the thing, the place and the fix."""

    def __str__(self) -> str:
        return self.message


class Collector:
    """Accumulates violations for one validation run."""

    def __init__(self) -> None:
        self.found: list[Violation] = []

    def add(self, rule: str, path: str, index: int | None, text: str) -> None:
        """Record that `rule` is broken at `path`; `text` says what and how to fix it."""
        self.found.append(Violation(rule=rule, index=index, path=path, message=f"{path}: {text}"))


_MESSAGE_INDEX = re.compile(r"(?:messages|contents|input)\[(?P<index>\d+)\]")


def check_finite(payload: Any, out: Collector, *, limit: int = 20) -> None:
    """Report every NaN or infinite float in `payload` (the first `limit` of them).

    Walks with an explicit stack, each container once: a hostile body may nest deeper
    than recursion goes, or (built in Python) contain itself.
    """
    stack: list[tuple[Any, str]] = [(payload, "")]
    seen: set[int] = set()
    found = 0
    while stack and found < limit:
        value, path = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            found += 1
            message = _MESSAGE_INDEX.match(path)
            index = int(message["index"]) if message else None
            out.add("non_finite_number", path, index, f"{value} is not a JSON number")
            continue
        if not isinstance(value, dict | list) or id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, dict):
            stack.extend(
                (item, f"{path}.{key}" if path else str(key))
                for key, item in reversed(value.items())
                if isinstance(key, str)
            )
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{n}]") for n, item in reversed(list(enumerate(value))))


def article(word: str) -> str:
    """`word` with its indefinite article: `an assistant`, `a user`."""
    return f"an {word}" if word[:1] in ("a", "e", "i", "o", "u") else f"a {word}"


def check_keys(
    obj: dict[Any, Any], allowed: frozenset[str], path: str, index: int, out: Collector
) -> None:
    """Report every key of `obj` outside `allowed` as an `unknown_field`."""
    for key in obj:
        if key not in allowed:
            where = f"{path}.{key}" if isinstance(key, str) else f"{path}.{show(key)}"
            out.add(
                "unknown_field",
                where,
                index,
                f"the key {show(key)} is not accepted here; remove it",
            )


def is_obj(value: object) -> TypeGuard[dict[Any, Any]]:
    """Whether `value` is a JSON object."""
    return isinstance(value, dict)


def has_str(obj: object, key: str) -> bool:
    """Whether `obj` is a JSON object whose `key` holds a string."""
    return is_obj(obj) and isinstance(obj.get(key), str)


def as_list(value: object) -> list[Any] | None:
    """`value` as a list if it is a JSON array, else None."""
    if isinstance(value, list | tuple):
        return list(value)
    return None


def objects_in(value: object) -> list[dict[Any, Any]]:
    """The JSON objects among the items of `value`, if it is a JSON array; else none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def never(body: dict[Any, Any]) -> bool:
    """False: for a format that has no sign of the kind asked (`ProviderValidator.leans`)."""
    return False


def nonempty_str(value: object) -> TypeGuard[str]:
    """Whether `value` is a string with at least one character."""
    return isinstance(value, str) and value != ""


def show(value: object) -> str:
    """A short, safe description of a payload value for use in a message."""
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:40] + "…"
        return "`" + text.replace("`", "'").replace("\n", "\\n") + "`"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"
