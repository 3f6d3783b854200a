"""A run that landed under its target takes back its own cuts of the newest outputs.

Before: a run cut the output that had just arrived (the file the agent asked for), then
summarized old history, and the request came out well under its target with the new
output still cut, though it would have fit whole.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from orchestrator import ContextManager, TriggerConfig
from orchestrator.compaction.refill import REFILL_PROCESSOR
from orchestrator.policy import Policy
from processors import HistorySummarizer, ToolOutputTruncator

HARD = TriggerConfig(soft_ratio=None, hard_ratio=0.95, hysteresis=0.1)
BUDGET = 2_000
TARGET = int(BUDGET * 0.7)


def _output(tag: str, words: int) -> str:
    return " ".join(f"{tag}{n}" for n in range(words))


def _manager(max_tokens: int = 200) -> ContextManager:
    pipeline = [ToolOutputTruncator(max_tokens=max_tokens), HistorySummarizer()]
    return ContextManager(
        budget=BUDGET,
        counter=WordCounter(),
        policy=Policy(triggers=HARD, pipeline=pipeline, compact_to=0.7),
    )


def _loop(manager: ContextManager, steps: int, words: int) -> None:
    manager.add_system("You are a coding agent.")
    manager.add_user("Fix the failing build in /srv/app.")
    for step in range(steps):
        manager.add_assistant(f"Step {step}.", [{"id": f"c{step}", "name": "bash"}])
        manager.add_tool_result(f"c{step}", _output(f"s{step}x", words))


def _read(manager: ContextManager, words: int) -> None:
    manager.add_assistant("Reading the config.", [{"id": "cfg", "name": "read"}])
    manager.add_tool_result("cfg", _output("cfg", words))


def _processors(manager: ContextManager) -> list[tuple[str, int]]:
    return [(entry.processor, entry.tokens_saved) for entry in manager.working.audit()]


def test_the_new_output_cut_for_nothing_comes_back_whole() -> None:
    """The read that set the run off was cut to 200 words, then the summary freed the
    room after all: the read is back whole, and the request is still under its target."""
    manager = _manager()
    _loop(manager, steps=14, words=100)
    assert manager.render_sync().tokens < 0.95 * BUDGET  # nothing compacted yet
    _read(manager, 300)
    result = manager.render_sync()
    body = str(result.payload)
    assert "Summary" in body
    assert _output("cfg", 300) in body
    assert result.tokens <= TARGET
    assert _processors(manager) == [("truncate", 100), ("summarize", 600), (REFILL_PROCESSOR, -100)]
    # Counted with the run's other proposals (a rebase that drops one takes it back).
    assert manager.stats().proposals_applied == len(manager.working.audit()) == 3


def test_a_cut_that_would_not_fit_the_target_stays() -> None:
    manager = _manager()
    _loop(manager, steps=14, words=100)
    manager.render_sync()
    _read(manager, 450)
    result = manager.render_sync()
    assert "cfg225" not in str(result.payload)  # the middle of the read is still cut
    assert REFILL_PROCESSOR not in {name for name, _ in _processors(manager)}
    assert result.tokens <= TARGET


@settings(max_examples=25, deadline=None)
@given(
    steps=st.integers(4, 30),
    words=st.integers(20, 160),
    reads=st.lists(st.integers(50, 900), min_size=1, max_size=4),
    max_tokens=st.sampled_from([60, 200, 400]),
)
def test_a_refill_restores_only_its_run_s_cuts_and_keeps_the_target(
    steps: int, words: int, reads: list[int], max_tokens: int
) -> None:
    """Whatever the session: a refill undoes only what a proposal of the same run added,
    and a render after a run that refilled is at most its target."""
    manager = _manager(max_tokens)
    added_this_run: set[str] = set()
    refilled: list[bool] = []
    problems: list[str] = []

    def applied(sender: object, *, proposal: Any, entry: Any, **_: object) -> None:
        if proposal.processor == REFILL_PROCESSOR:
            refilled.append(True)
            if not set(entry.removed) <= added_this_run:
                problems.append(f"refill took {entry.removed} not added by its run")
        added_this_run.update(entry.added)

    def done(sender: object, **_: object) -> None:
        added_this_run.clear()

    manager.bus.connect("proposal_applied", applied)
    manager.bus.connect("compaction_done", done)
    _loop(manager, steps, words)
    for index, size in enumerate(reads):
        manager.add_assistant(f"Read {index}.", [{"id": f"r{index}", "name": "read"}])
        manager.add_tool_result(f"r{index}", _output(f"r{index}x", size))
        refilled.clear()
        result = manager.render_sync()
        assert result.tokens <= BUDGET
        if refilled:
            assert result.tokens <= TARGET
    assert problems == []
