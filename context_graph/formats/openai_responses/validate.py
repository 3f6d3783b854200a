"""Rules of the OpenAI Responses API request body (`{"instructions": ..., "input": [...]}`).

`input` is a string, or a list of items in any order of roles; every `function_call`
(`custom_tool_call`) is answered by exactly one `function_call_output`
(`custom_tool_call_output`) later in the list with its `call_id`, and a `reasoning` item
is followed by the item it led to (an assistant message or a call). Item types this
validator does not check field by field (built-in tools' calls, item references) are
accepted as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final

from context_graph.formats.openai_responses.validate_items import (
    ITEM_FIELDS,
    check_call_id,
    check_compaction,
    check_message,
    check_output,
    check_reasoning,
)
from context_graph.validate.common import (
    Collector,
    as_list,
    check_keys,
    is_obj,
    never,
    nonempty_str,
    objects_in,
    show,
)
from context_graph.validate.tool_fields import FunctionSite, check_tools

__all__ = ["RESPONSES_RULES", "OpenAIResponsesValidator", "responses_clues", "validate_responses"]

RESPONSES_RULES: Mapping[str, str] = MappingProxyType(
    {
        "instructions_invalid": "`instructions` is not a string.",
        "item_type_unknown": "An input item has a `type` the Responses API does not know.",
        "call_id_invalid": "A call or call output has no string `call_id`, or one over 64 "
        "characters.",
        "function_call_invalid": "A `function_call` lacks a string `name` or `arguments`.",
        "custom_tool_call_invalid": "A `custom_tool_call` lacks a string `name` or `input`.",
        "output_invalid": "A call output's `output` is not a string or an array of input parts.",
        "output_kind_mismatch": "A `function_call_output` answers a custom tool call, or a "
        "`custom_tool_call_output` a function call.",
        "reasoning_invalid": "A `reasoning` item lacks both `id` and `encrypted_content`, or "
        "its `summary` is not an array of `summary_text` parts.",
        "reasoning_not_followed": "A `reasoning` item is not followed by the assistant message "
        "or call it led to.",
        "compaction_invalid": "A `compaction` item lacks a non-empty string `encrypted_content` "
        "(at most 10,485,760 characters), or its `id` is not a string.",
    }
)

#: Item types the API takes that this validator accepts without checking their fields.
_UNCHECKED_ITEMS = frozenset(
    {
        "item_reference",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "web_search_call",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "tool_search_call",
        "tool_search_output",
    }
)
_CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
_OUTPUTS = {output: call for call, output in _CALLS.items()}
#: What a reasoning item may lead to (an assistant message too): a call of any tool.
_LED_TO = frozenset(
    {
        "function_call",
        "custom_tool_call",
        *(kind for kind in _UNCHECKED_ITEMS if kind.endswith("_call")),
    }
)


@dataclass
class _Call:
    kind: str
    path: str
    index: int
    answers: int = 0


def validate_responses(payload: Any, out: Collector) -> None:
    """Check an OpenAI Responses request body, adding every violation to `out`."""
    if not is_obj(payload):
        out.add(
            "payload_not_object",
            "$",
            None,
            f"the request body is {show(payload)}; send a JSON object with an `input` array",
        )
        return
    check_tools(payload, _functions, out)
    instructions = payload.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        out.add(
            "instructions_invalid",
            "instructions",
            None,
            f"`instructions` is {show(instructions)}; make it a string, or leave it out",
        )
    items = payload.get("input")
    if isinstance(items, str):
        if not items:
            out.add("messages_empty", "input", None, "`input` is an empty string; add text")
        return
    listed = as_list(items)
    if listed is None:
        out.add(
            "messages_missing",
            "input",
            None,
            "`input` is absent or neither a string nor an array; send the conversation as an "
            "array of input items",
        )
        return
    if not listed:
        out.add("messages_empty", "input", None, "`input` is empty; add at least a user message")
        return
    _check_items(listed, out)


def _check_items(items: list[Any], out: Collector) -> None:
    calls: dict[str, _Call] = {}
    kinds: list[str | None] = []
    for i, item in enumerate(items):
        kinds.append(_check_item(i, item, calls, out))
    for i, kind in enumerate(kinds):
        if kind == "reasoning" and not _followed(kinds, i):
            out.add(
                "reasoning_not_followed",
                f"input[{i}]",
                i,
                "the reasoning item is not followed by the assistant message or call it led to; "
                "send them together, or leave both out",
            )
    for call_id, call in calls.items():
        if call.answers == 0:
            out.add(
                "tool_call_unanswered",
                call.path,
                call.index,
                f"{call.kind} `{show(call_id)[1:-1]}` has no `{_CALLS[call.kind]}` after it; "
                "add one with its call_id",
            )


def _followed(kinds: list[str | None], i: int) -> bool:
    """Whether, after `i` and any further reasoning, comes what reasoning leads to."""
    for kind in kinds[i + 1 :]:
        if kind != "reasoning":
            return kind in _LED_TO or kind == "assistant"
    return False


def _check_item(i: int, item: Any, calls: dict[str, _Call], out: Collector) -> str | None:
    """Check one item; return its kind (a message's role, else its type) when known."""
    path = f"input[{i}]"
    if not is_obj(item):
        out.add(
            "message_not_object",
            path,
            i,
            f"the item is {show(item)}; make it an object with a `type`",
        )
        return None
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str):
        out.add(
            "item_type_unknown",
            f"{path}.type",
            i,
            f"the item type is {show(kind)}; give the item a string `type` such as message",
        )
        return None
    if kind == "message":
        return check_message(i, item, out)
    if kind == "reasoning":
        check_reasoning(i, item, out)
        return "reasoning"
    if kind == "compaction":
        check_compaction(i, item, out)
        return kind
    if kind in _CALLS:
        _check_call(i, kind, item, calls, out)
        return kind
    if kind in _OUTPUTS:
        _check_answer(i, kind, item, calls, out)
        return kind
    if kind not in _UNCHECKED_ITEMS:
        out.add(
            "item_type_unknown",
            f"{path}.type",
            i,
            f"item type {show(kind)} is unknown; use message, function_call, "
            "function_call_output, custom_tool_call, custom_tool_call_output, reasoning or "
            "compaction",
        )
        return None
    return kind


def _check_call(
    i: int, kind: str, item: dict[Any, Any], calls: dict[str, _Call], out: Collector
) -> None:
    path = f"input[{i}]"
    check_keys(item, ITEM_FIELDS[kind], path, i, out)
    body = "arguments" if kind == "function_call" else "input"
    for key in ("name", body):
        value = item.get(key)
        if not (nonempty_str(value) if key == "name" else isinstance(value, str)):
            out.add(
                f"{kind}_invalid",
                f"{path}.{key}",
                i,
                f"`{key}` is {show(value)}; the {kind} needs a string `{key}`",
            )
    call_id = check_call_id(i, item, out)
    if call_id is None:
        return
    if call_id in calls:
        out.add(
            "duplicate_tool_call_id",
            f"{path}.call_id",
            i,
            f"call_id {show(call_id)} is already used by {calls[call_id].path}; give each call "
            "its own id",
        )
        return
    calls[call_id] = _Call(kind, path, i)


def _check_answer(
    i: int, kind: str, item: dict[Any, Any], calls: dict[str, _Call], out: Collector
) -> None:
    path = f"input[{i}]"
    check_keys(item, ITEM_FIELDS[kind], path, i, out)
    check_output(i, item, out)
    call_id = check_call_id(i, item, out)
    if call_id is None:
        return
    call = calls.get(call_id)
    where = f"{path}.call_id"
    if call is None:
        out.add(
            "tool_result_orphan",
            where,
            i,
            f"{kind} {show(call_id)} answers no call earlier in `input`; put it after its "
            "call, or leave it out",
        )
        return
    if call.kind != _OUTPUTS[kind]:
        out.add(
            "output_kind_mismatch",
            where,
            i,
            f"{kind} {show(call_id)} answers the {call.kind} at {call.path}; answer it with "
            f"a {_CALLS[call.kind]}",
        )
    call.answers += 1
    if call.answers > 1:
        out.add(
            "duplicate_tool_result",
            where,
            i,
            f"call {show(call_id)} is answered more than once; keep one output",
        )


def responses_clues(body: dict[Any, Any]) -> list[str]:
    """Signs of a Responses body: its `input` and `instructions`, and its item types."""
    found: list[str] = []
    items = body.get("input")
    if isinstance(items, list | str):
        found.append("top-level `input`")
    if isinstance(body.get("instructions"), str):
        found.append("top-level `instructions`")
    for item in objects_in(items):
        kind = item.get("type")
        if isinstance(kind, str) and kind in ITEM_FIELDS and kind != "message":
            found.append(f"an input item of type `{kind}`")
    return found


class OpenAIResponsesValidator:
    """The OpenAI Responses API rules as a `ProviderValidator`."""

    format: Final = "responses"
    rules: Final = RESPONSES_RULES
    check = staticmethod(validate_responses)
    clues = staticmethod(responses_clues)
    mixes = staticmethod(never)
    leans = staticmethod(never)


def _functions(tool: dict[Any, Any], path: str, out: Collector) -> Iterable[FunctionSite]:
    """Responses keeps each function flat: `{"type": "function", "name": ...}`."""
    return (FunctionSite(tool, path, "parameters"),) if tool.get("type") == "function" else ()
