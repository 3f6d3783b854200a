"""Long agent loops at a small budget: thousands of compactions, a summary chain as long.

A rolling summary absorbs the previous one at every compaction, so after n compactions
the chain beneath the newest summary is n summaries deep. The loop of docs/quickstart.md
(one shell call and its long log per step) runs 5,000 calls through `ContextManager` to
the end, for the default pipeline and the `coding` profile; and what the engine looks up
in the overlay per call is counted, early and late in the session: it must not grow with
the chain (a walk down the chain made a step cost the session, and a recursive one died
with `RecursionError` at about 490 compactions).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from context_graph.testing import WordCounter
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy, get_policy
from orchestrator.working import WorkingView
from orchestrator.working.layered import LayeredMap, MapDraft

_BUDGET = 1_000
"""Words: a step adds about 200 (a 40-line log), so the loop compacts every few calls."""


def _manager(profile: str | None) -> ContextManager:
    # No profile: the general mechanics, `Policy()` (soft trigger 0.7, hard 0.9).
    policy = Policy() if profile is None else get_policy(profile)
    manager = ContextManager("openai", _BUDGET, policy=policy, counter=WordCounter())
    manager.add_system("You are a careful coding agent. Use the `bash` tool.")
    manager.add_user("Find why tests/test_io.py fails and fix it.")
    return manager


def _call(manager: ContextManager, step: int) -> int:
    """One call of the quickstart's loop: render, then the model's step and the tool's log."""
    result = manager.render_sync()
    call = {"id": f"call_{step}", "name": "bash", "arguments": json.dumps({"cmd": "pytest -x"})}
    manager.add_assistant(f"Step {step}: running the tests.", tool_calls=[call])
    log = "\n".join(f"tests/test_io.py::test_case_{i} PASSED" for i in range(40))
    manager.add_tool_result(call["id"], log)
    manager.report_usage(result.tokens)
    return result.tokens


def _walked_chain(view: WorkingView, summary_id: str) -> int:
    """The chain length of a summary, walked down its parts (iteratively, no memo kept)."""
    overlay = view.overlay
    lengths: dict[str, int] = {}
    stack = [summary_id]
    while stack:
        node_id = stack[-1]
        node = view[node_id]
        parts = [
            p
            for p in node.abstracts
            if overlay.abstracted_by.get(p) == node_id and view[p].kind == "summary"
        ]
        waiting = [p for p in parts if p not in lengths]
        if waiting:
            stack.extend(waiting)
            continue
        stack.pop()
        lengths[node_id] = 1 + max((lengths[p] for p in parts), default=0)
    return lengths[summary_id]


@contextmanager
def _lookups() -> Iterator[Callable[[], int]]:
    """Counts the lookups in the overlay's maps (and their drafts) while the block runs."""
    count = 0
    get, draft_get = LayeredMap.get, MapDraft.get

    def counting(self: Any, key: Any, *default: Any) -> Any:
        nonlocal count
        count += 1
        return get(self, key, *default)

    def draft_counting(self: Any, key: Any, default: Any = None) -> Any:
        nonlocal count
        count += 1
        return draft_get(self, key, default)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LayeredMap, "get", counting)
        patch.setattr(MapDraft, "get", draft_counting)
        yield lambda: count


class TestLongLoop:
    @pytest.mark.parametrize("profile", [None, "coding"])
    def test_five_thousand_calls_run_to_the_end(self, profile: str | None) -> None:
        """5,000 calls at a small budget: every request fits, the chain is ~700 deep."""
        manager = _manager(profile)
        for step in range(5_000):
            assert _call(manager, step) <= _BUDGET
        view = manager.working.view
        chains = view.overlay.chains
        newest = max(chains, key=lambda i: chains[i])
        assert chains[newest] > 600  # deeper than a recursion could go
        assert _walked_chain(view, newest) == chains[newest]


class TestPerCallLookups:
    @pytest.mark.parametrize("profile", [None, "coding"])
    def test_overlay_lookups_per_call_do_not_grow_with_the_chain(self, profile: str | None) -> None:
        """Calls with a chain ~100 deep look up as much as calls with one ~400 deep."""
        manager = _manager(profile)
        counted: list[int] = []
        chains: list[int] = []
        step = 0
        for until in (700, 2_800):
            while step < until:
                _call(manager, step)
                step += 1
            with _lookups() as lookups:
                for _ in range(140):  # about twenty compactions
                    _call(manager, step)
                    step += 1
                counted.append(lookups())
            view = manager.working.view
            newest = [u.head for u in view.units() if u.kind == "summary"][-1]
            chains.append(_walked_chain(view, newest))
        assert chains[1] > 3 * chains[0]
        assert counted[1] <= 1.2 * counted[0], (chains, counted)
