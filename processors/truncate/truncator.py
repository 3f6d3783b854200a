"""`ToolOutputTruncator`: head + tail of long tool outputs, with an explicit omission marker."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import partial
from typing import ClassVar, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from context_graph.errors import ConfigurationError
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.nodes import AnswerNode, Node
from context_graph.tokens.counting import SeamCounter
from processors.base import (
    ProcessorContext,
    Proposal,
    Scope,
    replace_each,
    replacement_for,
    while_needed,
)
from processors.pieces import Seams
from processors.registry import register_processor
from processors.rulers import shrink_rulers
from processors.truncate.fit import Budget, Layout, Policy, fit_layout
from processors.truncate.json_values import fit_json, parse_json
from processors.truncate.markup import balance, depths, detect_markup
from processors.truncate.memo import remembered_cut
from processors.truncate.units import split_units

__all__ = ["POLICIES", "OutputFormat", "ToolOutputTruncator", "Truncation", "truncate_text"]

OutputFormat: TypeAlias = Literal["text", "markup", "json"]

#: A cut sized to the run's need keeps a multiple of this many tokens.
_KEEP_STEP = 64

#: The policies a tool can be given.
POLICIES: tuple[Policy, ...] = ("head", "tail", "head_tail", "errors_first")


@dataclass(frozen=True)
class Truncation:
    """A truncated text and how it was cut.

    Attributes:
        text: The truncated text; within the budget it was made for.
        format: `json` (still valid JSON), `markup` (cut at element boundaries) or `text`
            (cut at line ends, or inside an over-long line at a character boundary).
        pieces: `text` in the pieces the search counted it by (they join to `text`),
            for a line or element cut; empty for JSON, and when shrinking rulers was
            enough. Not part of equality.
        shrunk: How many rulers were shrunk first (`processors.rulers`).
    """

    text: str
    format: OutputFormat
    pieces: tuple[str, ...] = field(default=(), compare=False, repr=False)
    shrunk: int = 0


def truncate_text(
    text: str,
    *,
    count: Callable[[str], int],
    max_tokens: int,
    max_bytes: int | None = None,
    policy: Policy = "head_tail",
    context_lines: int = 2,
    tokens: int | None = None,
    seams: Callable[[str, str], bool] | None = None,
    piece_count: Callable[[str], int] | None = None,
) -> Truncation | None:
    """Cut `text` down to `max_tokens` tokens (and `max_bytes` UTF-8 bytes, if given).

    Returns `None` when `text` already fits, or when not even an omission marker fits.
    A text over the limits first has the rulers that cost tokens shrunk
    (`processors.rulers`: a test runner's box-drawing rules); the cut, if one is still
    needed, is of the shrunk text.

    Args:
        text: The text to cut.
        count: Counts the tokens of a text (e.g. `ctx.tokens.count_text`).
        max_tokens: The most tokens the result may have.
        max_bytes: The most UTF-8 bytes the result may have, if limited.
        policy: Which lines to keep: `head`, `tail`, `head_tail` or `errors_first`.
        context_lines: Lines kept around each error line by `errors_first`.
        tokens: `count(text)`, when already known (saves counting it again).
        seams: Where the counter's tokenizer never merges across
            (`SeamCounter.is_seam`); candidates are then counted piece by piece, with
            the same results, faster.
        piece_count: Counts the pieces of line or element cuts (`count` when `None`):
            the same numbers, but a caching count (`NodeTokenCache.count_text`) then
            knows the pieces of the result (`Truncation.pieces`). Whole JSON candidates
            are counted with `count`, so that they do not fill a cache.
    """
    budget = Budget(max_tokens=max_tokens, max_bytes=max_bytes, count=count)
    if tokens is None:
        tokens = count(text)
    if tokens <= max_tokens and budget.fits_bytes(text):
        return None
    text, shrunk = shrink_rulers(text, count)
    if shrunk:
        tokens = count(text)
    value = parse_json(text)
    if value is not None:
        if shrunk and tokens <= max_tokens and budget.fits_bytes(text):
            return Truncation(text, "json", shrunk=shrunk)
        shortened = fit_json(text, value, budget)
        return None if shortened is None else Truncation(shortened, "json", shrunk=shrunk)
    fmt: Literal["text", "markup"] = "markup" if detect_markup(text) else "text"
    if shrunk and tokens <= max_tokens and budget.fits_bytes(text):
        return Truncation(text, fmt, shrunk=shrunk)
    units = split_units(text, fmt, chunk_chars=max(8, budget.chars // 32))
    adjust = None
    if fmt == "markup":
        levels = depths(units)
        adjust = partial(balance, levels=levels)
    layout = Layout(text, units, piece_count or count, seams, tokens)
    kept = fit_layout(layout, policy, budget, context=context_lines, adjust=adjust)
    if kept is None:
        return None
    pieces = tuple(layout.render_pieces(kept, exact=True))
    return Truncation("".join(pieces), fmt, pieces, shrunk)


class _Options(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    max_tokens: int = Field(2_000, ge=32)
    max_bytes: int | None = Field(None, ge=128)
    default_policy: Policy = "head_tail"
    policies: dict[str, Policy] = Field(default_factory=dict)
    context_lines: int = Field(2, ge=0, le=50)


def _validate(options: dict[str, object]) -> _Options:
    try:
        return _Options.model_validate(options)
    except ValidationError as exc:
        problems = "; ".join(
            f"`{'.'.join(str(p) for p in error['loc']) or 'options'}`: {error['msg']}"
            for error in exc.errors()
        )
        msg = (
            f"ToolOutputTruncator: {problems} (max_tokens >= 32, max_bytes >= 128, "
            f"context_lines in 0..50, policies one of {', '.join(POLICIES)})"
        )
        raise ConfigurationError(msg) from None


class ToolOutputTruncator:
    """Keeps the head and / or tail of long tool outputs, file reads and sub-agent answers.

    A target whose text is over `max_tokens` (or `max_bytes`) is replaced by a copy cut
    to fit as closely as line (or element) granularity allows, with one marker per
    omitted run saying how many lines and tokens it held. JSON stays valid JSON. Images
    and other non-text parts are kept; the call id, tool name and error flag too.
    Pinned nodes and kinds that answer no tool are left alone.

    Args:
        max_tokens: Token target for a node's text (default 2,000; at least 32).
        max_bytes: Optional UTF-8 size target as well (at least 128).
        default_policy: Policy for tools not named in `policies` (default `head_tail`).
        policies: Tool name or glob (`mcp__*`) to policy; exact names win over globs,
            then globs in the order given.
        context_lines: Lines kept around each error line by `errors_first` (default 2).
    """

    name = "truncate"
    scope: ClassVar[Scope] = "outputs"

    def __init__(
        self,
        *,
        max_tokens: int = 2_000,
        max_bytes: int | None = None,
        default_policy: Policy = "head_tail",
        policies: Mapping[str, Policy] | None = None,
        context_lines: int = 2,
    ) -> None:
        self._options = _validate(
            {
                "max_tokens": max_tokens,
                "max_bytes": max_bytes,
                "default_policy": default_policy,
                "policies": dict(policies or {}),
                "context_lines": context_lines,
            }
        )

    def policy_for(self, tool: str | None) -> Policy:
        """The policy applied to the output of `tool`."""
        options = self._options
        if tool is not None:
            if tool in options.policies:
                return options.policies[tool]
            for pattern, policy in options.policies.items():
                if fnmatchcase(tool, pattern):
                    return policy
        return options.default_policy

    @property
    def max_tokens(self) -> int:
        """The token target for a node's text."""
        return self._options.max_tokens

    def resized(self, max_tokens: int) -> ToolOutputTruncator:
        """The same truncator (policies, byte limit, context) with another token target.

        Raises:
            ConfigurationError: `max_tokens` below 32 or not an int.
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            msg = f"ToolOutputTruncator.resized: `max_tokens` must be an int, got {max_tokens!r}"
            raise ConfigurationError(msg)
        options = self._options.model_dump()
        options["max_tokens"] = max_tokens
        copy = ToolOutputTruncator.__new__(ToolOutputTruncator)
        copy._options = _validate(options)
        return copy

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        """Propose a truncated copy of every target over the limits.

        In a run that compacts to its target (`ctx.to_free`), a cut keeps what the run
        does not need to free (never less than `max_tokens`), oldest target first, and
        the targets after the need is met are left whole.
        """
        limit = self._options.max_tokens
        counter = ctx.tokens.counter
        seams = counter.is_seam if isinstance(counter, SeamCounter) else None  # a slow check
        sized = "" if ctx.to_free is None else f", or to what {ctx.to_free:,} to free left"
        return replace_each(
            self.name,
            ctx,
            while_needed(targets, ctx, lambda node, need: self._truncated(node, ctx, seams, need)),
            note=lambda edits, _before, _after: (
                f"truncated {edits} of {len(targets)} output(s) to {limit:,} tokens{sized}"
            ),
        )

    def _truncated(
        self, node: Node, ctx: ProcessorContext, seams: Seams | None, need: int | None = None
    ) -> Node | None:
        if not isinstance(node, AnswerNode) or node.pinned or not node.text:
            return None
        options = self._options
        policy = self.policy_for(node.name)
        hint = ctx.expand_hint(node.id, "the whole output")
        # The hint counts in the target, and a piece cut again says it once.
        source = ctx.without_hint(node.text)
        tokens = ctx.tokens
        limit = options.max_tokens
        if need is not None:
            # Keep all the run does not need to free: the budget's room is content kept.
            # Rounded down to a step, so that the next run's cut of the same output (a
            # proposal that waited) is the same, and the memo serves it.
            spare = (tokens.count_text(source) - need) // _KEEP_STEP * _KEEP_STEP
            limit = max(limit, spare)
        if hint is not None:
            limit = max(limit - ctx.tokens.count_text(f"\n{hint}"), limit // 2)
        key = (source, limit, options.max_bytes, policy, options.context_lines)
        cut = remembered_cut(
            tokens,
            key,
            lambda: truncate_text(
                source,
                count=tokens.counter.count,
                max_tokens=limit,
                max_bytes=options.max_bytes,
                policy=policy,
                context_lines=options.context_lines,
                tokens=tokens.count_text(source),
                seams=seams,
                piece_count=tokens.count_text,
            ),
        )
        if cut is None:
            return None
        # The search counted the cut's pieces through the cache: counting the cut from
        # them now (the cache proves the seams) makes the count of the new node, by
        # `replace_each` and the invariant checker, a cache hit instead of an encode.
        if cut.pieces:
            ctx.tokens.count_pieces(cut.pieces)
        record: dict[str, object] = {"policy": policy, "format": cut.format, "max_tokens": limit}
        if cut.shrunk:
            record["shrunk_rulers"] = cut.shrunk
        meta = {**node.meta, "truncated": record}
        text = cut.text if hint is None else f"{cut.text}\n{hint}"
        return replacement_for(node, _with_text(node.content, text), meta=meta)


def _with_text(content: Sequence[ContentPart], text: str) -> list[ContentPart]:
    """`content` with its text parts replaced by one part holding `text`, where the first was."""
    parts: list[ContentPart] = []
    placed = False
    for part in content:
        if not isinstance(part, TextPart):
            parts.append(part)
        elif not placed:
            parts.append(TextPart(text=text))
            placed = True
    return parts


register_processor(ToolOutputTruncator)
