"""Clearing the thinking of finished turns: reasoning the model no longer reads.

`ThinkingClearer` leaves the thinking blocks (`ThinkingPart`, `RedactedThinkingPart`,
`ReasoningPart`) out of assistant turns that are finished: turns of an earlier user turn
than the current one. Blocks are dropped whole, never edited: a signed block is sent
back byte for byte or not at all, and every provider accepts an earlier turn without
its thinking (Anthropic `clear_thinking`). The current tool loop keeps its thinking,
which Anthropic requires unmodified. The pristine record keeps the blocks.

```python
proposal = await ThinkingClearer().propose(nodes, ctx)
```
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.content import ReasoningPart, RedactedThinkingPart, ThinkingPart
from context_graph.graph.nodes import SIGNED_SECRETS, AssistantNode, Node
from processors.base import ProcessorContext, Proposal, Scope, replace_each, replacement_for
from processors.registry import register_processor

__all__ = ["THINKING_CLEARED_KEY", "ThinkingClearer"]

#: The `meta` key of an assistant node whose thinking was left out: how many blocks.
THINKING_CLEARED_KEY = "thinking_cleared"

_THINKING = (ThinkingPart, RedactedThinkingPart, ReasoningPart)


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    keep_turns: int = Field(ge=1)


class ThinkingClearer:
    """Drops the thinking blocks of assistant turns at least `keep_turns` user turns old.

    Assistant turns of the current user turn (the running tool loop) are never touched,
    nor pinned ones. A turn left with no content and no tool call keeps its thinking
    (an empty assistant message is refused). Nothing changes unless the turn gets smaller.

    Args:
        keep_turns: Keep the thinking of the last `keep_turns` user turns (at least 1:
            the current tool loop's thinking always goes back).

    Raises:
        ConfigurationError: `keep_turns` is not an integer >= 1.
    """

    name = "clear_thinking"
    scope: ClassVar[Scope] = "outputs"

    def __init__(self, *, keep_turns: int = 1) -> None:
        try:
            self._options = _Options(keep_turns=keep_turns)
        except ValidationError:
            msg = (
                f"ThinkingClearer: `keep_turns` must be an integer >= 1, got {keep_turns!r}; "
                "pass e.g. keep_turns=1 (the current tool loop keeps its thinking)"
            )
            raise ConfigurationError(msg) from None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a copy without thinking of every finished assistant turn.

        The turns are the targets that are assistant turns and the turns that made the
        other targets (a compaction hands a stage the tool outputs).
        """
        return replace_each(
            self.name,
            ctx,
            ((node, self._cleared(node, ctx)) for node in _turns(targets, ctx)),
            note=lambda edits, before, after: (
                f"cleared the thinking of {edits} finished turn(s): {before:,} -> {after:,} tokens"
            ),
        )

    def _cleared(self, node: Node, ctx: ProcessorContext) -> Node | None:
        if not isinstance(node, AssistantNode) or node.pinned:
            return None
        if ctx.graph.turns - node.turn < self._options.keep_turns:
            return None
        kept = [part for part in node.content if not isinstance(part, _THINKING)]
        dropped = len(node.content) - len(kept)
        if not dropped or (not kept and not _has_calls(node, ctx)):
            return None
        meta = {k: v for k, v in node.meta.items() if k != SIGNED_SECRETS}
        earlier = node.meta.get(THINKING_CLEARED_KEY)
        meta[THINKING_CLEARED_KEY] = dropped + (earlier if isinstance(earlier, int) else 0)
        return replacement_for(node, kept, meta=meta)


def _turns(targets: Sequence[Node], ctx: ProcessorContext) -> list[AssistantNode]:
    """The assistant turns among `targets` and the turns whose units hold them, once each."""
    found: dict[str, AssistantNode] = {}
    for node in targets:
        turn = node if isinstance(node, AssistantNode) else None
        if turn is None and node.id in ctx.graph:
            head = ctx.graph[ctx.graph.unit_of(node.id).head]
            turn = head if isinstance(head, AssistantNode) else None
        if turn is not None:
            found.setdefault(turn.id, turn)
    return list(found.values())


def _has_calls(node: Node, ctx: ProcessorContext) -> bool:
    if node.id not in ctx.graph:
        return False
    unit = ctx.graph.unit_of(node.id)
    return any(ctx.graph[member].kind == "tool_call" for member in unit)


register_processor(ThinkingClearer)
