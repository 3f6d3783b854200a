"""Request-wide rules of the Gemini generateContent body: turn order and call pairing.

The per-content checks in `validate` hand over a `ContentInfo` for each content.
Calls and responses pair by id when every one carries an id, else by name and order.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from context_graph.validate.common import Collector, show

__all__ = ["ContentInfo", "check_pairing", "check_sequence"]


@dataclass
class ContentInfo:
    """What the pairing rules need to know about one content."""

    index: int
    role: str | None
    calls: list[tuple[str, str, str | None]] = field(default_factory=list)
    """(path, name, id) of each well-formed functionCall, in order."""
    responses: list[tuple[str, str, str | None]] = field(default_factory=list)
    """(path, name, id) of each well-formed functionResponse, in order."""


def check_sequence(seq: list[ContentInfo], out: Collector) -> None:
    """The first content is from the user and roles alternate."""
    if seq[0].role == "model":
        out.add(
            "first_message_not_user",
            "contents[0].role",
            0,
            "the first content must be from the user; add a user content before it",
        )
    for prev, cur in itertools.pairwise(seq):
        if cur.role is not None and cur.role == prev.role:
            out.add(
                "roles_not_alternating",
                f"contents[{cur.index}].role",
                cur.index,
                f"two {cur.role} contents in a row; merge contents[{prev.index}] and "
                f"contents[{cur.index}] into one",
            )


def check_pairing(seq: list[ContentInfo], pos: int, content: ContentInfo, out: Collector) -> None:
    """Calls of a model turn are answered by the user turn right after it."""
    prev = seq[pos - 1] if pos > 0 else None
    if content.responses and (prev is None or prev.role != "model" or not prev.calls):
        for path, name, _ in content.responses:
            out.add(
                "tool_result_orphan",
                path,
                content.index,
                f"functionResponse {show(name)} follows no model turn with function calls; drop "
                "it or restore the call",
            )
    if not content.calls:
        return
    ids = [c[2] for c in content.calls]
    for (path, _, call_id), count in zip(content.calls, _running(ids), strict=True):
        if call_id is not None and count > 1:
            out.add(
                "duplicate_tool_call_id",
                f"{path}.id",
                content.index,
                f"call id {show(call_id)} is used twice in this turn; give each call its own id",
            )
    nxt = seq[pos + 1] if pos + 1 < len(seq) else None
    responses = nxt.responses if nxt is not None and nxt.role == "user" else []
    answer_index = nxt.index if nxt is not None else content.index
    if all(c[2] is not None for c in content.calls) and all(r[2] is not None for r in responses):
        _match(content, responses, answer_index, 2, out)
    else:
        _match(content, responses, answer_index, 1, out)


def _running(values: list[Any]) -> list[int]:
    """How many times each value has been seen up to and including its position."""
    seen: Counter[Any] = Counter()
    counts = []
    for value in values:
        seen[value] += 1
        counts.append(seen[value])
    return counts


def _match(
    turn: ContentInfo,
    responses: list[tuple[str, str, str | None]],
    at: int,
    by: int,
    out: Collector,
) -> None:
    """Match responses to calls on field `by` (2: id, 1: name); report what is left over."""
    wanted = Counter(c[by] for c in turn.calls)
    given = Counter(r[by] for r in responses)
    for (path, name, call_id), seen in zip(
        turn.calls, _running([c[by] for c in turn.calls]), strict=True
    ):
        key = call_id if by == 2 else name
        if seen > given[key]:
            out.add(
                "tool_call_unanswered",
                path,
                turn.index,
                f"functionCall {show(name)}{_id_note(by, key)} has no functionResponse in the "
                "next user content; add one",
            )
    for (path, name, resp_id), seen in zip(
        responses, _running([r[by] for r in responses]), strict=True
    ):
        key = resp_id if by == 2 else name
        if seen <= wanted[key]:
            continue
        rule = "duplicate_tool_result" if wanted[key] else "tool_result_orphan"
        out.add(
            rule,
            path,
            at,
            f"functionResponse {show(name)}{_id_note(by, key)} "
            + (
                "answers a call that is already answered; keep one response"
                if wanted[key]
                else "matches no functionCall of the model turn before it; "
                "drop it or restore the call"
            ),
        )
    if by == 1 and wanted == given:
        for (path, name, _), call in zip(responses, turn.calls, strict=True):
            if name != call[1]:
                out.add(
                    "tool_results_out_of_order",
                    path,
                    at,
                    f"functionResponse {show(name)} answers call {show(call[1])}'s position; "
                    "without ids the responses must follow the order of the calls",
                )
                break


def _id_note(by: int, key: object) -> str:
    return f" (id {show(key)})" if by == 2 else ""
