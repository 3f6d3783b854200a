"""A summary is sized to the room the view has left, and keeps identifiers before prose.

When the view must shrink to a target, a brief larger than the room left for it makes
the request overflow and the renderer drops the summary whole; these tests pin the room
computation (`summary_room`), the per-call bound of `ExtractiveSummarizer.brief`, and
that a failed output's entities are all listed when there is room for them.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.anchors import SUMMARY_HEADER
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.testing import WordCounter
from processors.base import Abstract, ProcessorContext
from processors.summarize import ExtractiveSummarizer, HistorySummarizer
from processors.summarize.history import summary_room, words_room
from processors.summarize.targets import plan_targets

PATHS = [f"/srv/app/module_{n}/file_{n}.py" for n in range(30)]
HEADER_TOKENS = WordCounter().count(f"{SUMMARY_HEADER}\n\n")
TRACEBACK = "Traceback (most recent call last):\n" + "\n".join(
    f'  File "{path}", line {100 + n}, in handler_{n}' for n, path in enumerate(PATHS)
)


def _call(call_id: str, command: str) -> list[dict[str, Any]]:
    return [{"id": call_id, "name": "bash", "arguments": {"command": command}}]


def session(chatty: int = 0) -> ContextGraph:
    """A request, `chatty` wordy assistant turns, a failed run with a deep traceback, a
    fixed run, and a final step."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user("Fix the crash reported in ticket OPS-4411 for customer acct_99812.")
    for n in range(chatty):
        graph.add_assistant(
            f"I decided to look at part {n} of the service first, because the handlers there "
            "changed last week and the crash started after that deploy went out."
        )
    graph.add_assistant("Running the app.", tool_calls=_call("c1", "python -m app"))
    graph.add_tool_result("c1", "<returncode>1</returncode>\n" + TRACEBACK, is_error=True)
    graph.add_assistant("Patched it; running again.", tool_calls=_call("c2", "python -m app"))
    graph.add_tool_result("c2", "<returncode>0</returncode>\nok")
    graph.add_assistant("Checking the log.", tool_calls=_call("c3", "tail app.log"))
    graph.add_tool_result("c3", "all quiet")
    return graph


def _span(graph: ContextGraph) -> list[Node]:
    """Every unit after the request but the last one."""
    units = graph.units()
    return [graph[i] for unit in units[2:-1] for i in unit]


def _summary(proposal: Any) -> SummaryNode:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    assert isinstance(edit.summary, SummaryNode)
    return edit.summary


class TestBriefBound:
    def test_a_tighter_bound_is_honoured(self) -> None:
        graph = session(chatty=12)
        summarizer = ExtractiveSummarizer(counter=WordCounter())
        wide = summarizer.brief(_span(graph))
        narrow = summarizer.brief(_span(graph), max_tokens=120)
        assert WordCounter().count(wide) > 120
        assert WordCounter().count(narrow) <= 120

    def test_identifiers_outlast_decisions_under_a_tight_bound(self) -> None:
        graph = session(chatty=12)
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_span(graph), max_tokens=150)
        assert "## Key identifiers" in text
        assert "I decided to look at part 0" not in text

    def test_the_bound_never_exceeds_the_summarizers_own(self) -> None:
        graph = session(chatty=12)
        summarizer = ExtractiveSummarizer(max_tokens=100, counter=WordCounter())
        assert WordCounter().count(summarizer.brief(_span(graph), max_tokens=10_000)) <= 100

    @pytest.mark.parametrize("bad", [0, -5, 2.5, "100", True])
    def test_a_bad_bound_is_refused(self, bad: object) -> None:
        with pytest.raises(ConfigurationError, match="max_tokens"):
            ExtractiveSummarizer(counter=WordCounter()).brief(
                _span(session()),
                max_tokens=bad,  # type: ignore[arg-type]
            )

    def test_every_entity_of_a_failed_output_is_listed_when_there_is_room(self) -> None:
        """No per-failure cap: the bound alone decides (a traceback has 30 frames)."""
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_span(session()))
        missing = [path for path in PATHS if path not in text]
        assert missing == []


class TestSummaryRoom:
    def _ctx(self, graph: ContextGraph, **fields: Any) -> ProcessorContext:
        return ProcessorContext.for_graph(graph, **fields)

    def test_no_budget_no_room_limit(self) -> None:
        graph = session()
        plan = plan_targets("summarize", _span(graph), self._ctx(graph))
        assert not isinstance(plan, str)
        assert summary_room(plan, self._ctx(graph)) is None

    def test_room_is_the_target_less_what_stays(self) -> None:
        graph = session(chatty=12)
        span = _span(graph)
        ctx = self._ctx(graph, budget=2_000, target=400)
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        taken = {node.id for node in span}
        stays = [graph[i] for unit in graph.units() for i in unit if i not in taken]
        room = summary_room(plan, ctx)
        assert room is not None
        # What stays and the summary, with every message's wrapping and the header the
        # summary is rendered under, land on the target.
        wrapped = sum(graph.tokens(n.id) + 8 for n in stays) + 8 + HEADER_TOKENS
        assert room == 400 - wrapped < plan.tokens_before - 1

    def test_room_falls_back_to_the_budget_when_what_stays_fills_the_target(self) -> None:
        graph = session(chatty=12)
        span = _span(graph)
        stays = sum(graph.tokens(i) for unit in graph.units() for i in unit) - sum(
            graph.tokens(n.id) for n in span
        )
        ctx = self._ctx(graph, budget=stays + 400, target=stays // 2)
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        room = summary_room(plan, ctx)
        assert room is not None
        taken = {node.id for node in span}
        wrapped = sum(graph.tokens(i) + 8 for unit in graph.units() for i in unit if i not in taken)
        # 60% of what the budget leaves: the next turn must fit without another summary.
        assert room == int((stays + 400 - wrapped - 8 - HEADER_TOKENS) * 0.6)

    def test_room_is_below_what_the_summary_replaces(self) -> None:
        graph = session()
        span = _span(graph)
        ctx = self._ctx(graph, budget=1_000_000, target=900_000)
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        assert summary_room(plan, ctx) == plan.tokens_before - 1

    async def test_the_summary_fits_the_room_and_keeps_the_request_under_budget(self) -> None:
        graph = session(chatty=12)
        span = _span(graph)
        total = sum(graph.tokens(i) for unit in graph.units() for i in unit)
        budget = total - 100  # over budget by a little: the summary must be small
        ctx = self._ctx(graph, budget=budget, target=int(budget * 0.9))
        proposal = await HistorySummarizer().propose(span, ctx)
        summary = _summary(proposal)
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        room = summary_room(plan, ctx)
        assert room is not None
        assert graph.token_cache.count_node(summary) <= room
        # The identifiers of the failed run survive a tight room; the prose does not.
        assert PATHS[-1] in summary.text


def chat(turns: int) -> ContextGraph:
    """A long system prompt, then a chat of wordy user messages and short replies."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("Follow the airline policy. " * 120)
    for n in range(turns):
        graph.add_user(
            f"Request {n}: please change reservation RES{n:04d} to the cheapest business fare "
            "on the same dates, keep the same passengers, and pay with certificate CERT-{n}."
        )
        graph.add_assistant(f"I need the user id for RES{n:04d} before I can change it.")
    graph.add_user("Here is my user id: sofia_kim_7287.")
    return graph


class TestUserWordsAndTheBudget:
    """The user's words may take a summary past the target, never past the budget: a
    summary over what the budget leaves is dropped whole by the renderer."""

    def _kept(self, graph: ContextGraph, span: list[Node]) -> int:
        """What stays beside the summary, and the summary's own wrapping and header."""
        taken = {node.id for node in span}
        stays = sum(graph.tokens(i) + 8 for unit in graph.units() for i in unit if i not in taken)
        return stays + 8 + HEADER_TOKENS

    @given(turns=st.integers(3, 12), slack=st.integers(64, 400))
    @settings(max_examples=40, deadline=None)
    def test_the_room_is_never_more_than_the_budget_leaves(self, turns: int, slack: int) -> None:
        graph = chat(turns)
        span = [graph[i] for unit in graph.units()[2:-1] for i in unit]
        budget = self._kept(graph, span) + slack
        ctx = ProcessorContext.for_graph(graph, budget=budget, target=int(budget * 0.7))
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        room = summary_room(plan, ctx)
        assert room is not None and room <= slack

    def test_the_words_alone_would_claim_more(self) -> None:
        """The case the cap is for: the words' share of the budget is past what it leaves."""
        graph = chat(8)
        span = [graph[i] for unit in graph.units()[2:-1] for i in unit]
        budget = self._kept(graph, span) + 100
        ctx = ProcessorContext.for_graph(graph, budget=budget, target=int(budget * 0.7))
        plan = plan_targets("summarize", span, ctx)
        assert not isinstance(plan, str)
        assert words_room(plan, ctx) > 100 == summary_room(plan, ctx)
