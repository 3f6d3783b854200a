"""`RendererCache`: the manager's one `Renderer` per provider format, kept across calls.

A renderer keeps state worth keeping: its render cache, and how many units it keeps
leaving out under budget pressure (`Renderer.kept_drops`, so the rendered prefix stays
stable). Compaction measures whether a request fits with the same renderer the render
then uses, so both see the same units dropped and the same calibration.

One call's tool set is part of its request, not of the shared renderer: `for_call`
gives a `CallRenderer`, the shared renderer with that call's tools, which compaction
measures with and the render renders with. Nothing shared is changed for a call, so
two calls in flight at once (with different tools) never see each other's.

The cache keeps the state its renderers share and carry from one session to its
resumption (`StateOwner`): `calibration`, how the provider counts (learned from the
usage the manager reports), `renderers`, each format's kept drops, and `cache_marks`,
the units of each format's last request (where its next request's cache marks go).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from pydantic import JsonValue

from context_graph.errors import ConfigurationError
from context_graph.render import FORMATS, Renderer, RenderResult, RenderSource
from context_graph.render.breakpoints import unit_keys
from context_graph.render.tools import ToolSpec
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat
from orchestrator.persistence import state_values

__all__ = ["CallRenderer", "RendererCache", "RequestRenderer"]


class RequestRenderer(Protocol):
    """What compaction measures a request with: a `Renderer`, or one call's `CallRenderer`."""

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tools its requests send unless a render is given others."""

    @property
    def calibrator(self) -> Calibrator | None:
        """How the provider's count differs from ours (`None`: not learned)."""

    @property
    def kept_drops(self) -> int:
        """How many old units renders keep leaving out under pressure."""

    def render(
        self, source: RenderSource, *, budget: int | None = None, tools: Sequence[Any] | None = None
    ) -> RenderResult:
        """The request for `source` under `budget`."""

    def preview(
        self, source: RenderSource, *, budget: int | None = None, tools: Sequence[Any] | None = None
    ) -> RenderResult:
        """`render`'s answer now, with no effect on later renders."""


class CallRenderer:
    """One call's renderer: a shared `Renderer` with this call's tool set.

    The caches and kept drops are the shared renderer's; every render through it sends
    this call's tools unless given its own.

    Args:
        shared: The format's renderer, kept across calls.
        tools: This call's tool definitions.
    """

    __slots__ = ("_shared", "_tools")

    def __init__(self, shared: Renderer, tools: Sequence[ToolSpec]) -> None:
        self._shared = shared
        self._tools = tuple(tools)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The tools this call's requests send."""
        return self._tools

    @property
    def calibrator(self) -> Calibrator | None:
        """The shared renderer's calibrator."""
        return self._shared.calibrator

    @property
    def kept_drops(self) -> int:
        """How many old units the shared renderer keeps leaving out."""
        return self._shared.kept_drops

    def with_tools(self, tools: Sequence[ToolSpec] | None) -> CallRenderer:
        """The same call with another tool set (`None`: this one)."""
        return self if tools is None else CallRenderer(self._shared, tools)

    def render(
        self, source: RenderSource, *, budget: int | None = None, tools: Sequence[Any] | None = None
    ) -> RenderResult:
        """`Renderer.render` with this call's tools unless given others."""
        chosen = self._tools if tools is None else tools
        return self._shared.render(source, budget=budget, tools=chosen)

    def preview(
        self, source: RenderSource, *, budget: int | None = None, tools: Sequence[Any] | None = None
    ) -> RenderResult:
        """`Renderer.preview` with this call's tools unless given others."""
        chosen = self._tools if tools is None else tools
        return self._shared.preview(source, budget=budget, tools=chosen)


class RendererCache:
    """Makes each format's renderer on first use and hands out the same one after.

    Every renderer shares the cache's `calibrator`.

    Args:
        refit_to: The renderers' `refit_to` (the manager's `compact_to`).
        cache_breakpoints: The renderers' `cache_breakpoints`.
        tools: The renderers' `tools`: the tool definitions every request carries (so
            that compaction, measuring with the same renderer, counts them too).
        model: The renderers' `model` (the manager's).
    """

    def __init__(
        self,
        *,
        refit_to: float,
        cache_breakpoints: bool,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
    ) -> None:
        self._calibrator = Calibrator()
        self._tools = tuple(tools)
        self._refit_to = refit_to
        self._cache_breakpoints = cache_breakpoints
        self._model = model
        self._renderers: dict[ProviderFormat, Renderer] = {}

    def get(self, format: ProviderFormat) -> Renderer:
        """The renderer of `format`, made now if this is its first use."""
        renderer = self._renderers.get(format)
        if renderer is None:
            renderer = Renderer(
                format=format,
                calibrator=self._calibrator,
                refit_to=self._refit_to,
                cache_breakpoints=self._cache_breakpoints,
                tools=self._tools,
                model=self._model,
            )
            self._renderers[format] = renderer
        return renderer

    def for_call(
        self, format: ProviderFormat, tools: Sequence[ToolSpec] | None = None
    ) -> CallRenderer:
        """The renderer of `format` for one call, with `tools` (None: the manager's own)."""
        return CallRenderer(self.get(format), self._tools if tools is None else tools)

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The manager's own tool set (every call's, unless it gives its own)."""
        return self._tools

    @property
    def calibrator(self) -> Calibrator:
        """How the provider counts, learned from the usage reported (every renderer's)."""
        return self._calibrator

    def kept_drops(self) -> dict[ProviderFormat, int]:
        """`Renderer.kept_drops` of every renderer made so far, by format in sorted order."""
        return {fmt: renderer.kept_drops for fmt, renderer in sorted(self._renderers.items())}

    def state(self) -> dict[str, JsonValue]:
        """`calibration`, `renderers` and, once marked requests were made, `cache_marks`.

        The calibration's factor and observations; each format's kept drops; the units of
        each format's last request, where its next request's marks go
        (`Renderer.previous_units`).
        """
        calibrator = self._calibrator
        values: dict[str, JsonValue] = {
            "calibration": {"factor": calibrator.factor, "observations": calibrator.observations},
            "renderers": {fmt: kept for fmt, kept in self.kept_drops().items()},
        }
        previous = {fmt: r.previous_units for fmt, r in sorted(self._renderers.items())}
        marks: dict[str, JsonValue] = {
            fmt: [list(unit) for unit in units] for fmt, units in previous.items() if units
        }
        if marks:
            values["cache_marks"] = marks
        return values

    def load(self, values: Mapping[str, Any]) -> None:
        """Take `calibration` and `renderers` from a stored state (raises as `read`)."""
        self.read(values)()

    def read(self, values: Mapping[str, Any]) -> Callable[[], None]:
        """Check `calibration`, `renderers` and `cache_marks` of a stored state.

        Returns what takes them.

        Raises:
            ConfigurationError: a value is out of its range, or names no format (a
                `ValueError`).
        """
        kept: dict[ProviderFormat, int] = {}
        for name, count in state_values.mapping(values.get("renderers", {}), "renderers").items():
            fmt = _format(name, "renderers")
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                msg = f"renderers: the kept drops of {fmt} must be an int >= 0, got {count!r}"
                raise ConfigurationError(msg)
            kept[fmt] = count
        calibrator = self._calibrator
        resumed = None
        if "calibration" in values:
            calibration = state_values.mapping(values["calibration"], "calibration")
            resumed = calibrator.resumable(calibration["factor"], calibration["observations"])

        marks = {
            _format(name, "cache_marks"): unit_keys(units, f"cache_marks: {name}")
            for name, units in state_values.mapping(
                values.get("cache_marks", {}), "cache_marks"
            ).items()
        }

        def take() -> None:
            if resumed is not None:
                calibrator.resume(*resumed)
            for fmt, count in kept.items():
                self.get(fmt).keep_drops(count)
            for fmt, units in marks.items():
                if self._cache_breakpoints:
                    self.get(fmt).resume_previous_units(units)

        return take


def _format(name: str, key: str) -> ProviderFormat:
    """The format `name` names; else the key's value is refused."""
    if name not in FORMATS:
        msg = f"{key}: unknown format {name!r}; use one of {', '.join(FORMATS)}"
        raise ConfigurationError(msg)
    return name
