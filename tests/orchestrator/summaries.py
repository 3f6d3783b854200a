"""A checked summary applied straight to a manager's working graph, for tests that need
a view in which given nodes were summarized (no summarizer, no pipeline run)."""

from __future__ import annotations

from collections.abc import Sequence

from context_graph.graph.content import TextPart
from context_graph.graph.nodes import SummaryNode
from orchestrator.manager import ContextManager
from processors import Abstract, Proposal


def apply_summary(
    manager: ContextManager,
    ids: Sequence[str],
    text: str,
    *,
    summary_id: str = "summary-test",
    processor: str = "test",
) -> None:
    """Abstract `ids` into one summary of `text`, through the invariant checker."""
    view = manager.working.snapshot()
    targets = tuple(ids)
    summary = SummaryNode(
        id=summary_id,
        content=(TextPart(text=text),),
        abstracts=targets,
        meta={"checked": True},
    )
    count = view.token_cache.count_node
    manager.working.apply(
        Proposal(
            processor=processor,
            edits=(Abstract(targets=targets, summary=summary),),
            tokens_before=sum(count(view[i]) for i in targets),
            tokens_after=count(summary),
            base_version=view.version,
        )
    )
