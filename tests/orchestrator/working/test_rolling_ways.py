"""What the overlay and the projection keep about rolling summaries holds through restores.

Two things are kept so that a step costs what it changes, not the chain of summaries
beneath the newest one: each summary's chain length (`Overlay.chains`, made when the
summary is), and where the way from each summary ended (`Projection.ends`, handed from
one projection to the next). Through compactions, renders, expands (restores) and manual
compactions in any order, each must equal the walk it saves: the chain walked down the
parts, the view projected from scratch.
"""

from __future__ import annotations

import json

import anyio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from orchestrator.working import WorkingView
from tests.orchestrator.compaction.test_long_loops import _walked_chain
from tests.orchestrator.working.test_projection_edits import _assert_as_fresh

_ACTIONS = st.lists(
    st.sampled_from(["step", "step", "step", "render", "expand", "compact", "compact"]),
    min_size=20,
    max_size=100,
)


def _step(manager: ContextManager, step: int, lines: int) -> None:
    call = {"id": f"call_{step}", "name": "bash", "arguments": json.dumps({"cmd": f"ls {step}"})}
    manager.add_assistant(f"Step {step}: listing.", tool_calls=[call])
    log = "\n".join(f"file_{step}_{i}.py size={i * step}" for i in range(lines))
    manager.add_tool_result(call["id"], log)


def _expandable(view: WorkingView) -> list[str]:
    """The compacted pieces in the view: summaries and edited copies."""
    overlay = view.overlay
    return [i for u in view.units() for i in u.node_ids if i in overlay.derived]


def _assert_chains(view: WorkingView) -> None:
    chains = view.overlay.chains
    for summary_id, length in chains.items():
        assert _walked_chain(view, summary_id) == length


def _manager() -> ContextManager:
    manager = ContextManager(
        format="openai", budget=4_000, counter=WordCounter(), agent_tools=True, policy=Policy()
    )
    manager.add_system("You list files.")
    manager.add_user("List every file.")
    return manager


class TestRollingWays:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(actions=_ACTIONS, data=st.data())
    def test_kept_lengths_and_ends_equal_the_walks(
        self, actions: list[str], data: st.DataObject
    ) -> None:
        """Whatever the order of steps, renders, expands and compactions."""
        manager = _manager()
        for step, action in enumerate(actions):
            if action == "step":
                _step(manager, step, data.draw(st.integers(10, 40)))
            elif action == "render":
                manager.render_sync()
            elif action == "compact":
                anyio.run(manager.compact)
            else:
                pieces = _expandable(manager.working.view)
                if pieces:
                    target = data.draw(st.sampled_from(pieces))
                    manager.handle_tool_call_sync("context_expand", {"id": target})
            view = manager.working.view
            _assert_chains(view)
            _assert_as_fresh(view)

    def test_an_expand_undoes_the_chain_and_a_compaction_starts_a_new_one(self) -> None:
        """Expanding the newest summary undoes the chain beneath it; the next one is 1 long."""
        manager = _manager()
        for step in range(40):
            _step(manager, step, 20)
            if step % 5 == 4:
                anyio.run(manager.compact)
        view = manager.working.view
        (newest,) = [u.head for u in view.units() if u.kind == "summary"]
        assert view.overlay.chains[newest] == 8
        assert "restored" in manager.handle_tool_call_sync("context_expand", {"id": newest})
        view = manager.working.view
        assert not view.overlay.chains
        _assert_as_fresh(view)
        _step(manager, 40, 20)
        anyio.run(manager.compact)
        view = manager.working.view
        (again,) = [u.head for u in view.units() if u.kind == "summary"]
        assert view.overlay.chains[again] == 1
        _assert_chains(view)
        _assert_as_fresh(view)
