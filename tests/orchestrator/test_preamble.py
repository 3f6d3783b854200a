"""A preamble the budget cannot hold (SWE-agent's demonstration) does not make every call compact.

SWE-agent sends a demonstration trajectory as a notice before the issue. No stage takes
it, and the renderer leaves it out when it does not fit; before `compaction.preamble`,
every call also summarized the newest steps, in vain (the request still did not fit
with the demonstration), so requests sat at a third of the budget and no two calls
shared a prefix.
"""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.testing import WordCounter
from context_graph.validate import validate
from orchestrator import ContextManager, Recorder
from orchestrator.compaction.preamble import fits_leaving_out_preamble
from orchestrator.compaction.renderers import RendererCache
from orchestrator.working.buffer import WorkingGraph

SUMMARY = "Summary of the earlier conversation"


def _demonstration(lines: int) -> str:
    return "Here is a demonstration of how to correctly accomplish this task.\n" + "\n".join(
        f"demo step {n}: open src/demo_{n}.py and edit line {n * 3}" for n in range(lines)
    )


def _session(manager: ContextManager, demo_lines: int) -> None:
    manager.add_system("You are an autonomous programmer working in a shell.")
    manager.add_user(_demonstration(demo_lines), notice=True)
    manager.add_user("Fix issue 42: the parser drops the last token of every line.")


def _step(manager: ContextManager, n: int) -> None:
    manager.add_assistant(f"Step {n}: I will look at src/parser_{n}.py next.")
    manager.add_user(f"[File: src/parser_{n}.py] observation {n}: token_{n} ok", notice=True)


def _messages(manager: ContextManager) -> list[str]:
    result = manager.render_sync()
    assert result.budget is not None and result.tokens <= result.budget
    return [json.dumps(m, sort_keys=True) for m in result.payload["messages"]]


def test_a_demonstration_over_the_budget_is_left_out_and_the_work_stays() -> None:
    """Every step stays verbatim, nothing is summarized, and each request extends the last."""
    manager = ContextManager(budget=2_000)
    _session(manager, demo_lines=300)
    previous: list[str] | None = None
    with Recorder(manager.bus) as recorder:
        for n in range(8):
            _step(manager, n)
            messages = _messages(manager)
            body = "\n".join(messages)
            assert SUMMARY not in body
            assert "demo step 1:" not in body and "omitted to fit the context budget" in body
            assert all(f"observation {k}: token_{k} ok" in body for k in range(n + 1))
            if previous is not None:
                assert messages[: len(previous)] == previous
            previous = messages
    assert not [e for e in recorder.events if e.name == "proposal_applied"]


def test_a_preamble_a_compaction_can_keep_stays() -> None:
    """A short preamble is worth keeping: the work is compacted, the preamble sent."""
    manager = ContextManager(budget=900)
    _session(manager, demo_lines=12)
    for n in range(60):
        _step(manager, n)
        body = "\n".join(_messages(manager))
    assert SUMMARY in body
    assert "demo step 11: open src/demo_11.py" in body


@given(
    demo_lines=st.integers(0, 400),
    steps=st.integers(1, 25),
    budget=st.integers(400, 3_000),
    tools=st.booleans(),
)
@settings(max_examples=25, deadline=None)
def test_every_request_fits_and_is_valid(
    demo_lines: int, steps: int, budget: int, tools: bool
) -> None:
    """Whatever the preamble's size: each request is within the budget and well formed,
    and the issue and the latest observation are always in it."""
    manager = ContextManager(budget=budget)
    _session(manager, demo_lines)
    for n in range(steps):
        if tools:
            manager.add_assistant(f"Step {n}.", tool_calls=[{"id": f"c{n}", "name": "bash"}])
            manager.add_tool_result(f"c{n}", f"ran step {n}: exit 0")
        _step(manager, n)
        result = manager.render_sync()
        assert result.tokens <= budget
        assert validate(result.payload, "openai") == []
        body = json.dumps(result.payload)
        assert "Fix issue 42" in body and f"observation {n}: token_{n} ok" in body


def test_a_trial_that_says_no_leaves_the_kept_drops_as_they_were() -> None:
    """The question leaves no trace: when the answer is no, the compaction's render starts
    from the previous call's kept drops, not from the count the trial chose (that once
    made a request after a compaction leave out more than it had to)."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are an autonomous programmer working in a shell.")
    graph.add_user("demo step 0: open src/demo_0.py", notice=True)  # a short preamble
    graph.add_user("Fix issue 42: the parser drops the last token of every line.")
    for n in range(30):
        graph.add_assistant(f"Step {n}: I will look at src/parser_{n}.py next. " + "word " * 30)
        graph.add_user(f"observation {n}: " + "token ok " * 15, notice=True)
    working = WorkingGraph(graph)
    renderer = RendererCache(refit_to=0.7, cache_breakpoints=False).for_call("openai")
    budget = renderer.render(working).tokens // 2
    assert renderer.kept_drops == 0
    assert not fits_leaving_out_preamble(working, renderer, budget)
    assert renderer.kept_drops == 0
    # And the render after it is the render without the question.
    alone = RendererCache(refit_to=0.7, cache_breakpoints=False).for_call("openai")
    sent = renderer.render(working, budget=budget)
    assert sent.payload == alone.render(working, budget=budget).payload
    assert renderer.kept_drops == alone.kept_drops > 0


def _codex_session(target: ContextGraph | ContextManager) -> None:
    """A harness note of ~1,000 words, one request, then 30 steps of ~50 words each."""
    target.add_system("You are a coding agent working in a shell.")
    notes = " ".join(f"rule {n}: run the linter before a commit" for n in range(120))
    target.add_user(f"<environment_context>{notes}</environment_context>", notice=True)
    target.add_user("Add a dark mode toggle to the settings page.")
    for n in range(30):
        target.add_assistant(
            f"Step {n}: I will patch src/settings_{n}.tsx next. "
            + "the toggle reads the theme " * 8,
            tool_calls=[{"id": f"c{n}", "name": "shell", "arguments": {"cmd": f"cat s_{n}.tsx"}}],
        )
        target.add_tool_result(f"c{n}", "ok")


def test_a_long_tool_loop_after_one_request_is_compacted_not_the_preamble() -> None:
    """Codex's shape: a harness note, one request, then a loop of steps. The steps after
    the request are in the renderer's floor, but the summarize stage takes them (all but
    the newest): counted as unshrinkable, they put the floor alone over the budget, and
    a request just over it left the notes out instead of compacting the loop (Codex
    session 019a93b9 at 50%: the notes gone for one call, back at the next call's
    compaction, two prefix breaks where one would do)."""
    graph = ContextGraph(counter=WordCounter())
    _codex_session(graph)
    working = WorkingGraph(graph)
    renderer = RendererCache(refit_to=0.7, cache_breakpoints=False).for_call("openai")
    whole = renderer.preview(working).tokens
    budget = whole - 800  # the notes are about 1,000 tokens, the steps 1,500
    assert renderer.preview(working, budget=budget).dropped  # the notes: nothing else may go
    assert not fits_leaving_out_preamble(working, renderer, budget)
    # And a manager at that budget compacts the loop and sends the notes.
    manager = ContextManager(budget=budget, counter=WordCounter())
    _codex_session(manager)
    body = "\n".join(_messages(manager))
    assert "rule 119: run the linter" in body and SUMMARY in body
    assert "omitted to fit the context budget" not in body
