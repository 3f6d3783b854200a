"""Triggers run the pipelines they name, on the nodes they name."""

from __future__ import annotations

import functools
from typing import Any

import anyio
import pytest

from context_graph.errors import ConfigurationError, IngestError
from context_graph.graph.nodes import TriggerSpec
from context_graph.testing import WordCounter
from orchestrator import ContextManager, GuardConfig, Policy, TriggerConfig
from orchestrator.compaction.plan import RunMode, Step, plan_runs
from orchestrator.compaction.triggers import Firing
from orchestrator.policy.resolved import resolve_options
from processors import ObservationMasker, ToolOutputTruncator
from tests.orchestrator.policy_keywords import make_manager

LOG = " ".join(f"word{n}" for n in range(300))


def _firing(name: str, pipeline: str, targets: tuple[str, ...] = ()) -> Firing:
    kind = "size" if targets else "message_count"
    return Firing(kind=kind, name=name, pipeline=pipeline, targets=targets, reason="test")


class TestPlan:
    def test_node_firings_first_grouped_by_pipeline_then_graph_ones_in_order(self) -> None:
        firings = [
            _firing("message_count", "light"),
            _firing("size", "shrink", ("a",)),
            _firing("size", "shrink", ("b",)),
            _firing("boundary", "default"),
            _firing("message_count", "light"),
        ]
        assert plan_runs(firings, "default") == (
            Step("shrink", frozenset({"a", "b"})),
            Step("light"),
            Step("default"),
        )

    def test_the_default_runs_when_nothing_fired_or_the_request_does_not_fit(self) -> None:
        assert plan_runs([], "default") == (Step("default"),)
        aimed = [_firing("size", "shrink", ("a",))]
        assert plan_runs(aimed, "default") == (Step("shrink", frozenset({"a"})),)
        assert plan_runs(aimed, "default", RunMode.OVERFLOW) == (
            Step("shrink", frozenset({"a"})),
            Step("default"),
        )
        whole = [_firing("message_count", "default")]
        assert plan_runs(whole, "default", RunMode.OVERFLOW) == (Step("default"),)

    @pytest.mark.parametrize(
        ("mode", "default_runs"),
        [
            (RunMode.MANUAL, True),
            (RunMode.OVERFLOW, True),
            (RunMode.SOFT, False),
            (RunMode.BACKGROUND, False),
        ],
    )
    def test_only_a_manual_or_overflowing_run_adds_the_default(
        self, mode: RunMode, default_runs: bool
    ) -> None:
        """Beside an aimed firing, the default pipeline runs in MANUAL and OVERFLOW only."""
        aimed = [_firing("size", "shrink", ("a",))]
        extra = (Step("default"),) if default_runs else ()
        assert plan_runs(aimed, "default", mode) == (Step("shrink", frozenset({"a"})), *extra)


def _manager(**options: Any) -> ContextManager:
    options.setdefault("counter", WordCounter())
    options.setdefault("guards", GuardConfig(floor_tokens=0))
    return make_manager(**options)


def _session(manager: ContextManager, aimed: TriggerSpec | None = None) -> tuple[str, str]:
    manager.add_system("You are careful.")
    manager.add_user("Look at both logs.")
    manager.add_assistant("Reading.", [{"id": "a", "name": "bash"}, {"id": "b", "name": "bash"}])
    first = manager.add_tool_result("a", LOG, triggers=(aimed,) if aimed else ())
    second = manager.add_tool_result("b", LOG)
    manager.add_assistant("Both read.")
    return first, second


class TestManager:
    def test_a_node_trigger_runs_its_pipeline_on_that_node_only(self) -> None:
        spec = TriggerSpec(kind="size", threshold=100, pipeline="shrink")
        manager = _manager(
            triggers=TriggerConfig(soft_ratio=None, hard_ratio=None),
            pipelines={"shrink": [ToolOutputTruncator(max_tokens=40)]},
        )
        first, second = _session(manager, spec)
        manager.render_sync()
        edits = manager.working.audit()
        assert [entry.processor for entry in edits] == ["truncate"]
        assert edits[0].removed == (first,)
        assert manager.working.is_current(second)  # the other big output is untouched

    def test_a_graph_trigger_runs_the_pipeline_it_is_mapped_to(self) -> None:
        manager = _manager(
            triggers=TriggerConfig(
                soft_ratio=None, hard_ratio=None, pipelines={"boundary": "light"}
            ),
            pipeline=[ToolOutputTruncator(max_tokens=40)],
            pipelines={
                "light": [ObservationMasker(keep_turns=None, mask_consumed=True, min_tokens=10)]
            },
        )
        _session(manager)
        manager.add_user("Thanks, next task.")
        manager.mark_boundary("logs read")
        manager.render_sync()
        assert {entry.processor for entry in manager.working.audit()} == {"mask"}

    def test_a_trigger_naming_an_unknown_pipeline_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match="'nowhere'"):
            _manager(triggers=TriggerConfig(pipelines={"boundary": "nowhere"}))

    def test_a_node_trigger_naming_an_unknown_pipeline_refuses_the_batch(self) -> None:
        manager = _manager()
        manager.add_user("hi")
        manager.add_assistant("Reading.", [{"id": "a", "name": "bash"}])
        before = len(manager.raw)
        spec = TriggerSpec(kind="size", threshold=1, pipeline="nowhere")
        with pytest.raises(IngestError, match="'nowhere'"):
            manager.ingest(
                [
                    {"type": "tool_result", "call_id": "a", "content": "x"},
                    {"type": "user", "content": "more", "triggers": [spec]},
                ]
            )
        assert len(manager.raw) == before

    @pytest.mark.parametrize(
        ("pipelines", "match"),
        [
            ([ToolOutputTruncator()], "must map names"),
            ({"": [ToolOutputTruncator()]}, "non-empty"),
            ({"default": [ToolOutputTruncator()]}, "default pipeline"),
            ({"x": ["not a processor"]}, r"pipelines\['x'\]"),
        ],
    )
    def test_bad_pipelines_are_refused(self, pipelines: object, match: str) -> None:
        with pytest.raises(ConfigurationError, match=match):
            _manager(pipelines=pipelines)


class TestTomlPolicy:
    TOML = """
name = "split"
[triggers]
pipelines = { boundary = "light" }
[[stages]]
processor = "truncate"
[[pipelines.light]]
processor = "mask"
options = { mask_consumed = true }
"""

    def test_named_pipelines_from_toml_reach_the_manager(self) -> None:
        profile = Policy.from_toml(self.TOML)
        options = resolve_options(profile)
        assert [type(p) for p in options.pipelines["light"]] == [ObservationMasker]
        assert [type(p) for p in options.default_stages] == [ToolOutputTruncator]

    def test_a_trigger_naming_a_pipeline_the_profile_lacks_is_refused(self) -> None:
        with pytest.raises(ConfigurationError, match=r"triggers\.pipelines\.boundary"):
            Policy.from_toml(self.TOML.replace('"light" }', '"heavy" }'))

    def test_a_bad_stage_in_a_named_pipeline_names_its_place(self) -> None:
        with pytest.raises(ConfigurationError, match=r"pipelines\.light\[0\]"):
            Policy.from_toml(self.TOML.replace("mask_consumed = true", "keep_turns = -5"))

    def test_a_firing_first_seen_at_render_runs_its_own_pipeline(self) -> None:
        """No budget on ingest: the soft trigger first fires when render gives one."""
        manager = _manager(
            triggers=TriggerConfig(
                soft_ratio=0.5, hard_ratio=0.95, pipelines={"budget_soft": "light"}
            ),
            pipeline=[ToolOutputTruncator(max_tokens=40)],
            pipelines={
                "light": [ObservationMasker(keep_turns=None, mask_consumed=True, min_tokens=10)]
            },
        )
        _session(manager)
        # ~620 words: over half of 1,000, yet it fits; the async path, as an agent awaits it
        anyio.run(functools.partial(manager.render, budget=1_000))
        assert {entry.processor for entry in manager.working.audit()} == {"mask"}
