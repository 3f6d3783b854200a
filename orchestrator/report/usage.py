"""`RecordedUsage`: what the recorded session's provider said each call used, summed.

An agent's own log keeps its provider's usage on the assistant turns (`meta["usage"]`:
Claude Code's Anthropic usage, a Responses log's usage). The report shows its sum and
the session's real prompt-cache hit rate beside the engine's replay. The shape is told
by the keys only that provider's usage has, which its format's folder knows
(`Wire.owns_usage`). A usage of another kind is left out: Codex CLI's running totals
(`cached_input_tokens`), which would count every call again, and Gemini CLI's own key
names. So is one that does not read (a count that is not an int >= 0): the report
counts it in `unread` rather than fail the replay or add a wrong figure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from context_graph.errors import IngestError
from context_graph.formats.wires import WIRES
from context_graph.graph.nodes import Node
from context_graph.tokens.usage import UsageShape, UsageTotals, read_usage

__all__ = ["RecordedUsage", "usage_shape"]


def usage_shape(usage: Mapping[str, Any]) -> UsageShape | None:
    """Whose usage object `usage` is, by its keys (`None`: none this engine sums).

    Each format claims its own (`Wire.owns_usage`); the claims are exclusive, so the
    order they are asked in does not matter.
    """
    for name, wire in WIRES.items():
        if wire.owns_usage(usage):
            return cast("UsageShape", name)  # the registry is keyed by the formats' names
    return None


class RecordedUsage:
    """The recorded usage of the assistant turns taken so far (`take`)."""

    def __init__(self) -> None:
        self.totals = UsageTotals()
        self.unread = 0
        """Turns whose usage is of a known shape but does not read."""

    def take(self, node: Node) -> None:
        """Add an assistant turn's recorded usage, if it has one this engine reads."""
        usage = node.meta.get("usage") if node.kind == "assistant" else None
        if not isinstance(usage, Mapping):
            return
        shape = usage_shape(usage)
        if shape is None:
            return
        try:
            read = read_usage(usage, shape)
        except IngestError:
            self.unread += 1
            return
        if read is not None:
            self.totals = self.totals.add(read)

    def to_json(self) -> dict[str, Any] | None:
        """The sums and the hit rate, as the page reads them (`None`: no usage recorded)."""
        totals = self.totals
        if not totals.calls:
            return None
        return {
            **totals.model_dump(),
            "total_tokens": totals.total_tokens,
            "cache_hit_rate": totals.cache_hit_rate,
            "unread": self.unread,
        }
