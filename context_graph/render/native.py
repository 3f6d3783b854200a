"""What a render does with a provider's own compaction that its format cannot read.

A summary node carrying a `NativeCompaction` stands for every node before it, but only
for its own provider: rendered to that format it goes back verbatim in place of them.
Any other format cannot read it, so the render sets it aside and sends the nodes it
stands for (the pristine record, fitted to the budget by the engine's own compaction),
or, when no earlier record exists (a history that starts with it), its readable summary
or a short note saying what was lost. `ForeignCompaction` reports each case.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from context_graph.graph.native import NativeCompaction, NativeProvider, readable_text
from context_graph.graph.nodes import Node, SummaryNode

__all__ = ["ForeignCompaction", "ForeignCompactionReason", "foreign_native", "reason_for"]

ForeignCompactionReason: TypeAlias = Literal["pristine_record", "no_pristine_record"]
"""Why a foreign compaction was not sent: `pristine_record`, the nodes it stands for were
rendered in its place (as the view holds them: the engine's own compaction may have
summarized them, and it with them); `no_pristine_record`, nothing earlier was left to
render, so what it says was sent instead (its readable summary, or a note when it has
none)."""


@dataclass(frozen=True, slots=True)
class ForeignCompaction:
    """A provider's own compaction that a render in another format could not send.

    Attributes:
        node_id: The summary node that holds it.
        provider: Whose artifact it is (a format of `NATIVE_FORMATS`).
        reason: What was sent in its place (`ForeignCompactionReason`).
        readable: Whether the artifact has readable text (its `readable_key`); with
            `no_pristine_record`, False means only a note saying it is unreadable went.
    """

    node_id: str
    provider: NativeProvider
    reason: ForeignCompactionReason
    readable: bool


def foreign_native(node: Node, format: str) -> NativeCompaction | None:
    """The native compaction `node` holds, when it is not `format`'s own; else None.

    Only an imported compaction (`seq` set) stands for everything before it. A processor's
    summary holding a provider's artifact (a compaction provider wrote it) stands for its
    own abstracts, like any summary: another format is sent its text.
    """
    if not isinstance(node, SummaryNode) or node.native is None or node.seq is None:
        return None
    return None if node.native.provider == format else node.native


def reason_for(node_id: str, native: NativeCompaction, *, earlier: bool) -> ForeignCompaction:
    """The report for a foreign compaction, with or without an `earlier` record to render."""
    reason: ForeignCompactionReason = "pristine_record" if earlier else "no_pristine_record"
    return ForeignCompaction(node_id, native.provider, reason, readable_text(native) is not None)
