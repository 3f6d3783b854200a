"""`RendererCache`: the manager's one `Renderer` per provider format, kept across calls.

A renderer keeps state worth keeping: its render cache, and how many units it keeps
leaving out under budget pressure (`Renderer.kept_drops`, so the rendered prefix stays
stable). Compaction measures whether a request fits with the same renderer the render
then uses, so both see the same units dropped and the same calibration.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from context_graph.render import Renderer
from context_graph.render.tools import ToolSpec
from context_graph.tokens.calibration import Calibrator
from context_graph.tokens.counting import ProviderFormat

__all__ = ["RendererCache"]


class RendererCache:
    """Makes each format's renderer on first use and hands out the same one after.

    Args:
        calibrator: Shared by every renderer (the provider's count, learned from usage).
        refit_to: The renderers' `refit_to` (the manager's `compact_to`).
        cache_breakpoints: The renderers' `cache_breakpoints`.
        tools: The renderers' `tools`: the tool definitions every request carries (so
            that compaction, measuring with the same renderer, counts them too).
        model: The renderers' `model` (the manager's).
    """

    def __init__(
        self,
        calibrator: Calibrator,
        *,
        refit_to: float,
        cache_breakpoints: bool,
        tools: Sequence[ToolSpec] = (),
        model: str | None = None,
    ) -> None:
        self._calibrator = calibrator
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

    @contextmanager
    def tools_for_call(self, tools: Sequence[ToolSpec] | None) -> Iterator[None]:
        """Every renderer sends `tools` (None: its own) until the block ends.

        A render given its own tool set measures, compacts and renders with it; the
        manager's tool set is back for the next call.
        """
        if tools is None:
            yield
            return
        own, self._tools = self._tools, tuple(tools)
        for renderer in self._renderers.values():
            renderer.tools = self._tools
        try:
            yield
        finally:
            self._tools = own
            for renderer in self._renderers.values():
                renderer.tools = own

    def kept_drops(self) -> dict[ProviderFormat, int]:
        """`Renderer.kept_drops` of every renderer made so far, by format in sorted order."""
        return {fmt: renderer.kept_drops for fmt, renderer in sorted(self._renderers.items())}
