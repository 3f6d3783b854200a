"""Tool calls of the OpenAI Chat Completions body: their shape, and their `tool` answers.

Every call of an assistant message is answered by exactly one `tool` message, in the
run of `tool` messages right after it; `AssistantTurn` carries the pairing from message to message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from context_graph.validate.common import Collector, as_list, has_str, is_obj, nonempty_str, show

__all__ = [
    "AssistantTurn",
    "PendingCall",
    "check_tool_calls",
    "close_turn",
    "leave_run",
    "pair_tool_message",
]


@dataclass
class PendingCall:
    """A tool call of an assistant message, waiting for its `tool` message."""

    path: str
    answers: int = 0


@dataclass
class AssistantTurn:
    """The latest assistant message and the calls it made."""

    index: int
    calls: dict[str, PendingCall] = field(default_factory=dict)
    in_run: bool = True


def check_tool_calls(i: int, message: dict[Any, Any], out: Collector) -> dict[str, PendingCall]:
    """Check an assistant's `tool_calls`; return its calls by id."""
    path = f"messages[{i}].tool_calls"
    if message.get("tool_calls") is None:
        return {}
    calls = as_list(message["tool_calls"])
    if not calls:
        out.add(
            "tool_calls_invalid",
            path,
            i,
            "`tool_calls` must be a non-empty array; omit the key when the message makes no call",
        )
        return {}
    found: dict[str, PendingCall] = {}
    for j, call in enumerate(calls):
        call_id = _check_tool_call(i, f"{path}[{j}]", call, out)
        if call_id is None:
            continue
        if call_id in found:
            out.add(
                "duplicate_tool_call_id",
                f"{path}[{j}].id",
                i,
                f"tool call id {show(call_id)} is used twice in this message; give each call its "
                "own id",
            )
            continue
        found[call_id] = PendingCall(f"{path}[{j}]")
    return found


def _check_tool_call(i: int, path: str, call: Any, out: Collector) -> str | None:
    """Check the shape of one tool call; return its id when it has a usable one."""
    if is_obj(call) and call.get("type") == "function":
        fn = call.get("function")
        ok = has_str(fn, "name") and has_str(fn, "arguments")
        fix = "`function: {name: string, arguments: string}` (arguments is JSON text)"
    elif is_obj(call) and call.get("type") == "custom":
        ok = has_str(call.get("custom"), "name") and has_str(call.get("custom"), "input")
        fix = "`custom: {name: string, input: string}`"
    else:
        out.add(
            "tool_call_invalid",
            path,
            i,
            "the tool call must be an object with `type` function (or custom); fix its shape",
        )
        return None
    call_id = call.get("id")
    if not nonempty_str(call_id):
        out.add(
            "tool_call_invalid",
            f"{path}.id",
            i,
            f"tool call id is {show(call_id)}; give the call a non-empty string id",
        )
        return None
    if not ok:
        out.add("tool_call_invalid", path, i, f"tool call {show(call_id)} needs {fix}")
    return call_id


def pair_tool_message(
    i: int, message: dict[Any, Any], turn: AssistantTurn | None, out: Collector
) -> None:
    """Match a `tool` message to a call of the nearest preceding assistant message."""
    call_id = message.get("tool_call_id")
    path = f"messages[{i}].tool_call_id"
    if not nonempty_str(call_id):
        out.add(
            "tool_call_id_invalid",
            path,
            i,
            f"`tool_call_id` is {show(call_id)}; set it to the id of the call this message answers",
        )
        return
    call = turn.calls.get(call_id) if turn is not None else None
    if turn is None or call is None:
        where = (
            "there is no assistant message before it"
            if turn is None
            else (f"messages[{turn.index}] made no call with that id")
        )
        out.add(
            "tool_result_orphan",
            path,
            i,
            f"tool message for {show(call_id)} answers no call: {where}; drop it or restore the "
            "call",
        )
        return
    call.answers += 1
    if call.answers > 1:
        out.add(
            "duplicate_tool_result",
            path,
            i,
            f"call {show(call_id)} of messages[{turn.index}] is already answered; keep one tool "
            "message per call",
        )
    elif not turn.in_run:
        out.add(
            "tool_result_misplaced",
            path,
            i,
            f"the answer to {show(call_id)} must come right after messages[{turn.index}], before "
            "any other message; move it there",
        )


def leave_run(turn: AssistantTurn | None) -> AssistantTurn | None:
    """A non-tool message ends the run of tool messages after the assistant."""
    if turn is not None:
        turn.in_run = False
    return turn


def close_turn(turn: AssistantTurn | None, out: Collector) -> None:
    """Report the calls of the finished assistant turn that got no answer."""
    if turn is None:
        return
    for call_id, call in turn.calls.items():
        if call.answers == 0:
            out.add(
                "tool_call_unanswered",
                call.path,
                turn.index,
                f"tool call {show(call_id)} has no `tool` message answering it; add one right "
                "after this message",
            )
