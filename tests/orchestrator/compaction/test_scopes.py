"""A processor is handed the nodes of the scope it declares, never by what class it is.

Issue 32: the pipeline used to recognise the built-in `HistorySummarizer` by class, so a
user's own summarizer that followed the protocol was handed tool outputs only.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from orchestrator import ContextManager, GuardConfig, TriggerConfig
from orchestrator.policy import Policy
from processors import ToolOutputTruncator
from processors.base import ProcessorContext, Proposal, Resizable, scope_of
from processors.summarize import HistorySummarizer

ROOT = Path(__file__).resolve().parents[3]
LOG = " ".join(f"word{n}" for n in range(200))
ANSWERS = {"tool_result", "file", "subagent_result"}


class Recording:
    """A user's processor (no built-in base class) that proposes nothing and keeps what it got."""

    name = "mine"

    def __init__(self, scope: Any = None) -> None:
        if scope is not None:
            self.scope = scope
        self.handed: list[tuple[Node, ...]] = []
        self.units: list[tuple[str, ...]] = []

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        self.handed.append(tuple(targets))
        return Proposal(processor=self.name)


def run(processor: Recording, turns: int = 4) -> list[str]:
    """A session of `turns` tool steps, compacted by hand with `processor` alone."""
    return [node.kind for node in session(processor, turns).handed[0]]


def session(processor: Recording, turns: int) -> Recording:
    """`processor` after a session of `turns` tool steps compacted by hand with it alone."""
    manager = ContextManager(
        counter=WordCounter(),
        policy=Policy(
            pipeline=[processor],
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=None),
            guards=GuardConfig(floor_tokens=0),
        ),
    )
    manager.add_system("You are careful.")
    for step in range(turns):
        manager.add_user(f"Step {step}, please.")
        manager.add_assistant("Running.", [{"id": f"c{step}", "name": "bash"}])
        manager.add_tool_result(f"c{step}", LOG)
        manager.add_assistant(f"Step {step} done.")
    anyio.run(manager.compact)
    processor.units = [unit.node_ids for unit in manager.working.view.units()]
    return processor


class TestScopes:
    def test_a_users_history_scoped_summarizer_is_handed_the_history(self) -> None:
        kinds = run(Recording("history"))
        assert {"user", "assistant", "tool_call", "tool_result"} <= set(kinds)
        assert "system" not in kinds

    def test_one_that_declares_nothing_is_handed_the_outputs(self) -> None:
        assert set(run(Recording())) == {"tool_result"}
        assert set(run(Recording("outputs"))) == {"tool_result"}

    def test_all_is_every_unpinned_node_but_the_system_prompt(self) -> None:
        kinds = run(Recording("all"))
        assert kinds.count("user") == 4 and kinds.count("tool_result") == 4
        assert "system" not in kinds

    def test_the_built_in_summarizer_declares_history(self) -> None:
        assert scope_of(HistorySummarizer()) == "history"
        assert scope_of(ToolOutputTruncator()) == "outputs"
        assert isinstance(ToolOutputTruncator(), Resizable)

    @pytest.mark.parametrize("scope", ["History", "tools", 3, None.__class__])
    def test_an_unknown_scope_is_refused_when_the_manager_is_made(self, scope: Any) -> None:
        with pytest.raises(ConfigurationError, match=r"pipeline stage 0: processor 'mine'"):
            ContextManager(policy=Policy(pipeline=[Recording(scope)]))

    @settings(max_examples=20, deadline=None)
    @given(st.integers(min_value=1, max_value=6))
    def test_history_spans_are_whole_units_and_never_the_last_two(self, turns: int) -> None:
        """A unit is wholly in the span or wholly out; the last two units never in it."""
        done = session(Recording("history"), turns)
        handed = {node.id for node in done.handed[0]} if done.handed else set()
        if turns > 2:  # old whole steps exist: the span is not empty
            assert handed
        for unit in done.units:
            assert set(unit) <= handed or handed.isdisjoint(unit)
        for unit in done.units[-2:]:
            assert handed.isdisjoint(unit)


def _builtin_processor_classes() -> set[str]:
    import processors

    return {
        name
        for name in processors.__all__
        if isinstance(getattr(processors, name), type)
        and callable(getattr(getattr(processors, name), "propose", None))
    }


def test_no_isinstance_on_built_in_processor_classes_outside_processors() -> None:
    """The pipeline reads declarations (`scope`, `Resizable`), never a built-in class."""
    classes = _builtin_processor_classes()
    assert {"HistorySummarizer", "ToolOutputTruncator"} <= classes
    # orchestrator/policy/resolved.py still finds a pipeline's redact stage by class (a
    # `redact` stage turns the session's redaction on): the only exemption, until a policy
    # read from TOML says so in `redact_secrets` itself.
    exempt = {ROOT / "orchestrator" / "policy" / "resolved.py"}
    found = []
    for path in sorted((ROOT / "orchestrator").rglob("*.py")):
        if path in exempt:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "isinstance"
                and len(node.args) == 2
            ):
                named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if named & classes:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert found == []
