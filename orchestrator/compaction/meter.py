"""`RequestMeter`: how big the working view's request is, as a renderer makes it.

Every decision of a compaction is a question about the request's size: does it fit the
budget, how far over the target is it, how much content must a stage take to bring it
there. The request is rendered once per version of the working view and calibrated to
the provider's count (`calibrated`): a sized stage reads the excess before it runs and
the run checks the fit after, and both read the same figure while no proposal landed in
between.
"""

from __future__ import annotations

from orchestrator.compaction.renderers import RequestRenderer
from orchestrator.working import WorkingGraph

__all__ = ["RequestMeter", "calibrated"]


def calibrated(renderer: RequestRenderer, tokens: int) -> int:
    """`tokens` as the provider counts them, by the renderer's calibrator (if it has one)."""
    calibrator = renderer.calibrator
    return tokens if calibrator is None else calibrator.apply(tokens)


class RequestMeter:
    """The working view's request size, rendered once per view version.

    Args:
        working: The working graph whose view is measured.
    """

    def __init__(self, working: WorkingGraph) -> None:
        self._working = working
        self._measured: tuple[RequestRenderer, int, int] | None = None
        """(renderer, view version, tokens) of the last request measured."""

    def forget(self) -> None:
        """Measure afresh next time (a run taken back may leave a version number reused)."""
        self._measured = None

    def tokens(self, renderer: RequestRenderer) -> int:
        """The working view's request by `renderer`, calibrated."""
        version = self._working.version
        measured = self._measured
        if measured is None or measured[0] is not renderer or measured[1] != version:
            measured = (renderer, version, renderer.preview(self._working).tokens)
            self._measured = measured
        return calibrated(renderer, measured[2])

    def excess(self, renderer: RequestRenderer, target: int) -> int:
        """How many content tokens the working view must lose to fit `target` rendered.

        The request's excess (rendered and calibrated) in the view's content tokens, by
        their share of the request: a stage takes nodes by their content, and each one
        it takes also frees the framing the request spends on it.
        """
        request = self.tokens(renderer)
        if request <= target:
            return request - target
        return -(-(request - target) * self._working.total_tokens // request)

    def over(self, renderer: RequestRenderer, target: int) -> int:
        """How many tokens the working view's request, rendered and calibrated, is over `target`."""
        return self.tokens(renderer) - target

    def fits(self, renderer: RequestRenderer, budget: int | None) -> bool:
        """Whether the working view, rendered by `renderer` and calibrated, fits `budget`."""
        return budget is not None and self.tokens(renderer) <= budget
