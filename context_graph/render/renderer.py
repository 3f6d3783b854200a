"""`Renderer`: the graph to a provider request body, under budget, cached.

The work is split so that a render after one new event costs that event: each unit is
turned into provider messages once (cached by its node ids) and its cost counted once;
a render of an unchanged source is returned from cache as the very same result.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import chain
from types import MappingProxyType
from typing import Any

from context_graph.errors import BudgetExceededError, ConfigurationError
from context_graph.formats.wires import DEFAULT_FORMAT
from context_graph.graph.content import ContentPart, TextPart
from context_graph.graph.node_tokens import NodeTokenCache
from context_graph.models import model_limits
from context_graph.render.breakpoints import CacheBreakpoints, Prefix, unit_keys
from context_graph.render.fit import droppable_units, fewest_drops, marker_text
from context_graph.render.fragments import (
    NONE_SIGNED,
    Fragment,
    FragmentCache,
    signed_secrets_kept,
)
from context_graph.render.native import ForeignCompaction
from context_graph.render.provider import (
    LEADING_USER_TEXT,
    AssemblyStats,
    Message,
    ProviderRenderer,
)
from context_graph.render.result import RenderResult
from context_graph.render.running import RunningSums
from context_graph.render.tools import ToolSpec, read_tools, tools_key
from context_graph.render.turns import RenderSource, Turn, UnitTurns
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat, TokenCounter, default_counter

__all__ = ["Renderer"]

_MESSAGES = operator.attrgetter("messages")
_COST = operator.attrgetter("cost")
_CALLS = operator.attrgetter("calls")
_SIGNED = operator.attrgetter("signed_secrets")


@dataclass(frozen=True, slots=True)
class _Attempt:
    payload: dict[str, Any]
    tokens: int
    dropped: tuple[int, ...]
    call_ids: dict[str, str]
    signed: bool
    """Whether any fragment of the base (kept or not) has signed secrets."""
    keys: tuple[tuple[str, ...], ...] = ()
    """The sent units' keys, the marker's included (only with cache marks): what the
    next render's marks compare with, once this attempt is the one sent."""


@dataclass(frozen=True, slots=True)
class _Tools:
    """One tool set as a format's `tools` field (None: no tools, no field)."""

    key: str
    field: list[Message] | None
    marked: list[Message] | None


_NO_TOOLS = _Tools("", None, None)


@dataclass(frozen=True, slots=True)
class _Base:
    """One version of one source, made into fragments; what every budget starts from."""

    source: RenderSource
    version: int
    cache: NodeTokenCache
    fragments: list[Fragment]
    system: list[ContentPart]
    system_key: tuple[str, ...]
    attempts: dict[tuple[str, int], _Attempt]
    """Assemblies by tool set and how many droppable units they leave out."""
    foreign: tuple[ForeignCompaction, ...] = ()
    """Other providers' compactions the render could not send (`Fragments.foreign`)."""


class Renderer:
    """Renders a graph (or a working projection of one) for one provider format.

    Args:
        format: A format's name (a key of `context_graph.formats.registry.PROVIDER_RENDERERS`).
        counter: The token counter for the budget; by default the source graph's own
            (so tokens counted at ingest are reused).
        cache_breakpoints: Mark the prompt cache: the system prompt, the end of the part
            that did not change since this renderer's previous render, and the last
            message (at most 4 marks in all). Only for a format that takes marks
            (`context_graph.formats.registry.CACHE_MARKING_FORMATS`).
        calibrator: Learns how the provider's count differs from ours (feed it with
            `observe_usage`); budgets are then met by the provider's count, not only by
            the local one. Useful for a provider whose tokenizer is not public.
        refit_to: Keep the prompt prefix stable under budget pressure: a render keeps
            leaving out the same units as the previous one while that still fits, and
            when it no longer does, drops down to this share of the budget in one step.
            `None` (the default) leaves out the fewest units every time, which is what a
            stateless caller expects.
        tools: The tool definitions every render sends unless it is given its own
            (`render(tools=...)`), in any shape `read_tools` reads; see `render`.
        model: The model the requests are for. With `cache_breakpoints`, a model whose
            prompt-cache minimum is known (`context_graph.models`) gets a mark only where
            the prefix up to it (tools, system prompt, messages) is that long, counted
            by this renderer (scaled by the calibrator); any other model, every mark.

    Attributes:
        format: The provider format.
        model: The model the requests are for (None: not said).
        provider: The format's `ProviderRenderer` (from `PROVIDER_RENDERERS`), which
            writes and counts the request body; the renderer itself is format-neutral.

    Raises:
        ConfigurationError: an unknown format, breakpoints asked for a format whose
            provider renderer takes no cache marks, or a tool definition `read_tools`
            refuses.
    """

    def __init__(
        self,
        *,
        format: ProviderFormat = DEFAULT_FORMAT,
        counter: TokenCounter | None = None,
        cache_breakpoints: bool = False,
        calibrator: Calibrator | None = None,
        refit_to: float | None = None,
        tools: Sequence[Any] = (),
        model: str | None = None,
    ) -> None:
        # Asked here, not at the top: see `context_graph.formats.registry`.
        from context_graph.formats.registry import (
            CACHE_MARKING_FORMATS,
            FORMAT_NAMES,
            PROVIDER_RENDERERS,
        )

        provider = PROVIDER_RENDERERS.get(format)
        if provider is None:
            msg = f"unknown format {format!r}; expected one of {', '.join(FORMAT_NAMES)}"
            raise ConfigurationError(msg)
        marking = provider.cache_marking
        if cache_breakpoints and marking is None:
            msg = (
                "cache_breakpoints needs a format that takes prompt-cache marks "
                f"({', '.join(CACHE_MARKING_FORMATS)}); format {format!r} takes none"
            )
            raise ConfigurationError(msg)
        self.format: ProviderFormat = format
        self.model = model
        limits = model_limits(model)
        self._cache_min = None if limits is None else limits.cache_min_tokens
        self.provider: ProviderRenderer = provider
        self._counter = counter
        self._breakpoints = (
            CacheBreakpoints(marking) if cache_breakpoints and marking is not None else None
        )
        self.calibrator = calibrator
        if refit_to is not None and not 0 < refit_to <= 1:
            msg = f"refit_to must be in (0, 1], got {refit_to}"
            raise ConfigurationError(msg)
        self._refit_to = refit_to
        self._sticky = 0
        self._fragments = FragmentCache(provider)
        self._sums = RunningSums(keys=self._breakpoints is not None)
        self._fixed_cache: (
            tuple[tuple[tuple[str, ...], str], tuple[list[Message], int, int]] | None
        ) = None
        self._tool_tokens = 0
        self._tools = _NO_TOOLS
        self._default_tools = read_tools(tools)
        self._last_key: tuple[int, int | None, float, str] | None = None
        self._last_source: RenderSource | None = None
        self._last: RenderResult | None = None
        self._token_cache: NodeTokenCache | None = None
        self._base: _Base | None = None

    def render(
        self,
        source: RenderSource,
        *,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
    ) -> RenderResult:
        """Render `source` under `budget` tokens, with `tools` in the request.

        Args:
            source: The graph or working projection to render.
            budget: The most tokens the whole request may take (None: no limit).
            tools: Tool definitions in any shape `read_tools` reads (any format's own, or
                `ToolSpec`), in the order to send them; None: the renderer's
                own (`tools`). They go into the format's `tools` field and their
                tokens count inside `budget`; with none the body has no `tools` field.

        Raises:
            BudgetExceededError: the floor (system, pinned, first request, latest turn
                and after) does not fit; carries `.budget` and `.required`.
            ConfigurationError: a budget that is not a whole, non-negative number of
                tokens; a tool definition `read_tools` refuses.
        """
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 0
        ):
            # A float (99.9, NaN, inf) or a string would fail deep in the fit, or be rounded.
            msg = f"budget must be a non-negative int of tokens or None, got {budget!r}"
            raise ConfigurationError(msg)
        toolset = self._toolset(self._default_tools if tools is None else tools)
        factor = self.calibrator.factor if self.calibrator is not None else 1.0
        key = (source.version, budget, factor, toolset.key)
        if source is self._last_source and key == self._last_key and self._last is not None:
            return self._last
        base = self._base_for(source)
        # With a calibrator, fit to the local count that the provider's count maps to.
        local_budget = None if budget is None else math.floor(budget / factor)
        try:
            result = self._fit_and_assemble(base, local_budget, toolset)
        except BudgetExceededError as exc:
            if budget is None or local_budget == budget:
                raise
            needed = math.ceil(exc.required * factor)
            detail = f"by the calibrated count (factor {factor:.3f})"
            raise BudgetExceededError(budget, needed, detail) from exc
        if local_budget != budget:
            result = dataclasses.replace(result, budget=budget)
        self._last_source, self._last_key, self._last = source, key, result
        return result

    def preview(
        self,
        source: RenderSource,
        *,
        budget: int | None = None,
        tools: Sequence[Any] | None = None,
    ) -> RenderResult:
        """What `render` would return now, leaving this renderer as it was.

        For a caller that weighs a render before it decides what to do (the manager asks
        whether leaving out the preamble would do, then compacts if not): the kept drops,
        the remembered last render and the cache marks' previous units stay, so the
        render that follows is the one `render` alone would make.

        Raises:
            As `render`.
        """
        sticky = self._sticky
        last = (self._last_source, self._last_key, self._last)
        breakpoints = self._breakpoints
        marks = breakpoints.remembered() if breakpoints is not None else ()
        try:
            return self.render(source, budget=budget, tools=tools)
        finally:
            self._sticky = sticky
            self._last_source, self._last_key, self._last = last
            if breakpoints is not None:
                breakpoints.remember(marks)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tool definitions a render sends when it is given none of its own."""
        return self._default_tools

    @tools.setter
    def tools(self, tools: Sequence[Any]) -> None:
        self._default_tools = read_tools(tools)

    def _toolset(self, tools: Sequence[Any]) -> _Tools:
        """`tools` as this format's field, kept while the same tool set comes again."""
        specs = read_tools(tools)
        key = tools_key(specs)
        if key != self._tools.key:
            field = self.provider.render_tools(specs) if specs else None
            marking = self.provider.cache_marking
            marked = (
                marking.mark_tools(field)
                if field is not None and marking is not None and self._breakpoints is not None
                else field
            )
            self._tools = _Tools(key, field, marked)
        return self._tools

    @property
    def kept_drops(self) -> int:
        """How many units the previous render under pressure left out (with `refit_to`).

        The next render keeps leaving out as many while that fits. A session that
        resumes in a new process hands it back with `keep_drops` to go on exactly.
        """
        return self._sticky

    def keep_drops(self, count: int) -> None:
        """Resume `kept_drops` from an earlier renderer of the same session.

        Raises:
            ConfigurationError: `count` is not a non-negative int.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            msg = f"keep_drops: the count must be a non-negative int, got {count!r}"
            raise ConfigurationError(msg)
        self._sticky = count

    @property
    def previous_units(self) -> tuple[tuple[str, ...], ...]:
        """The units (node ids) of the request this renderer last returned.

        The next request's cache marks compare with them; empty without
        `cache_breakpoints`. A session that resumes in a new process (or a worker that
        takes over a shared session) hands them back with `resume_previous_units`, so
        its first request marks where the last one sent ended, as the provider's cache
        holds it.
        """
        return self._breakpoints.remembered() if self._breakpoints is not None else ()

    def resume_previous_units(self, units: Sequence[Sequence[str]]) -> None:
        """Resume `previous_units` from an earlier renderer of the same session.

        Nothing to resume without `cache_breakpoints`: the units are not kept then.

        Raises:
            ConfigurationError: `units` is not a sequence of non-empty sequences of
                non-empty strings.
        """
        checked = unit_keys(units, "resume_previous_units")
        if self._breakpoints is not None:
            self._breakpoints.remember(checked)

    def observe_usage(self, result: RenderResult, prompt_tokens: int) -> float:
        """Tell the calibrator what the provider reported for a rendered request.

        Returns the new correction factor (1.0 without a calibrator).
        """
        if self.calibrator is None:
            return 1.0
        return self.calibrator.observe(result.tokens, prompt_tokens)

    # -- pieces ------------------------------------------------------------------------

    def _base_for(self, source: RenderSource) -> _Base:
        """The fragments of `source` and the assemblies made of them so far.

        Kept while `source` stays at the same version, so that renders of one state under
        several budgets (the manager asks whether the whole view fits, then renders it
        under the budget) share their work.
        """
        cache = self._cache_for(source)
        base = self._base
        if (
            base is not None
            and base.source is source
            and base.version == source.version
            and base.cache is cache
        ):
            if self._breakpoints is not None:
                # The cache marks depend on the previous render: assemble afresh.
                base.attempts.clear()
            return base
        made = self._fragments.fragments_of(source, cache)
        base = _Base(
            source,
            source.version,
            cache,
            made.fragments,
            made.system,
            made.system_key,
            {},
            made.foreign,
        )
        self._base = base
        return base

    def _cache_for(self, source: RenderSource) -> NodeTokenCache:
        own = getattr(source, "token_cache", None)
        if isinstance(own, NodeTokenCache) and self._counter in (None, own.counter):
            return own
        if self._token_cache is None:
            self._token_cache = NodeTokenCache(self._counter or default_counter())
        return self._token_cache

    def _fit_and_assemble(self, base: _Base, budget: int | None, tools: _Tools) -> RenderResult:
        fragments, cache, attempts = base.fragments, base.cache, base.attempts
        system, fixed, lead = self._fixed(base.system, base.system_key, cache, tools)
        droppable: list[int] = []

        def attempt(k: int) -> _Attempt:
            # Attempt k leaves out the first k droppable units; which those are depends
            # on the fragments only, so attempts are shared by every render of the base.
            slot = (tools.key, k)
            if slot not in attempts:
                attempts[slot] = self._attempt(
                    fragments, system, fixed, lead, droppable[:k], cache, tools
                )
            return attempts[slot]

        chosen = attempt(0)
        if budget is not None and chosen.tokens > budget:
            fits = [f.fit for f in fragments]
            droppable.extend(droppable_units(fits))
            marker = self.provider.count_messages(self._marker_messages(len(fits)), cache)

            def fewest(goal: int) -> int:
                return fewest_drops(
                    fits,
                    droppable,
                    budget=goal,
                    bound=fixed + lead + marker,
                    exact=lambda k: attempt(k).tokens,
                )

            chosen = attempt(self._drop_count(len(droppable), budget, fewest, attempt))
        elif budget is not None:
            self._sticky = 0
        if self._breakpoints is not None:
            # The attempt chosen is the render; the others were only weighed.
            self._breakpoints.remember(chosen.keys)
        return RenderResult(
            payload=chosen.payload,
            format=self.format,
            tokens=chosen.tokens,
            tokens_before=attempt(0).tokens,
            budget=budget,
            units=len(fragments),
            dropped=tuple(fragments[i].unit.head for i in chosen.dropped),
            call_ids=MappingProxyType(chosen.call_ids),
            signed_secrets=(
                signed_secrets_kept(fragments, chosen.dropped) if chosen.signed else NONE_SIGNED
            ),
            foreign_compactions=base.foreign,
        )

    def _drop_count(
        self,
        droppable: int,
        budget: int,
        fewest: Callable[[int], int],
        attempt: Callable[[int], _Attempt],
    ) -> int:
        """How many droppable units to leave out.

        Without `refit_to`, the fewest that fit. With it, the previous render's count
        while that still fits (so the prefix, marker included, does not change from turn
        to turn), and when it no longer does, enough to get down to `refit_to` of the
        budget in one step (or at least under the budget).
        """
        if self._refit_to is None:
            return fewest(budget)
        kept = self._sticky
        if 0 < kept <= droppable and attempt(kept).tokens <= budget:
            return kept
        try:
            count = fewest(max(1, math.floor(budget * self._refit_to)))
        except BudgetExceededError:
            count = fewest(budget)
        self._sticky = count
        return count

    def _attempt(
        self,
        fragments: list[Fragment],
        system: list[Message],
        fixed: int,
        lead: int,
        dropped_indices: Sequence[int],
        cache: NodeTokenCache,
        tools: _Tools,
    ) -> _Attempt:
        """Assemble the render that leaves out `dropped_indices`, and size it exactly.

        `dropped_indices` are ascending (`droppable_units`); the marker goes where the
        first of them was. Built in comprehensions, not a loop over the fragments: every
        render assembles the whole view at least once.
        """
        provider = self.provider
        if dropped_indices:
            dropped = set(dropped_indices)
            sent = [f for index, f in enumerate(fragments) if index not in dropped]
            kept = list(map(_MESSAGES, sent))
            # Only cache marks read the keys.
            kept_keys = [f.unit.key for f in sent] if self._breakpoints is not None else []
            costs = list(map(_COST, sent))
            tokens = fixed + sum(costs)
            call_ids = dict(chain.from_iterable(map(_CALLS, sent)))
            signed = any(map(_SIGNED, fragments))
        else:
            # The render of the whole view, once per call: added up from the previous
            # call's sums (`RunningSums`), so that it costs the units that are new.
            sums = self._sums.of(fragments)
            kept, kept_keys, call_ids = sums.units, sums.keys, sums.call_ids
            costs = list(map(_COST, fragments)) if self._cache_min is not None else []
            tokens = fixed + sums.cost
            signed = sums.signed
        if dropped_indices:
            # Every dropped index is at or after the first: the kept before it are as many.
            marker = self._marker_messages(len(dropped_indices))
            kept.insert(dropped_indices[0], marker)
            if self._breakpoints is not None:
                kept_keys.insert(dropped_indices[0], ("marker",))
            marker_cost = provider.count_messages(marker, cache)
            costs.insert(dropped_indices[0], marker_cost)
            tokens += marker_cost
        stats = AssemblyStats()
        prefix = self._prefix(fixed, costs)
        payload = self._assemble(system, kept, kept_keys, stats=stats, prefix=prefix)
        if tools.marked is not None:
            short = prefix is not None and self._tool_tokens < prefix.minimum
            payload["tools"] = tools.field if short else tools.marked
        tokens += self._assembly_delta(stats, lead, cache)
        return _Attempt(payload, tokens, tuple(dropped_indices), call_ids, signed, tuple(kept_keys))

    def _prefix(self, fixed: int, costs: list[int]) -> Prefix | None:
        """How to measure prefixes against the model's cache minimum (None: no minimum)."""
        if self._breakpoints is None or self._cache_min is None:
            return None
        factor = self.calibrator.factor if self.calibrator is not None else 1.0
        # The minimum is in the provider's tokens; the costs are in this renderer's.
        minimum = math.ceil(self._cache_min / factor)
        return Prefix(minimum, fixed, costs, self.provider.overhead.per_message)

    def _assembly_delta(self, stats: AssemblyStats, lead: int, cache: NodeTokenCache) -> int:
        """Tokens that merging, a leading turn and a stripped ending add or save."""
        delta = lead if stats.lead else 0
        delta -= stats.merges * self.provider.overhead.per_message
        if stats.stripped is not None:
            after = [stats.strip_result] if stats.strip_result is not None else []
            delta += self.provider.count_messages(after, cache)
            delta -= self.provider.count_messages([stats.stripped], cache)
        return delta

    def _fixed(
        self,
        parts: list[ContentPart],
        system_key: tuple[str, ...],
        cache: NodeTokenCache,
        tools: _Tools,
    ) -> tuple[list[Message], int, int]:
        """The system part, its tokens with the request overhead and tools, the lead's."""
        key = (system_key, tools.key)
        if self._fixed_cache is not None and self._fixed_cache[0] == key:
            return self._fixed_cache[1]
        system = self.provider.system(parts)
        # The minimal user turn that an empty history, or (in a format that must open
        # with the user) one that opens with the assistant, gets.
        lead_messages = self._user_messages(LEADING_USER_TEXT)
        lead = self.provider.count_messages(lead_messages, cache)
        stats = AssemblyStats()
        empty = self._assemble(system, [], [], marks=False, stats=stats)
        if tools.field is not None:
            empty["tools"] = tools.field
        fixed = self.provider.count_payload(empty, cache) - (lead if stats.lead else 0)
        self._fixed_cache = (key, (system, fixed, lead))
        # The tools' own tokens: the prefix a mark on the last tool ends.
        self._tool_tokens = self.provider.count_tools(tools.field, cache) if tools.field else 0
        return system, fixed, lead

    def _marker_messages(self, dropped: int) -> list[Message]:
        return self._user_messages(marker_text(dropped))

    def _user_messages(self, text: str) -> list[Message]:
        turn = Turn("user", (TextPart(text=text),))
        unit = UnitTurns("synthetic", ("synthetic",), (turn,), (), False, "user")
        return self.provider.unit_messages(unit)

    def _assemble(
        self,
        system: list[Message],
        kept: list[list[Message]],
        keys: list[tuple[str, ...]],
        *,
        marks: bool = True,
        stats: AssemblyStats | None = None,
        prefix: Prefix | None = None,
    ) -> dict[str, Any]:
        if not (marks and self._breakpoints is not None):
            return self.provider.assemble(system, kept, stats)
        return self._breakpoints.assemble(system, kept, keys, stats, prefix)
