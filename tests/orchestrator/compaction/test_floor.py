"""The last resort before a refusal: the floor's tool outputs are cut to fit.

The renderer never drops the latest user turn and what follows it; when the outputs
there alone overflow the budget, the manager truncates them to one common cap (checked
and expandable like every edit) instead of raising `BudgetExceededError`.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph.render import Renderer
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator.compaction.floor import MIN_CAP, floor_outputs, output_cap
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy
from processors import ToolOutputTruncator


def _log(lines: int) -> str:
    return "\n".join(f"line {j}: value={j * 7} status=ok" for j in range(lines))


def _freed(sizes: list[int], cap: int) -> int:
    return sum(size - cap for size in sizes if size > cap)


class TestOutputCap:
    def test_nothing_to_free(self) -> None:
        assert output_cap([500, 800], 0) is None
        assert output_cap([], 100) is None

    def test_the_largest_cap_that_frees_enough(self) -> None:
        # Capping at 600 frees 200 (from the 800 only); at 500, 300.
        assert output_cap([500, 800], 200) == 600
        assert output_cap([500, 800], 300) == 500

    def test_none_when_even_the_minimum_cap_frees_too_little(self) -> None:
        assert output_cap([100, 90], 1_000) is None

    @given(
        st.lists(st.integers(min_value=0, max_value=5_000), min_size=1, max_size=8),
        st.integers(min_value=1, max_value=20_000),
    )
    def test_maximal_and_sufficient(self, sizes: list[int], excess: int) -> None:
        cap = output_cap(sizes, excess)
        if cap is None:
            assert _freed(sizes, MIN_CAP) < excess
        else:
            assert cap >= MIN_CAP
            assert _freed(sizes, cap) >= excess
            assert _freed(sizes, cap + 1) < excess


def _session(manager: ContextManager, output_lines: int, *, pinned: bool = False) -> None:
    manager.add_system("You are a careful coding agent.")
    manager.add_user("Fix the failing test in tests/test_io.py.")
    manager.add_assistant("Running it.", [{"id": "c1", "name": "bash"}])
    manager.ingest(
        [
            {
                "type": "tool_result",
                "call_id": "c1",
                "content": _log(output_lines),
                **({"pinned": True} if pinned else {}),
            }
        ]
    )


class TestShrinkFloor:
    async def test_an_oversized_latest_output_is_cut_to_fit(self) -> None:
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator()])
        )
        _session(manager, 400)
        raw = (await manager.render()).tokens
        budget = raw // 3
        result = await manager.render(budget=budget)
        assert result.tokens <= budget
        assert validate(result.payload, "openai") == []
        text = str(result.payload)
        assert "line 0:" in text  # the head of the output is kept
        assert "Fix the failing test" in text
        # The original stays in the pristine record and comes back on expand.
        (output,) = floor_outputs(manager.working.view)
        assert output.meta.get("truncated")
        (original,) = manager.expand(output.id)
        assert original.text == _log(400)

    async def test_the_users_words_are_never_cut(self) -> None:
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator()])
        )
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Please " + "fix everything " * 400)
        raw = (await manager.render()).tokens
        # No edit cuts them: the request is sent degraded instead (the overflow
        # fallback, which records nothing), with a notice where it was cut.
        result = await manager.render(budget=raw // 3)
        assert result.tokens <= raw // 3 and "over its token budget" in str(result.payload)
        assert manager.working.audit() == ()

    async def test_a_pinned_output_is_left_alone(self) -> None:
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator()])
        )
        _session(manager, 400, pinned=True)
        raw = (await manager.render()).tokens
        result = await manager.render(budget=raw // 3)  # degraded, not edited
        assert result.tokens <= raw // 3 and "over its token budget" in str(result.payload)
        assert manager.working.audit() == ()

    async def test_the_pipelines_truncator_lends_its_policy(self) -> None:
        truncator = ToolOutputTruncator(max_tokens=5_000, default_policy="tail")
        manager = ContextManager(counter=WordCounter(), policy=Policy(pipeline=[truncator]))
        _session(manager, 400)
        raw = (await manager.render()).tokens
        result = await manager.render(budget=raw // 3)
        text = str(result.payload)
        assert "line 399:" in text and "line 0:" not in text

    async def test_units_outside_the_floor_are_left_out_rather_than_refused(self) -> None:
        # An old answer the truncator cannot cut stays in the view: even the smallest cap
        # on the newest output leaves the whole view too large, but the renderer may
        # leave that answer out, and then the cut output fits.
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator(max_tokens=5_000)])
        )
        manager.add_system("You are a careful coding agent.")
        manager.add_user("Fix the failing test in tests/test_io.py.")
        manager.add_assistant("An earlier long explanation. " * 150)
        manager.add_user("Now run the tests.")
        manager.add_assistant("Running them.", [{"id": "c1", "name": "bash"}])
        manager.add_tool_result("c1", _log(400))
        result = await manager.render(budget=400)
        assert result.tokens <= 400
        assert validate(result.payload, "openai") == []
        assert result.dropped  # the long answer is left out of this request
        text = str(result.payload)
        assert "Fix the failing test" in text and "Now run the tests." in text
        assert "line 0:" in text

    async def test_an_output_already_sent_is_spared_when_cutting_the_new_one_is_enough(
        self,
    ) -> None:
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator(max_tokens=50_000)])
        )
        _session(manager, 300)
        sent = await manager.render(budget=100_000)
        manager.add_assistant("And the slow test.", [{"id": "c2", "name": "bash"}])
        manager.add_tool_result("c2", _log(400))
        whole = Renderer(format="openai").render(manager.working).tokens  # sends nothing
        budget = whole - 1_000
        result = await manager.render(budget=budget)
        assert result.tokens <= budget
        assert (
            result.payload["messages"][: len(sent.payload["messages"])]
            == (sent.payload["messages"])
        )
        first, second = floor_outputs(manager.working.view)
        assert not first.meta.get("truncated") and second.meta.get("truncated")

    def test_the_blocking_render_takes_the_same_path(self) -> None:
        manager = ContextManager(
            counter=WordCounter(), policy=Policy(pipeline=[ToolOutputTruncator()])
        )
        _session(manager, 400)
        raw = manager.render_sync().tokens
        assert manager.render_sync(budget=raw // 3).tokens <= raw // 3


class TestResized:
    def test_keeps_policies_and_changes_the_target(self) -> None:
        base = ToolOutputTruncator(max_tokens=5_000, policies={"pytest": "errors_first"})
        copy = base.resized(100)
        assert copy.max_tokens == 100 and base.max_tokens == 5_000
        assert copy.policy_for("pytest") == "errors_first"
        assert copy.policy_for("ls") == base.policy_for("ls")

    @pytest.mark.parametrize("bad", [0, 31, -1, "100", 2.5])
    def test_a_bad_target_is_refused(self, bad: object) -> None:
        from context_graph.errors import ConfigurationError

        with pytest.raises(ConfigurationError, match="max_tokens"):
            ToolOutputTruncator().resized(bad)  # type: ignore[arg-type]
