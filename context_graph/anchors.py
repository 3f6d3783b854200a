"""Where the user's own requests are: notices (`UserNode.notice`) set apart from them.

The render floor and the summarize stage anchor on the user's requests. A notice, a
user-role message the agent harness wrote, heads a unit of kind `notice`, so a request
it follows stays the request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from context_graph.nodes import Node

__all__ = ["floor_anchors", "unit_kind"]


def unit_kind(node: Node) -> str:
    """The kind of the interaction unit `node` heads: its own, or `notice` for a notice.

    The render floor and the summarize stage tell the user's requests (units of kind
    `user`) from notices (`UserNode.notice`, units of kind `notice`): `floor_anchors`.
    """
    return "notice" if node.kind == "user" and getattr(node, "notice", False) else node.kind


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
