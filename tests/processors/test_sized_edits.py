"""In a run that compacts to its target, a processor frees what the run needs, not more.

`ProcessorContext.to_free` tells a stage how far over its target the request is. The
truncator then keeps what the run does not need to free of each output (never less than
its own `max_tokens`) and leaves the outputs after the need is met whole; the distiller
stops once the need is met; the history summarizer leaves the newest units of its span
verbatim when the target has room for them beside its brief. Without `to_free` (a manual
run, a node trigger) every processor does what its settings say, as before.
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from processors import ProcessorContext, Replace
from processors.base import Abstract
from processors.distill import Distiller
from processors.summarize import HistorySummarizer
from processors.summarize.room import MESSAGE_OVERHEAD
from processors.truncate import ToolOutputTruncator

CAP = 100


def _log(tag: str, lines: int) -> str:
    return "\n".join(f"{tag} step {n} wrote row {n * 7} of batch {tag}" for n in range(lines))


def _outputs(sizes: list[int]) -> ContextGraph:
    """A request, then one `read` call per size whose output holds about that many words."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user("Import the nightly batches.")
    for index, size in enumerate(sizes):
        call = f"c{index}"
        graph.add_assistant(f"Reading batch {index}.", tool_calls=[{"id": call, "name": "read"}])
        graph.add_tool_result(call, _log(f"b{index}", max(1, size // 8)))
    return graph


def _results(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript() if graph[i].kind == "tool_result"]


def _propose(processor: Any, targets: list[Node], ctx: ProcessorContext) -> Any:
    async def run() -> Any:
        return await processor.propose(targets, ctx)

    return anyio.run(run)


def _freed(proposal: Any, ctx: ProcessorContext) -> int:
    return sum(
        ctx.count(ctx.graph[edit.target]) - ctx.count(edit.replacement)
        for edit in proposal.edits
        if isinstance(edit, Replace)
    )


class TestTruncatorSized:
    def test_a_cut_keeps_what_the_run_does_not_need_to_free(self) -> None:
        graph = _outputs([2_000])
        (output,) = _results(graph)
        ctx = ProcessorContext.for_graph(graph, to_free=300)
        proposal = _propose(ToolOutputTruncator(max_tokens=CAP), [output], ctx)
        (edit,) = proposal.edits
        kept = ctx.count(edit.replacement)
        assert _freed(proposal, ctx) >= 300
        # Far more than the cap is kept: only what the run needs goes.
        assert kept > ctx.count(output) - 300 - 2 * 64 - 40
        assert edit.replacement.meta["truncated"]["max_tokens"] > CAP

    def test_without_a_need_every_output_is_cut_to_the_cap(self) -> None:
        graph = _outputs([2_000, 2_000])
        ctx = ProcessorContext.for_graph(graph)
        proposal = _propose(ToolOutputTruncator(max_tokens=CAP), _results(graph), ctx)
        assert len(proposal.edits) == 2
        assert all(ctx.count(edit.replacement) <= CAP for edit in proposal.edits)

    def test_the_outputs_after_the_need_is_met_are_left_whole(self) -> None:
        graph = _outputs([2_000, 2_000, 2_000])
        ctx = ProcessorContext.for_graph(graph, to_free=500)
        proposal = _propose(ToolOutputTruncator(max_tokens=CAP), _results(graph), ctx)
        first = _results(graph)[0]
        assert [edit.target for edit in proposal.edits] == [first.id]

    @settings(max_examples=40, deadline=None)
    @given(
        sizes=st.lists(st.integers(min_value=50, max_value=1_500), min_size=1, max_size=5),
        need=st.integers(min_value=1, max_value=4_000),
    )
    def test_the_need_is_freed_when_the_caps_allow_and_no_cut_goes_below_the_cap(
        self, sizes: list[int], need: int
    ) -> None:
        graph = _outputs(sizes)
        targets = _results(graph)
        ctx = ProcessorContext.for_graph(graph, to_free=need)
        proposal = _propose(ToolOutputTruncator(max_tokens=CAP), targets, ctx)
        whole = ProcessorContext.for_graph(graph)
        most = _freed(_propose(ToolOutputTruncator(max_tokens=CAP), targets, whole), whole)
        assert _freed(proposal, ctx) >= min(need, most)
        for edit in proposal.edits:
            assert ctx.count(edit.replacement) >= min(CAP // 2, ctx.count(ctx.graph[edit.target]))
        # An output is cut only while the need was not met by the ones before it.
        freed = 0
        for edit in proposal.edits:
            assert freed < need
            freed += ctx.count(ctx.graph[edit.target]) - ctx.count(edit.replacement)


class TestDistillerSized:
    def test_the_targets_after_the_need_is_met_are_left_whole(self) -> None:
        graph = _outputs([1_500, 1_500, 1_500])
        targets = _results(graph)
        whole = ProcessorContext.for_graph(graph, budget=2_000)
        every = _propose(Distiller(level="medium"), targets, whole)
        assert len(every.edits) == 3
        ctx = ProcessorContext.for_graph(graph, budget=2_000, to_free=100)
        sized = _propose(Distiller(level="medium"), targets, ctx)
        assert [edit.target for edit in sized.edits] == [targets[0].id]
        assert _freed(sized, ctx) >= 100


def _history(steps: int) -> ContextGraph:
    """A request, `steps` small tool steps, and a latest user turn."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user("Find why the export of report 42 fails.")
    for index in range(steps):
        call = f"c{index}"
        graph.add_assistant(
            f"Step {index}: listing the export queue.",
            tool_calls=[{"id": call, "name": "bash", "arguments": {"command": f"ls q{index}"}}],
        )
        graph.add_tool_result(call, _log(f"q{index}", 12))
    graph.add_user("Also check the retry job.")
    return graph


def _span(graph: ContextGraph) -> list[Node]:
    """Every unit between the first request and the latest user turn."""
    units = graph.units()
    return [graph[i] for unit in units[2:-1] for i in unit]


class TestSummarySized:
    def test_the_newest_units_stay_when_the_target_has_room_for_them(self) -> None:
        graph = _history(12)
        span = _span(graph)
        total = graph.total_tokens + MESSAGE_OVERHEAD * len(graph.transcript())
        # A target that leaves the newest steps room, well above a whole-span summary.
        target = total - sum(graph.token_cache.count_node(n) for n in span) // 2
        sized = ProcessorContext.for_graph(
            graph, budget=target * 2, target=target, to_free=total - target
        )
        proposal = _propose(HistorySummarizer(), span, sized)
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract)
        taken = set(edit.targets)
        assert span[0].id in taken
        assert span[-1].id not in taken  # the newest step stays verbatim
        # ... and the request lands at the target, not past it.
        kept = [graph[i] for i in graph.transcript() if i not in taken]
        stays = sum(graph.token_cache.count_node(n) + MESSAGE_OVERHEAD for n in kept)
        assert stays + sized.count(edit.summary) <= target

    def test_without_a_need_the_whole_span_is_summarized(self) -> None:
        graph = _history(12)
        span = _span(graph)
        total = graph.total_tokens + MESSAGE_OVERHEAD * len(graph.transcript())
        target = total - sum(graph.token_cache.count_node(n) for n in span) // 2
        ctx = ProcessorContext.for_graph(graph, budget=target * 2, target=target)
        proposal = _propose(HistorySummarizer(), span, ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract)
        assert list(edit.targets) == [n.id for n in span]

    def test_a_tight_target_takes_the_whole_span(self) -> None:
        graph = _history(12)
        span = _span(graph)
        kept = [graph[i] for i in graph.transcript() if i not in {n.id for n in span}]
        # The target leaves no more than a small brief's room beside what stays.
        target = sum(graph.token_cache.count_node(n) + MESSAGE_OVERHEAD for n in kept) + 120
        ctx = ProcessorContext.for_graph(graph, budget=target * 2, target=target, to_free=10_000)
        proposal = _propose(HistorySummarizer(), span, ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract)
        assert list(edit.targets) == [n.id for n in span]
