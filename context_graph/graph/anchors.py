"""Where the user's own requests are: notices and summaries set apart from them.

The render floor and the summarize stage anchor on the user's requests. A notice, a
user-role message the agent harness wrote, heads a unit of kind `notice`, so a request
it follows stays the request. A summary heads a unit of kind `summary`, which is no
request either; no provider format has a place for it but a user-role message, so it is
rendered as one that opens with `SUMMARY_HEADER`, and such a message read back from a
request body heads a unit of kind `notice`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from context_graph.graph.nodes import Node

__all__ = ["SUMMARY_HEADER", "floor_anchors", "preamble_heads", "unit_kind"]

#: The first line of a summary context-graph wrote, as it is rendered: every format sends
#: the summary as a user-role message, and whatever reads "the latest user message" (a
#: model, a harness, a proxy) must not take it for a new request.
SUMMARY_HEADER = (
    "[Summary of the earlier conversation, written by context-graph; not a new request]"
)


def _opens_with_summary_header(node: Node) -> bool:
    """Whether a node's text opens with `SUMMARY_HEADER` (a rendered summary read back)."""
    first = node.content[0] if node.content else None
    return first is not None and getattr(first, "text", "").startswith(SUMMARY_HEADER)


def unit_kind(node: Node) -> str:
    """The kind of the interaction unit `node` heads: its own, or `notice` for a notice.

    The render floor and the summarize stage tell the user's requests (units of kind
    `user`) from notices (`UserNode.notice`, units of kind `notice`): `floor_anchors`.
    A user turn that opens with `SUMMARY_HEADER` is a summary context-graph rendered,
    imported back from a request body (a proxy that is sent whole bodies): a notice too.
    """
    if node.kind != "user":
        return node.kind
    notice = getattr(node, "notice", False) or _opens_with_summary_header(node)
    return "notice" if notice else "user"


def floor_anchors(kinds: Sequence[str]) -> tuple[int, int, int] | None:
    """Where the floor's user-role units are among these unit kinds (`unit_kind`).

    Returns the positions of the user's first request, their latest request, and the
    latest user-role unit (that request, or a notice after it); `None` without any. The
    floor keeps all three and everything after the last; the summarize stage takes the
    spans between them. A history of notices alone (a harness that marks every message
    in the user's role so) has no request: its notices stand in for requests.
    """
    turns = [i for i, kind in enumerate(kinds) if kind in {"user", "notice"}]
    if not turns:
        return None
    requests = [i for i in turns if kinds[i] == "user"] or turns
    return requests[0], requests[-1], turns[-1]


class _Unit(Protocol):
    """What `preamble_heads` reads of a unit (`units.Unit`, which imports this module)."""

    @property
    def head(self) -> str: ...

    @property
    def kind(self) -> str: ...


def preamble_heads(units: Iterable[_Unit]) -> tuple[str, ...]:
    """The heads of the notice units before the user's first request, in order.

    The preamble: what a harness sends in the user's role before the task (SWE-agent's
    demonstration, Gemini CLI's session context). Read up to the first request only (a
    preamble is a few units at the head of a view that may hold thousands); none without
    a request, where notices stand in for requests (`floor_anchors`).
    """
    heads: list[str] = []
    for unit in units:
        if unit.kind == "user":
            return tuple(heads)
        if unit.kind == "notice":
            heads.append(unit.head)
    return ()
