from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node, SummaryNode, UserNode
from context_graph.testing import WordCounter, graph_snapshot
from processors.base import Abstract, ProcessorContext, Proposal, replacement_for
from processors.registry import get_processor
from processors.summarize import ExtractiveSummarizer, HistorySummarizer
from processors.summarize.checks import find_tool_call_syntax, required_entities

REQUEST = "Fix ticket ABC-1234 in src/app/main.py. You must never touch the prod database."
GOOD = "The user asked to fix ABC-1234 in src/app/main.py; tests pass now."


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def build_session(extra_turns: int = 0) -> ContextGraph:
    """System, request, four tool units, a later request, an answer, then extra turns."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user(REQUEST)
    graph.add_assistant(
        "I'll read it.", tool_calls=[_call("c1", "Read", file_path="src/app/main.py")]
    )
    graph.add_file_read("src/app/main.py", "def main():\n    return 1\n" * 20, call_id="c1")
    graph.add_assistant(tool_calls=[_call("c2", "bash", command="pytest -x")])
    graph.add_tool_result("c2", "<returncode>1</returncode>\nAssertionError: expected 2" * 5)
    graph.add_assistant(
        "I decided to return 2.",
        tool_calls=[
            _call("c3", "Edit", file_path="src/app/main.py", old_string="1", new_string="2")
        ],
    )
    graph.add_tool_result("c3", "The file src/app/main.py has been updated.")
    graph.add_assistant(tool_calls=[_call("c4", "bash", command="pytest -x")])
    graph.add_tool_result("c4", "<returncode>0</returncode>\n" + "test passed\n" * 20)
    graph.add_user("Now update CHANGELOG.md for release v2.3.1 please.")
    graph.add_assistant("Editing CHANGELOG.md next; the entry will mention ABC-1234.")
    for n in range(extra_turns):
        graph.add_user(f"Step {n}: also bump version to 2.4.{n} in setup.cfg.")
        graph.add_assistant(f"Bumped to 2.4.{n} as asked, then ran the whole test suite again.")
    return graph


def units_nodes(graph: ContextGraph, start: int, stop: int) -> list[Node]:
    """Every node of units[start:stop], in order."""
    return [graph[i] for unit in graph.units()[start:stop] for i in unit]


def _tokens(graph: ContextGraph, nodes: Sequence[Node]) -> int:
    return sum(graph.tokens(n.id) for n in nodes)


def _edit(proposal: Proposal) -> Abstract:
    (edit,) = proposal.edits
    assert isinstance(edit, Abstract)
    return edit


class ScriptedSummarizer:
    """Answers from a script (text, an exception to raise, or a coroutine function)."""

    name = "scripted"

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    async def summarize(
        self, nodes: Sequence[Node], *, previous: str | None, instructions: str | None
    ) -> str:
        self.calls.append(
            {"nodes": list(nodes), "previous": previous, "instructions": instructions}
        )
        answer = self.answers.pop(0) if self.answers else GOOD
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            result: str = await answer(nodes=nodes, previous=previous, instructions=instructions)
            return result
        assert isinstance(answer, str)
        return answer


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return build_session()


def _ctx(graph: ContextGraph, **fields: Any) -> ProcessorContext:
    return ProcessorContext.for_graph(graph, **fields)


def _processor(**options: Any) -> HistorySummarizer:
    options.setdefault("fallback", ExtractiveSummarizer(counter=WordCounter()))
    return HistorySummarizer(**options)


class TestOptions:
    @pytest.mark.parametrize(
        "options",
        [
            {"timeout": 0},
            {"timeout": -1.0},
            {"timeout": "fast"},
            {"window_tokens": 0},
            {"window_tokens": 1.5},
            {"keep": "ABC-1234"},
            {"keep": [""]},
            {"max_entities": -1},
            {"entities_per_turn": True},
            {"summarizer": object()},
            {"fallback": ScriptedSummarizer()},
        ],
    )
    def test_bad_options_are_refused(self, options: dict[str, Any]) -> None:
        """Each bad option raises ConfigurationError naming the processor."""
        with pytest.raises(ConfigurationError, match="HistorySummarizer"):
            HistorySummarizer(**options)

    def test_registered_by_name(self) -> None:
        """The processor is available from the registry as `summarize`."""
        assert get_processor("summarize") is HistorySummarizer


class TestTargets:
    async def test_empty_targets(self, graph: ContextGraph) -> None:
        """No targets: an empty proposal that says so."""
        proposal = await _processor().propose([], _ctx(graph))
        assert proposal.empty and proposal.note == "refused: no targets"
        assert proposal.base_version == graph.version

    async def test_pinned_targets_are_refused(self, graph: ContextGraph) -> None:
        """A run that includes the pinned system prompt is refused."""
        proposal = await _processor().propose(units_nodes(graph, 0, 3), _ctx(graph))
        assert proposal.empty and "pinned" in proposal.note

    async def test_split_unit_is_refused(self, graph: ContextGraph) -> None:
        """Leaving a tool result out of its unit is refused."""
        nodes = units_nodes(graph, 1, 4)[:-1]
        proposal = await _processor().propose(nodes, _ctx(graph))
        assert proposal.empty and "split unit" in proposal.note

    async def test_out_of_order_is_refused(self, graph: ContextGraph) -> None:
        """Units given in the wrong order are refused."""
        nodes = units_nodes(graph, 3, 4) + units_nodes(graph, 1, 3)
        proposal = await _processor().propose(nodes, _ctx(graph))
        assert proposal.empty and "transcript order" in proposal.note

    async def test_unknown_nodes_are_refused(self, graph: ContextGraph) -> None:
        """A node that is not in the graph is refused."""
        stranger = UserNode(id="nowhere", content=(TextPart(text="hi"),), seq=99)
        proposal = await _processor().propose([stranger], _ctx(graph))
        assert proposal.empty and "not in the graph" in proposal.note

    async def test_replacement_stands_for_its_original(self, graph: ContextGraph) -> None:
        """A masked copy of a result counts as the node it replaces."""
        nodes = units_nodes(graph, 1, 4)
        masked = replacement_for(nodes[-1], [TextPart(text="[output cleared]")])
        graph.add_derived(masked)
        proposal = await _processor().propose([*nodes[:-1], masked], _ctx(graph))
        assert _edit(proposal).targets[-1] == masked.id

    async def test_already_summarized_is_refused(self, graph: ContextGraph) -> None:
        """Nodes that a summary of this processor already abstracts are refused."""
        nodes = units_nodes(graph, 1, 6)
        first = await _processor().propose(nodes, _ctx(graph))
        graph.add_derived(_edit(first).summary)
        again = await _processor().propose(nodes, _ctx(graph))
        assert again.empty and "already summarized" in again.note


class TestProposal:
    async def test_shape_lineage_and_tokens(self, graph: ContextGraph) -> None:
        """One Abstract edit: a summary node with lineage, origin, meta and exact token counts."""
        nodes = units_nodes(graph, 1, 6)
        before = graph_snapshot(graph)
        proposal = await _processor().propose(nodes, _ctx(graph))
        edit = _edit(proposal)
        summary = edit.summary
        assert isinstance(summary, SummaryNode)
        assert edit.targets == summary.abstracts == tuple(n.id for n in nodes)
        assert summary.origin == "summarize" and summary.seq is None
        assert summary.meta["summarizer"] == "extractive"
        assert summary.meta["entities"] == required_entities(nodes)
        assert proposal.tokens_before == _tokens(graph, nodes)
        assert proposal.tokens_after == len(summary.text.split()) < proposal.tokens_before
        assert proposal.processor == "summarize" and proposal.note == "extractive"
        assert graph_snapshot(graph) == before

    async def test_same_input_same_summary(self, graph: ContextGraph) -> None:
        """The proposal is deterministic, ids included."""
        nodes = units_nodes(graph, 1, 6)
        a = await _processor().propose(nodes, _ctx(graph))
        b = await _processor().propose(nodes, _ctx(graph))
        assert a == b

    async def test_summary_can_be_added_to_the_graph(self, graph: ContextGraph) -> None:
        """The summary is a valid derived node linked to every node it abstracts."""
        nodes = units_nodes(graph, 1, 6)
        summary = _edit(await _processor().propose(nodes, _ctx(graph))).summary
        graph.add_derived(summary)
        assert set(graph.targets(summary.id, "derived_from")) == {n.id for n in nodes}

    async def test_growing_summary_is_not_proposed(self) -> None:
        """A span too small to shrink gives an empty proposal, never a larger context."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("hi")
        proposal = await _processor().propose(units_nodes(graph, 0, 1), _ctx(graph))
        assert proposal.empty and "not shorter" in proposal.note


class TestModelPath:
    async def test_good_candidate_is_committed(self, graph: ContextGraph) -> None:
        """A candidate that passes every check is committed as the model wrote it."""
        model = ScriptedSummarizer(GOOD)
        proposal = await _processor(summarizer=model).propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert _edit(proposal).summary.text == GOOD
        assert proposal.note == "model ok (scripted)"
        assert _edit(proposal).summary.meta["path"] == "model"

    async def test_context_summarizer_is_used(self, graph: ContextGraph) -> None:
        """Without a summarizer option, the context's summarizer writes the candidate."""
        model = ScriptedSummarizer(GOOD)
        proposal = await _processor().propose(
            units_nodes(graph, 1, 6), _ctx(graph, summarizer=model)
        )
        assert proposal.note == "model ok (scripted)" and len(model.calls) == 1

    async def test_instructions_pass_through(self, graph: ContextGraph) -> None:
        """The user's instructions reach the summarizer, with the entities to keep."""
        model = ScriptedSummarizer(GOOD)
        ctx = _ctx(graph, instructions="focus on the database migration")
        await _processor(summarizer=model).propose(units_nodes(graph, 1, 6), ctx)
        instructions = model.calls[0]["instructions"]
        assert instructions.startswith("focus on the database migration")
        assert "ABC-1234" in instructions

    async def test_garbled_identifier_is_retried_with_its_name(self, graph: ContextGraph) -> None:
        """ABC-1234 written as ABC-1243 is refused; the retry names it and is committed."""
        model = ScriptedSummarizer(GOOD.replace("ABC-1234", "ABC-1243"), GOOD)
        proposal = await _processor(summarizer=model).propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert _edit(proposal).summary.text == GOOD
        assert proposal.note.startswith("retry ok (scripted; first candidate: dropped ABC-1234")
        retry = model.calls[1]["instructions"]
        assert "rejected" in retry and "ABC-1234" in retry.split("rejected", 1)[1]

    async def test_two_bad_candidates_fall_back(self, graph: ContextGraph) -> None:
        """Two refused candidates: the extractive brief is committed instead."""
        bad = GOOD.replace("ABC-1234", "ABC-1243")
        model = ScriptedSummarizer(bad, bad)
        nodes = units_nodes(graph, 1, 6)
        proposal = await _processor(summarizer=model).propose(nodes, _ctx(graph))
        summary = _edit(proposal).summary
        assert summary.text == ExtractiveSummarizer(counter=WordCounter()).brief(
            nodes, keep=required_entities(nodes)
        )
        assert "ABC-1234" in summary.text
        assert proposal.note.startswith("fallback to extractive (scripted: refused twice")
        assert summary.meta["summarizer"] == "extractive" and summary.meta["path"] == "fallback"

    async def test_tool_call_syntax_is_refused(self, graph: ContextGraph) -> None:
        """A candidate that imitates a tool call is refused, and the retry says why."""
        model = ScriptedSummarizer(GOOD + '\nbash(command="pytest -x")', GOOD)
        proposal = await _processor(summarizer=model).propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert "tool-call syntax" in proposal.note
        assert "plain prose" in model.calls[1]["instructions"]

    async def test_not_shorter_is_refused(self, graph: ContextGraph) -> None:
        """A candidate longer than the span falls back after its retry."""
        nodes = units_nodes(graph, 1, 6)
        long = GOOD + " padding" * _tokens(graph, nodes)
        proposal = await _processor(summarizer=ScriptedSummarizer(long, long)).propose(
            nodes, _ctx(graph)
        )
        assert "not shorter" in proposal.note and "fallback" in proposal.note

    async def test_pinned_facts_must_survive(self, graph: ContextGraph) -> None:
        """A pinned fact the candidate leaves out is named in the retry."""
        fact = "prod is read-only"
        model = ScriptedSummarizer(GOOD, f"{GOOD} Note: {fact}.")
        processor = _processor(summarizer=model, keep=[fact])
        proposal = await processor.propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert fact in _edit(proposal).summary.text
        assert fact in model.calls[1]["instructions"]
        assert _edit(proposal).summary.meta["pinned_facts"] == [fact]

    async def test_raising_summarizer_never_becomes_the_summary(self, graph: ContextGraph) -> None:
        """An exception falls back; its text is in the note, never in the summary."""
        model = ScriptedSummarizer(RuntimeError("upstream said: quota exhausted"))
        proposal = await _processor(summarizer=model).propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert "quota exhausted" not in _edit(proposal).summary.text
        assert "RuntimeError: upstream said: quota exhausted" in proposal.note

    async def test_timeout_falls_back(self, graph: ContextGraph) -> None:
        """A summarizer slower than the timeout falls back to the extractive brief."""

        async def slow(**_: Any) -> str:
            await anyio.sleep(10)
            return GOOD

        model = ScriptedSummarizer(slow)
        processor = _processor(summarizer=model, timeout=0.05)
        with anyio.fail_after(5):
            proposal = await processor.propose(units_nodes(graph, 1, 6), _ctx(graph))
        assert proposal.note == "fallback to extractive (scripted: timed out)"

    async def test_cancellation_is_not_swallowed(self, graph: ContextGraph) -> None:
        """Cancelling the caller cancels the summary; it does not turn into a fallback."""

        async def slow(**_: Any) -> str:
            await anyio.sleep(10)
            return GOOD

        processor = _processor(summarizer=ScriptedSummarizer(slow), timeout=None)
        result: list[Proposal] = []
        with anyio.move_on_after(0.05) as scope:
            result.append(await processor.propose(units_nodes(graph, 1, 6), _ctx(graph)))
        assert scope.cancelled_caught and result == []

    async def test_non_text_answer_falls_back(self, graph: ContextGraph) -> None:
        """A summarizer that returns something other than text falls back."""

        async def wrong(**_: Any) -> str:
            return {"summary": GOOD}  # type: ignore[return-value]

        proposal = await _processor(summarizer=ScriptedSummarizer(wrong)).propose(
            units_nodes(graph, 1, 6), _ctx(graph)
        )
        assert "expected str" in proposal.note


class TestRolling:
    async def test_a_new_summary_updates_the_one_before(self) -> None:
        """The next span is summarized with the previous summary as `previous`, and replaces it."""
        graph = build_session(extra_turns=3)
        first = await _processor().propose(units_nodes(graph, 1, 6), _ctx(graph))
        old = _edit(first).summary
        graph.add_derived(old)
        # The user's later messages are quoted, as every summary must.
        steps = " ".join(f"Step {n}: also bump version to 2.4.{n} in setup.cfg." for n in range(3))
        model = ScriptedSummarizer(
            f"{GOOD} Now update CHANGELOG.md for release v2.3.1 please. {steps}"
        )
        span = units_nodes(graph, 6, 10)
        proposal = await _processor(summarizer=model).propose(span, _ctx(graph))
        edit = _edit(proposal)
        assert model.calls[0]["previous"] == old.text
        assert model.calls[0]["nodes"] == span
        assert edit.targets == (old.id, *(n.id for n in span))
        assert proposal.tokens_before == _tokens(graph, span) + len(old.text.split())
        assert edit.summary.meta["updates"] == old.id
        assert proposal.note == f"model ok (scripted); updates {old.id}"

    async def test_leading_summary_in_targets_is_the_anchor(self) -> None:
        """A previous summary given first among the targets is updated, not re-summarized."""
        graph = build_session()
        for n in range(3):  # turns with output to shorten: user messages are kept verbatim
            graph.add_user(f"Step {n}: also bump version to 2.4.{n} in setup.cfg.")
            graph.add_assistant(tool_calls=[_call(f"v{n}", "bash", command="pytest")])
            graph.add_tool_result(f"v{n}", "test passed\n" * 40)
        old = _edit(await _processor().propose(units_nodes(graph, 1, 6), _ctx(graph))).summary
        graph.add_derived(old)
        span = units_nodes(graph, 6, 10)
        proposal = await _processor().propose([old, *span], _ctx(graph))
        text = _edit(proposal).summary.text
        assert REQUEST in text  # the goal of the first summary is kept
        carried = _edit(proposal).summary.meta["entities"]
        assert isinstance(carried, list) and "ABC-1234" in carried  # carried over

    async def test_pinned_summary_is_not_updated(self) -> None:
        """A summary the user pinned stays; the next one starts without it."""
        graph = build_session(extra_turns=3)
        old = _edit(await _processor().propose(units_nodes(graph, 1, 6), _ctx(graph))).summary
        graph.add_derived(old.model_copy(update={"pinned": True}))
        model = ScriptedSummarizer(
            "Now update CHANGELOG.md for release v2.3.1 please. "
            "Step 0: also bump version to 2.4.0 in setup.cfg. Done."
        )
        span = units_nodes(graph, 6, 10)
        proposal = await _processor(summarizer=model).propose(span, _ctx(graph))
        assert model.calls[0]["previous"] is None
        assert _edit(proposal).targets == tuple(n.id for n in span)
        assert proposal.note == "model ok (scripted)"

    async def test_summary_elsewhere_in_targets_is_refused(self) -> None:
        """In a plain graph, a summary after other targets has no place: refused.

        (In a working view it is a unit of its own, and absorbed: `TestAbsorb`.)
        """
        graph = build_session(extra_turns=3)
        old = _edit(await _processor().propose(units_nodes(graph, 1, 6), _ctx(graph))).summary
        graph.add_derived(old)
        proposal = await _processor().propose([*units_nodes(graph, 6, 8), old], _ctx(graph))
        assert proposal.empty and "only lead" in proposal.note


async def _echo(*, nodes: Sequence[Node], instructions: str | None, **_: Any) -> str:
    """A model that writes back exactly the identifiers it is told to keep, and quotes the
    sentences of the user it is told to quote that its nodes hold."""
    assert instructions is not None
    keep = instructions.split("wherever they occur: ", 1)[1].split("\n")[0]
    quote = instructions.partition("Quote these sentences of the user exactly: ")[2]
    seen = " ".join(node.text for node in nodes)
    said = [s for s in quote.split("\n")[0].split(" | ") if s and s in seen]
    return f"Kept: {keep}." + "".join(f" {s}" for s in said)


class TestWindow:
    async def test_large_input_is_mapped_then_reduced(self) -> None:
        """Over the window, chunks of whole units are summarized, then the chunk summaries."""
        graph = build_session(extra_turns=6)
        span = units_nodes(graph, 1, 20)
        model = ScriptedSummarizer(*[_echo] * 100)
        processor = _processor(summarizer=model, window_tokens=60)
        proposal = await processor.propose(span, _ctx(graph))
        *earlier, final = model.calls
        maps = [c for c in earlier if not isinstance(c["nodes"][0], SummaryNode)]
        assert len(maps) >= 2
        assert [n for call in maps for n in call["nodes"]] == span
        for call in earlier:
            assert call["previous"] is None
        for call in maps:
            heads = {graph.unit_of(n.id).head for n in call["nodes"]}
            assert {i for h in heads for i in graph.unit_of(h)} == {n.id for n in call["nodes"]}
            assert _tokens(graph, call["nodes"]) <= 60 or len(heads) == 1
        assert all(isinstance(n, SummaryNode) for n in final["nodes"])
        assert sum(len(n.text.split()) for n in final["nodes"]) <= 60
        # The echo of the chunk summaries loses user messages: they are appended, quoted.
        assert proposal.note.startswith("repaired (scripted; first candidate: lost 2 of the")
        text = _edit(proposal).summary.text
        assert "## The user's words (verbatim)" in text
        assert "- Step 5: also bump version to 2.4.5 in setup.cfg." in text

    async def test_input_that_never_fits_falls_back(self) -> None:
        """Chunk summaries that stay over the window end in the extractive fallback."""
        graph = build_session(extra_turns=6)
        wordy = " ".join(["word"] * 80)
        model = ScriptedSummarizer(*([wordy] * 100))
        processor = _processor(summarizer=model, window_tokens=60)
        proposal = await processor.propose(units_nodes(graph, 1, 20), _ctx(graph))
        assert "over the 60-token window" in proposal.note


_TEXT = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=60)


@st.composite
def sessions(draw: st.DrawFn) -> ContextGraph:
    """Random sessions: user turns, assistant turns with parallel calls and their results."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("system")
    for turn in range(draw(st.integers(min_value=1, max_value=8))):
        pinned = turn > 0 and draw(st.integers(min_value=0, max_value=9)) == 0
        graph.add_user(draw(_TEXT), pinned=pinned)
        calls = [
            _call(
                f"t{turn}c{k}",
                draw(st.sampled_from(["bash", "Read", "lookup"])),
                command=draw(_TEXT),
            )
            for k in range(draw(st.integers(min_value=0, max_value=3)))
        ]
        graph.add_assistant(draw(_TEXT), tool_calls=calls)
        for call in calls:
            output = draw(_TEXT) + " output line" * draw(st.integers(min_value=0, max_value=300))
            graph.add_tool_result(call["id"], output, is_error=draw(st.booleans()))
    return graph


class TestProperties:
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(graph=sessions(), data=st.data())
    async def test_any_run_of_units(self, graph: ContextGraph, data: st.DataObject) -> None:
        """Any proposal saves tokens, abstracts exactly its targets and never a pinned node."""
        units = graph.units()
        start = data.draw(st.integers(min_value=0, max_value=len(units) - 1) | st.just(1))
        stop = data.draw(st.integers(min_value=start + 1, max_value=len(units)))
        nodes = units_nodes(graph, start, stop)
        if data.draw(st.booleans()) and len(nodes) > 1:
            nodes = nodes[:-1]  # may split the last unit
        proposal = await _processor().propose(nodes, _ctx(graph))
        event("proposed" if proposal.edits else re.sub(r"\S*\d\S*", "#", proposal.note))
        if proposal.empty:
            return
        edit = _edit(proposal)
        assert edit.targets == tuple(n.id for n in nodes)
        assert not any(n.pinned for n in nodes)
        assert proposal.tokens_after < proposal.tokens_before
        covered = {i for n in nodes for i in graph.unit_of(n.id)}
        assert covered == {n.id for n in nodes}
        assert find_tool_call_syntax(edit.summary.text) == []


class TestWithScriptedSummarizer:
    async def test_scripted_answer_is_used_and_the_call_recorded(self) -> None:
        """The public test double feeds the processor and records what it was asked."""
        from context_graph import ContextGraph
        from context_graph.testing import ScriptedSummarizer, WordCounter
        from processors import HistorySummarizer, ProcessorContext

        graph = ContextGraph(counter=WordCounter())
        graph.add_user("first request " + "word " * 40)
        graph.add_assistant("answer " + "word " * 40)
        graph.add_user("second request")
        span = [graph[i] for u in graph.units()[1:2] for i in u.node_ids]
        summarizer = ScriptedSummarizer(["the assistant answered at length"])
        ctx = ProcessorContext.for_graph(graph, instructions="focus on answers")
        proposal = await HistorySummarizer(summarizer=summarizer).propose(span, ctx)
        assert (
            proposal.edits and proposal.edits[0].summary.text == "the assistant answered at length"
        )  # type: ignore[union-attr]
        ((nodes, previous, instructions),) = summarizer.calls
        assert [n.id for n in nodes] == [n.id for n in span]
        assert (previous, instructions) == (None, "focus on answers")
