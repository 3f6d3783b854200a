"""Clearing old tool inputs: a 300-line `write` need not be sent again ten turns later.

`ToolInputClearer` replaces the large arguments of old calls to tools whose inputs are
content (`write`, `edit`, `apply_patch`, `str_replace`...) by a short placeholder. The
call keeps its name, its id and its small arguments (the path, a flag), so it still
pairs with its result and still says what was done; the arguments stay a JSON object
(a custom call's raw input stays text). The pristine record keeps the original, which
`expand` brings back. Anthropic's `clear_tool_inputs` and LangChain's `ClearToolUsesEdit`
do the same.

```python
proposal = await ToolInputClearer(keep_turns=2).propose(nodes, ctx)
```
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from fnmatch import fnmatchcase
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node, ToolCallNode
from processors.base import ProcessorContext, Proposal, Scope, replace_each, replacement_for
from processors.registry import register_processor

__all__ = ["CLEARED_INPUT_KEY", "CONTENT_TOOLS", "ToolInputClearer"]

#: Tool-name patterns (case-insensitive globs) of tools whose inputs are file content.
CONTENT_TOOLS: tuple[str, ...] = (
    "*write*",
    "*edit*",
    "create",
    "create_file",
    "*apply_patch*",
    "*str_replace*",
    "insert",
)
#: The `meta` key of a cleared call: `{"keys": [...], "chars": n}`.
CLEARED_INPUT_KEY = "input_cleared"

# A Responses custom call carries raw input text, not JSON (`context_graph.render.turns`).
_RESPONSES_TYPE = "responses_type"


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)
    keep_turns: int = Field(ge=1)
    min_tokens: int = Field(ge=0)
    max_value_chars: int = Field(ge=1)
    tools: tuple[str, ...] = Field(min_length=1)


class ToolInputClearer:
    """Replaces the large arguments of old content-writing tool calls by a placeholder.

    A call is cleared when it is at least `keep_turns` user turns old, not pinned, has at
    least `min_tokens` tokens and its tool matches one of `tools`. Each argument whose
    JSON is longer than `max_value_chars` becomes a one-line string naming its size and
    the node to expand; the others (a path, a mode, a line number) are kept as they were.
    Nothing changes unless the call gets smaller.

    Args:
        keep_turns: Keep the calls of the last `keep_turns` user turns (at least 1).
        min_tokens: Leave calls with fewer tokens alone.
        max_value_chars: Keep arguments whose JSON has at most this many characters.
        tools: Case-insensitive glob patterns of the tool names to clear
            (default `CONTENT_TOOLS`).

    Raises:
        ConfigurationError: an option is out of range or of the wrong type.
    """

    name = "clear_tool_inputs"
    scope: ClassVar[Scope] = "outputs"

    def __init__(
        self,
        *,
        keep_turns: int = 3,
        min_tokens: int = 200,
        max_value_chars: int = 200,
        tools: Sequence[str] = CONTENT_TOOLS,
    ) -> None:
        try:
            if isinstance(tools, str):
                raise TypeError(tools)
            self._options = _Options(
                keep_turns=keep_turns,
                min_tokens=min_tokens,
                max_value_chars=max_value_chars,
                tools=tuple(tools),
            )
        except (ValidationError, TypeError):
            msg = (
                "ToolInputClearer: expected keep_turns >= 1, min_tokens >= 0, max_value_chars "
                f">= 1 (integers) and tools a non-empty list of name patterns; got "
                f"keep_turns={keep_turns!r}, min_tokens={min_tokens!r}, "
                f"max_value_chars={max_value_chars!r}, tools={tools!r}"
            )
            raise ConfigurationError(msg) from None

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a cleared copy of every call that is old, large and content.

        The calls are the targets that are calls and the calls the other targets answer
        (a compaction hands a stage the tool outputs).
        """
        calls = _calls(targets, ctx)
        return replace_each(
            self.name,
            ctx,
            ((node, self._cleared(node, ctx)) for node in calls),
            note=lambda edits, before, after: (
                f"cleared the inputs of {edits} old tool call(s): {before:,} -> {after:,} tokens"
            ),
        )

    def _due(self, node: Node, ctx: ProcessorContext) -> bool:
        options = self._options
        if not isinstance(node, ToolCallNode) or node.pinned or CLEARED_INPUT_KEY in node.meta:
            return False
        if ctx.graph.turns - node.turn < options.keep_turns:
            return False
        name = node.name.lower()
        if not any(fnmatchcase(name, pattern.lower()) for pattern in options.tools):
            return False
        return ctx.count(node) >= options.min_tokens

    def _cleared(self, node: Node, ctx: ProcessorContext) -> Node | None:
        if not self._due(node, ctx) or not isinstance(node, ToolCallNode):
            return None
        how = (
            f"call context_expand with id {node.id}"
            if ctx.expand_hints
            else f"expand node {node.id}"
        )
        if node.meta.get(_RESPONSES_TYPE) == "custom_tool_call":
            # Raw input text: the placeholder is the input (a custom call takes any text).
            arguments = _placeholder("input", node.arguments, how)
            keys = ["input"]
        else:
            parsed = node.parsed_arguments
            # Arguments that are no JSON object are sent wrapped (`arguments_object`).
            value: dict[str, JsonValue] = (
                parsed if isinstance(parsed, dict) else {"arguments": node.arguments}
            )
            kept, keys = self._clear_values(value, how)
            if not keys:
                return None
            arguments = json.dumps(kept, ensure_ascii=False)
        record: dict[str, JsonValue] = {"keys": [*keys], "chars": len(node.arguments)}
        meta = {**node.meta, CLEARED_INPUT_KEY: record}
        # The call is sent with other arguments than were signed: its signature goes.
        return replacement_for(node, node.content, arguments=arguments, meta=meta, signature=None)

    def _clear_values(
        self, arguments: dict[str, JsonValue], how: str
    ) -> tuple[dict[str, JsonValue], list[str]]:
        kept: dict[str, JsonValue] = {}
        cleared: list[str] = []
        for key, value in arguments.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            if len(text) > self._options.max_value_chars:
                kept[key] = _placeholder(key, text, how)
                cleared.append(key)
            else:
                kept[key] = value
        return kept, cleared


def _calls(targets: Sequence[Node], ctx: ProcessorContext) -> list[ToolCallNode]:
    """The calls among `targets` and the calls they answer, once each, in order."""
    found: dict[str, ToolCallNode] = {}
    for node in targets:
        call = node if isinstance(node, ToolCallNode) else None
        if call is None and node.id in ctx.graph:
            call = ctx.graph.call_of(node.id)
        if call is not None:
            found.setdefault(call.id, call)
    return list(found.values())


def _placeholder(key: str, text: str, how: str) -> str:
    lines = text.count("\n") + 1
    return f"[{key} cleared: {lines:,} line(s), {len(text):,} characters - {how} to restore]"


register_processor(ToolInputClearer)
