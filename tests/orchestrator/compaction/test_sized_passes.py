"""A compaction takes what brings the request to its target, lowest priority and oldest
first, and leaves the rest as it was.

Before, every stage took all its targets: a request that was a little over its budget
came out far below it (the budget the user gave was thrown away), the latest steps of
a tool loop were summarized with the rest, and `priority` was read by nothing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import ClassVar

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.graph.content import TextPart
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from context_graph.validate import validate
from orchestrator import ContextManager, TriggerConfig
from orchestrator.compaction.pipeline import StageSettings, run_pipeline
from orchestrator.compaction.recency import RECENT_ANSWERS, live_outputs
from orchestrator.policy import Policy, get_policy
from processors import (
    HistorySummarizer,
    Processor,
    ProcessorContext,
    Proposal,
    ToolOutputTruncator,
)
from processors.base import Scope, replace_each, replacement_for, while_needed
from processors.summarize.brief import Brief, bound
from processors.summarize.facts import ErrorFact
from tests.orchestrator.summaries import apply_summary

HARD = TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1)


def _output(tag: str, words: int) -> str:
    return " ".join(f"{tag}{n}" for n in range(words))


@pytest.mark.parametrize("kept", ["first", "second"])
def test_the_lower_priority_output_is_cut_first(kept: str) -> None:
    """Two outputs of one size, one cut is enough: the one of lower priority is cut."""
    manager = ContextManager(
        budget=4_000,
        counter=WordCounter(),
        policy=Policy(triggers=HARD, pipeline=[ToolOutputTruncator(max_tokens=40)], compact_to=0.9),
    )
    manager.add_system("You are an agent.")
    manager.add_user("Read both logs.")
    priorities = {"first": (5, 0), "second": (0, 5)}[kept]
    for tag, priority in zip(("alpha", "beta"), priorities, strict=True):
        manager.add_assistant(f"Reading {tag}.", [{"id": tag, "name": "cat"}])
        manager.add_tool_result(tag, _output(tag, 1_900), priority=priority)
    body = str(manager.render_sync().payload)
    whole, cut = ("alpha", "beta") if kept == "first" else ("beta", "alpha")
    assert f"{whole}1000" in body  # the higher priority output is whole
    assert f"{cut}1000" not in body and f"{cut}0" in body  # the other one was cut


def _loop(manager: ContextManager, steps: int, words: int) -> None:
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix the failing build in /srv/app.")
    for step in range(steps):
        call = f"c{step}"
        manager.add_assistant(f"Step {step}.", [{"id": call, "name": "bash"}])
        manager.add_tool_result(call, _output(f"s{step}x", words), is_error=step % 4 == 3)


def test_a_summary_takes_the_oldest_steps_and_the_request_fills_its_target() -> None:
    """A tool loop a little over its budget: the summary stands for the oldest steps
    only; the newer steps than the last two stay verbatim, and the request lands between
    half the budget and the target (before: only the last two steps stayed and the
    request was at a fifth of the budget)."""
    manager = ContextManager(
        budget=2_000,
        counter=WordCounter(),
        policy=Policy(triggers=HARD, pipeline=[HistorySummarizer()], compact_to=0.7),
    )
    _loop(manager, steps=20, words=100)
    result = manager.render_sync()
    body = str(result.payload)
    verbatim = [step for step in range(20) if f"s{step}x99" in body]
    assert "Summary" in body and 0 not in verbatim
    assert verbatim == list(range(verbatim[0], 20)) and len(verbatim) >= 6
    assert 0.5 * 2_000 <= result.tokens <= 0.7 * 2_000


@settings(max_examples=20, deadline=None)
@given(
    steps=st.integers(min_value=3, max_value=30),
    words=st.integers(min_value=10, max_value=300),
    budget=st.integers(min_value=600, max_value=4_000),
    ratio=st.floats(min_value=0.3, max_value=0.9),
)
def test_sized_compaction_stays_valid_and_under_the_budget(
    steps: int, words: int, budget: int, ratio: float
) -> None:
    manager = ContextManager(
        budget=budget,
        counter=WordCounter(),
        policy=get_policy("coding").replace(triggers=HARD, compact_to=ratio),
    )
    _loop(manager, steps=steps, words=words)
    result = manager.render_sync()
    assert result.tokens <= budget
    assert validate(result.payload, "openai") == []


def test_the_newest_error_is_the_last_thing_a_brief_gives_up() -> None:
    """At a room too small for everything, older errors and the state's tail go first;
    the newest error (what the agent is acting on) stays."""
    errors = [
        ErrorFact(f"pytest run {n}", "", f"E   AssertionError: case {n}", "bash", False)
        for n in range(6)
    ]
    brief = Brief(goal="Fix the build.", errors=errors, state="Working on it. " * 60)
    text = bound(brief, 120, lambda s: len(s.split()), keep=())
    assert "case 5" in text
    assert "case 0" not in text


def test_what_followed_the_newest_error_outlasts_the_older_errors() -> None:
    """The next output of the tool that failed (what showed the fix at work) is worth
    more than an older error: the older open errors go first (before, that line went
    before any of them)."""
    errors = [
        ErrorFact(f"pytest run {n}", "", f"E   AssertionError: case {n}", "bash", False)
        for n in range(6)
    ]
    brief = Brief(
        goal="Fix the build.",
        errors=errors,
        after_error=["output of `bash`: `12 passed in 0.31s`"],
    )
    text = bound(brief, 60, lambda s: len(s.split()), keep=())
    assert "12 passed in 0.31s" in text and "case 5" in text
    assert "case 0" not in text


class FirstWords:
    """An output stage with no cap: each output it takes keeps its first 20 words."""

    name = "first_words"
    scope: ClassVar[Scope] = "outputs"

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        def shorter(node: Node, _: int | None) -> Node | None:
            words = node.text.split()
            if len(words) <= 20:
                return None
            return replacement_for(node, [TextPart(text=" ".join(words[:20]))])

        return replace_each(
            self.name,
            ctx,
            while_needed(targets, ctx, shorter),
            note=lambda edits, before, after: f"kept the first words of {edits} output(s)",
        )


def _recency_manager(*stages: Processor) -> ContextManager:
    manager = ContextManager(
        budget=2_000,
        counter=WordCounter(),
        policy=Policy(
            triggers=HARD,
            pipeline=[*(stages or (FirstWords(),)), HistorySummarizer()],
            compact_to=0.7,
        ),
    )
    _loop(manager, steps=12, words=100)  # steps 3, 7 and 11 failed
    manager.render_sync()  # sent: what follows is new material
    return manager


def test_a_new_error_output_stays_whole_and_older_outputs_make_room() -> None:
    """The output that just failed pushes the request over: it is what the agent acts
    on next, so older outputs are cut instead (before: the pass over new material cut
    the error itself, since cutting it left every message already sent as it was)."""
    manager = _recency_manager()
    manager.add_assistant("Run the tests.", [{"id": "t", "name": "bash"}])
    manager.add_tool_result("t", _output("err", 700), is_error=True)
    result = manager.render_sync()
    body = str(result.payload)
    assert "err350" in body  # the new error is whole, not a head and a tail
    assert "s0x99" not in body  # the oldest output made room
    assert result.tokens <= 2_000


def test_a_new_error_output_over_the_cap_is_cut_to_the_cap_with_its_error_lines() -> None:
    """A stage that caps each output still takes the live error, down to its cap: the
    truncator keeps its error lines first (before, a failed run was spared whole, so a
    test log of 10,000 characters held its place at an 8k budget while the file the
    agent had just read was cut to its outline)."""
    truncator = ToolOutputTruncator(max_tokens=80, policies={"bash": "errors_first"})
    manager = _recency_manager(truncator)
    manager.add_assistant("Run the tests.", [{"id": "t", "name": "bash"}])
    lines = [_output(f"ok{n}x", 10) for n in range(70)]
    lines.insert(35, "AssertionError: expected 3 got 4")
    error = manager.add_tool_result("t", "\n".join(lines), is_error=True)
    result = manager.render_sync()
    body = str(result.payload)
    assert "AssertionError: expected 3 got 4" in body
    assert "ok20x5" not in body  # cut, not whole
    cut = manager.working.view.standing_for(error)
    assert cut is not None and cut.id != error
    # Cut to the cap (its notice line aside), never below it: the room came from the cap.
    assert 80 <= WordCounter().count(cut.text) <= 120
    assert result.tokens <= 2_000


def test_the_live_error_the_truncator_cut_is_left_to_it_by_the_stages_after_it() -> None:
    """The truncator cuts the live error to its cap; a later output stage must still
    leave the cut copy alone. Before, the spared outputs were named by their ids before
    the pass, and the truncator's copy has an id of its own: the next stage took it as
    any other output (in a Claude Code session at 25% the relief pass cut a failed test
    run to the cap, then the distiller made an outline of it, its assertion line gone)."""
    truncator = ToolOutputTruncator(max_tokens=80, policies={"bash": "errors_first"})
    manager = _recency_manager(truncator, FirstWords())
    reads = [{"id": f"c{n}", "name": "cat"} for n in range(8)]
    manager.add_assistant(
        "Run the tests and read the files.", [{"id": "t", "name": "bash"}, *reads]
    )
    lines = [_output(f"ok{n}x", 10) for n in range(70)]
    lines.insert(35, "AssertionError: expected 3 got 4")
    error = manager.add_tool_result("t", "\n".join(lines), is_error=True)
    for n in range(8):  # each under the truncator's cap: only a stage after it frees them
        manager.add_tool_result(f"c{n}", _output(f"f{n}x", 75))
    result = manager.render_sync()
    assert "AssertionError: expected 3 got 4" in str(result.payload)
    cut = manager.working.view.standing_for(error)
    assert cut is not None
    assert 80 <= WordCounter().count(cut.text) <= 120  # the truncator's cut, not 20 words
    assert result.tokens <= 2_000


def test_the_output_that_resolved_the_error_stays_whole_too() -> None:
    """An error, then a long output of the same tool that did not fail (the first one
    after it): both live, both whole."""
    manager = _recency_manager()
    manager.add_assistant("Run the tests.", [{"id": "t1", "name": "bash"}])
    manager.add_tool_result("t1", _output("err", 60), is_error=True)
    manager.render_sync()
    manager.add_assistant("Run them again.", [{"id": "t2", "name": "bash"}])
    manager.add_tool_result("t2", _output("fixed", 700))
    body = str(manager.render_sync().payload)
    assert "err30" in body and "fixed350" in body  # whole, not a head and a tail


def test_an_error_older_than_the_newest_outputs_is_not_live() -> None:
    """The live error is looked for among the newest `RECENT_ANSWERS` outputs only."""
    manager = ContextManager(budget=None, counter=WordCounter(), policy=Policy(triggers=HARD))
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix it.")
    manager.add_assistant("Try.", [{"id": "bad", "name": "bash"}])
    error = manager.add_tool_result("bad", "Traceback: ValueError: boom", is_error=True)
    assert live_outputs(manager.working.view) == {error}
    for step in range(RECENT_ANSWERS):
        manager.add_assistant("Look.", [{"id": f"r{step}", "name": "cat"}])
        manager.add_tool_result(f"r{step}", "ok")
    assert live_outputs(manager.working.view) == frozenset()


def _codex_chunk(manager: ContextManager, call_id: str, session: int, output: str) -> str:
    """A Codex `write_stdin` on exec session `session`, answered by `output`."""
    arguments = json.dumps({"session_id": session, "chars": ""})
    manager.add_assistant("", [{"id": call_id, "name": "write_stdin", "arguments": arguments}])
    return manager.add_tool_result(call_id, output)


def test_a_chunk_of_a_command_still_running_resolves_no_error() -> None:
    """Codex's unified exec: a failed `pytest` chunk, then `npm run build` started and
    polled while it runs. The poll ("Process running") is a `write_stdin` output that
    did not fail, but it tells no outcome: the error stays live without a resolution
    (before, the poll stood as what resolved it). The chunk with the rerun's exit
    status 0 does resolve it."""
    manager = ContextManager(budget=None, counter=WordCounter(), policy=Policy(triggers=HARD))
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix it.")
    running = "Chunk ID: {n}\nWall time: 10 seconds\nProcess running with session ID {s}\nOutput:\n"
    start = json.dumps({"cmd": "pytest -q"})
    manager.add_assistant("Test.", [{"id": "e1", "name": "exec_command", "arguments": start}])
    manager.add_tool_result("e1", running.format(n=1, s=5) + "collecting ...")
    error = _codex_chunk(
        manager, "w1", 5, "Chunk ID: 2\nProcess exited with code 1\nOutput:\nFAILED t.py::a - boom"
    )
    build = json.dumps({"cmd": "npm run build"})
    manager.add_assistant("Build.", [{"id": "e2", "name": "exec_command", "arguments": build}])
    manager.add_tool_result("e2", running.format(n=3, s=7) + "> build")
    _codex_chunk(manager, "w2", 7, running.format(n=4, s=7) + "compiling ...")
    assert live_outputs(manager.working.view) == {error}
    manager.add_assistant("Again.", [{"id": "e3", "name": "exec_command", "arguments": start}])
    manager.add_tool_result("e3", running.format(n=5, s=9) + "collecting ...")
    fixed = _codex_chunk(
        manager, "w3", 9, "Chunk ID: 6\nProcess exited with code 0\nOutput:\n1 passed in 0.1s"
    )
    assert live_outputs(manager.working.view) == {error, fixed}


def _abstract(manager: ContextManager, units: int) -> None:
    """Summarize the view's units after the first request, `units` of them."""
    view = manager.working.snapshot()
    ids = [i for unit in view.units()[2 : 2 + units] for i in unit.node_ids]
    apply_summary(manager, ids, "earlier")


def test_a_resolution_stays_live_after_a_summary_took_its_error_in() -> None:
    """The error went into a summary; the output that showed the fix is still the newest
    word on it (before: the live error was looked for in the view only, so once it was
    summarized its resolution was cut like any output)."""
    manager = ContextManager(budget=None, counter=WordCounter(), policy=Policy(triggers=HARD))
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix it.")
    manager.add_assistant("Try.", [{"id": "bad", "name": "bash"}])
    error = manager.add_tool_result("bad", "Traceback: ValueError: boom", is_error=True)
    manager.add_assistant("Again.", [{"id": "good", "name": "bash"}])
    fixed = manager.add_tool_result("good", "all 12 tests passed")
    assert live_outputs(manager.working.view) == {error, fixed}
    _abstract(manager, units=1)
    assert manager.working.view.standing_for(error) is None  # the summary took it in
    assert live_outputs(manager.working.view) == {fixed}


@pytest.mark.parametrize("still_over_the_level", [False, True])
def test_a_run_a_little_over_its_target_leaves_the_live_outputs_alone(
    still_over_the_level: bool,
) -> None:
    """Every stage ran and the request is still over its target: the live error and its
    resolution are cut only while it is also over the level that fired
    (`spare_while`); before, a run that landed a token over its target cut the output
    the agent acts on next to free that token."""
    manager = ContextManager(budget=None, counter=WordCounter(), policy=Policy(triggers=HARD))
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix it.")
    manager.add_assistant("Try.", [{"id": "bad", "name": "bash"}])
    error = manager.add_tool_result("bad", _output("err", 300), is_error=True)
    manager.add_assistant("Again.", [{"id": "good", "name": "bash"}])
    fixed = manager.add_tool_result("good", _output("fixed", 300))
    settings = StageSettings(None, None, None, excess=lambda: 50, over=lambda: 50)
    anyio.run(
        lambda: run_pipeline(
            [FirstWords()],
            manager.working,
            manager.bus,
            settings,
            done=lambda: False,
            spare_while=lambda: not still_over_the_level,
        )
    )
    view = manager.working.view
    untouched = {error, fixed} <= set(view.current_ids())
    assert untouched is not still_over_the_level
