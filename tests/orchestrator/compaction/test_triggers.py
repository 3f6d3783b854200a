from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.nodes import Node, TriggerSpec
from context_graph.graph.units import Unit
from context_graph.testing import WordCounter
from orchestrator.compaction.triggers import (
    TRIGGER_NAMES,
    Firing,
    TriggerConfig,
    TriggerState,
    evaluate,
)
from orchestrator.working.buffer import WorkingGraph


@dataclass(frozen=True)
class RatioView:
    """A view with no nodes and a given token total: enough for the budget triggers."""

    total_tokens: int
    turns: int = 0

    def units(self) -> tuple[Unit, ...]:
        return ()

    def tokens(self, node_id: str) -> int:
        raise KeyError(node_id)

    def is_superseded(self, node_id: str) -> bool:
        raise KeyError(node_id)

    def __getitem__(self, node_id: str) -> Node:
        raise KeyError(node_id)


BUDGET = 1_000
ONLY_SOFT = TriggerConfig(soft_ratio=0.7, hard_ratio=None, hysteresis=0.1)


def _run(ratios: list[float], config: TriggerConfig) -> list[list[str]]:
    """The trigger names fired at each ratio, evaluated in sequence."""
    state = TriggerState()
    fired: list[list[str]] = []
    for ratio in ratios:
        firings, state = evaluate(RatioView(round(ratio * BUDGET)), BUDGET, state, config=config)
        fired.append([f.name for f in firings])
    return fired


def _names(firings: list[Firing]) -> list[str]:
    return [f.name for f in firings]


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("you are a careful agent")
    graph.add_user("read the parser please")
    graph.add_assistant("reading", tool_calls=[{"id": "c1", "name": "read"}])
    graph.add_file_read(
        "parser.py",
        "one two three four five six seven eight nine ten",
        call_id="c1",
        triggers=[
            TriggerSpec(kind="size", threshold=5, pipeline="truncate"),
            TriggerSpec(kind="superseded"),
        ],
    )
    return graph


@pytest.fixture(name="working")
def working_fixture(graph: ContextGraph) -> WorkingGraph:
    return WorkingGraph(graph, clock=lambda: 0.0)


class TestTriggerConfig:
    def test_defaults_are_valid(self) -> None:
        """The default configuration has a soft 0.7 and a hard 0.9 budget ratio."""
        config = TriggerConfig()
        assert (config.soft_ratio, config.hard_ratio, config.hysteresis) == (0.7, 0.9, 0.1)

    @pytest.mark.parametrize(
        "options",
        [
            {"soft_ratio": 0},
            {"hard_ratio": -0.5},
            {"soft_ratio": 0.9, "hard_ratio": 0.9},
            {"soft_ratio": 0.95, "hard_ratio": 0.9},
            {"hysteresis": 0},
            {"hysteresis": 1},
            {"soft_ratio": 0.05, "hysteresis": 0.1},
            {"max_messages": 0},
            {"max_tool_output_tokens": -1},
            {"pipelines": {"budget_soft": ""}},
            {"pipelines": {"nonsense": "x"}},
            {"default_pipeline": ""},
        ],
    )
    def test_invalid_options_raise_configuration_error(self, options: dict[str, object]) -> None:
        """Every invalid value is refused at construction with a ConfigurationError.

        An unknown keyword is a `TypeError` (tests/orchestrator/compaction/
        test_config_keywords.py).
        """
        with pytest.raises(ConfigurationError, match="TriggerConfig"):
            TriggerConfig(**options)

    def test_is_frozen(self) -> None:
        """A configuration cannot be changed after construction."""
        with pytest.raises(ValueError, match="frozen"):
            TriggerConfig().soft_ratio = 0.5

    def test_pipeline_for_prefers_spec_then_mapping_then_default(self) -> None:
        """A spec's pipeline wins over the mapping, which wins over the default."""
        config = TriggerConfig(default_pipeline="base", pipelines={"size": "truncate"})
        assert config.pipeline_for("size", TriggerSpec(kind="size", pipeline="mask")) == "mask"
        assert config.pipeline_for("size", TriggerSpec(kind="size")) == "truncate"
        assert config.pipeline_for("age") == "base"

    def test_trigger_names_are_listed(self) -> None:
        """TRIGGER_NAMES lists every trigger name once."""
        assert len(TRIGGER_NAMES) == len(set(TRIGGER_NAMES)) == 10


class TestBudgetRatio:
    def test_soft_fires_at_threshold(self) -> None:
        """The soft trigger fires when the ratio reaches the soft threshold."""
        firings, _ = evaluate(RatioView(750), BUDGET, TriggerState())
        assert firings == [
            Firing(
                kind="budget_ratio",
                name="budget_soft",
                pipeline="default",
                reason="budget ratio 0.75 reached the soft threshold 0.70 (750 of 1000 tokens)",
            )
        ]

    def test_soft_does_not_fire_below_threshold(self) -> None:
        """Below the soft threshold nothing fires."""
        assert evaluate(RatioView(690), BUDGET, TriggerState()) == ([], TriggerState())

    def test_hysteresis_holds_then_rearms(self) -> None:
        """After firing at 0.75, 0.76 does not fire; after 0.5 and back to 0.75 it fires."""
        assert _run([0.75, 0.76, 0.5, 0.75], ONLY_SOFT) == [
            ["budget_soft"],
            [],
            [],
            ["budget_soft"],
        ]

    def test_dropping_into_the_hysteresis_band_does_not_rearm(self) -> None:
        """A fall to 0.65 (above 0.7 - 0.1) leaves the soft trigger disarmed."""
        assert _run([0.75, 0.65, 0.75], ONLY_SOFT) == [["budget_soft"], [], []]

    def test_hard_fires_and_subsumes_soft(self) -> None:
        """A jump past the hard threshold fires hard only, and soft stays quiet afterwards."""
        assert _run([0.95, 0.8, 0.75], TriggerConfig()) == [["budget_hard"], [], []]

    def test_hard_does_not_fire_between_soft_and_hard(self) -> None:
        """Between the thresholds only soft fires; hard fires once the ratio reaches 0.9."""
        assert _run([0.8, 0.92], TriggerConfig()) == [["budget_soft"], ["budget_hard"]]

    def test_no_budget_means_no_ratio_triggers(self) -> None:
        """Without a budget the ratio triggers are skipped."""
        assert evaluate(RatioView(10**6), None, TriggerState())[0] == []

    @pytest.mark.parametrize("budget", [0, -10])
    def test_non_positive_budget_is_refused(self, budget: int) -> None:
        """A budget that is not positive is a ConfigurationError."""
        with pytest.raises(ConfigurationError, match="budget must be a positive"):
            evaluate(RatioView(1), budget, TriggerState())

    def test_pipeline_comes_from_the_mapping(self) -> None:
        """The firing names the pipeline mapped to its trigger name."""
        config = TriggerConfig(pipelines={"budget_hard": "drop_units"})
        firings, _ = evaluate(RatioView(950), BUDGET, TriggerState(), config=config)
        assert [(f.name, f.pipeline) for f in firings] == [("budget_hard", "drop_units")]

    @given(st.lists(st.floats(min_value=0.0, max_value=1.2), max_size=40))
    def test_soft_never_fires_twice_without_rearming(self, ratios: list[float]) -> None:
        """Between two soft firings the ratio always fell below the rearm level."""
        fired = _run(ratios, ONLY_SOFT)
        rearm = 0.7 - 0.1
        last: int | None = None
        for i, names in enumerate(fired):
            if "budget_soft" in names:
                if last is not None:
                    between = ratios[last + 1 : i]
                    assert any(round(r * BUDGET) / BUDGET < rearm for r in between)
                last = i


class TestMessageCount:
    def test_fires_over_the_limit(self, working: WorkingGraph) -> None:
        """Five nodes in view against a limit of four fire the message-count trigger."""
        config = TriggerConfig(max_messages=4)
        firings, _ = evaluate(working.view, None, TriggerState(), config=config)
        assert [(f.name, f.reason) for f in firings if f.name == "message_count"] == [
            ("message_count", "5 messages in view, over the limit of 4")
        ]

    def test_does_not_fire_at_the_limit(self, working: WorkingGraph) -> None:
        """Exactly the limit of nodes does not fire."""
        config = TriggerConfig(max_messages=5)
        firings, _ = evaluate(working.view, None, TriggerState(), config=config)
        assert "message_count" not in _names(firings)

    def test_does_not_fire_again_until_it_rearms(self, working: WorkingGraph) -> None:
        """Once fired, the count trigger stays quiet while the count stays high."""
        config = TriggerConfig(max_messages=4)
        _, state = evaluate(working.view, None, TriggerState(), config=config)
        working.pristine.add_user("more")
        firings, _ = evaluate(working.view, None, state, config=config)
        assert "message_count" not in _names(firings)


class TestToolOutputTokens:
    def test_fires_over_the_limit(self, working: WorkingGraph) -> None:
        """An eleven-token file read (ten words and its path) against a limit of ten fires."""
        config = TriggerConfig(max_tool_output_tokens=10)
        firings, _ = evaluate(working.view, None, TriggerState(), config=config)
        assert "tool_output_tokens" in _names(firings)

    def test_does_not_fire_at_the_limit(self, working: WorkingGraph) -> None:
        """Eleven tool-output tokens against a limit of eleven do not fire."""
        config = TriggerConfig(max_tool_output_tokens=11)
        firings, _ = evaluate(working.view, None, TriggerState(), config=config)
        assert "tool_output_tokens" not in _names(firings)


class TestBoundary:
    def test_fires_once_per_mark(self) -> None:
        """A marked boundary fires at the next evaluation and not at the one after."""
        state = TriggerState().mark_boundary("task 1")
        firings, state = evaluate(RatioView(0), BUDGET, state)
        assert [(f.name, f.reason) for f in firings] == [("boundary", "task boundary `task 1`")]
        assert evaluate(RatioView(0), BUDGET, state)[0] == []

    def test_does_not_fire_unmarked(self) -> None:
        """Without a mark no boundary fires."""
        assert evaluate(RatioView(0), BUDGET, TriggerState())[0] == []

    def test_empty_label_is_refused(self) -> None:
        """An empty boundary label is a ConfigurationError."""
        with pytest.raises(ConfigurationError, match="label is empty"):
            TriggerState().mark_boundary("")


class TestManual:
    def test_fires_once_per_request(self) -> None:
        """A manual request fires at the next evaluation and then clears."""
        state = TriggerState().request_manual()
        firings, state = evaluate(RatioView(0), BUDGET, state)
        assert _names(firings) == ["manual"]
        assert evaluate(RatioView(0), BUDGET, state)[0] == []

    def test_does_not_fire_unrequested(self) -> None:
        """Without a request no manual trigger fires."""
        assert evaluate(RatioView(0), BUDGET, TriggerState())[0] == []


class TestSize:
    def test_fires_over_threshold(self, working: WorkingGraph, graph: ContextGraph) -> None:
        """An eleven-token file with a size trigger of five fires with its own pipeline."""
        file_id = graph.by_kind("file")[0]
        firings, _ = evaluate(working.view, None, TriggerState())
        assert firings == [
            Firing(
                kind="size",
                name="size",
                pipeline="truncate",
                targets=(file_id,),
                reason=f"`{file_id}` has 11 tokens (over 5)",
            )
        ]

    def test_does_not_fire_at_or_under_threshold(self) -> None:
        """A node not over its size threshold does not fire."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("a b c", triggers=[TriggerSpec(kind="size", threshold=3)])
        assert evaluate(WorkingGraph(graph).view, None, TriggerState())[0] == []

    def test_fires_once_per_node(self, working: WorkingGraph) -> None:
        """A node trigger that fired does not fire again with the returned state."""
        _, state = evaluate(working.view, None, TriggerState())
        assert evaluate(working.view, None, state)[0] == []

    def test_missing_threshold_is_refused(self) -> None:
        """A size trigger without a threshold is a ConfigurationError naming the node."""
        graph = ContextGraph(counter=WordCounter())
        node_id = graph.add_user("a b c", triggers=[TriggerSpec(kind="size")])
        with pytest.raises(ConfigurationError, match=f"node `{node_id}`.*no threshold"):
            evaluate(graph, None, TriggerState())

    def test_graph_level_kind_on_a_node_is_refused(self) -> None:
        """A graph-level trigger kind declared on a node is a ConfigurationError."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("a", triggers=[TriggerSpec(kind="manual")])
        with pytest.raises(ConfigurationError, match="graph-level"):
            evaluate(graph, None, TriggerState())


class TestAge:
    def _graph(self) -> tuple[ContextGraph, str]:
        graph = ContextGraph(counter=WordCounter())
        node_id = graph.add_user("first", triggers=[TriggerSpec(kind="age", threshold=1)])
        graph.add_user("second")
        return graph, node_id

    def test_fires_when_older_than_threshold(self) -> None:
        """A node two user turns old with an age trigger of one fires."""
        graph, node_id = self._graph()
        graph.add_user("third")
        firings, _ = evaluate(graph, None, TriggerState())
        assert [(f.name, f.targets) for f in firings] == [("age", (node_id,))]

    def test_does_not_fire_at_threshold(self) -> None:
        """A node one user turn old with an age trigger of one does not fire."""
        graph, _ = self._graph()
        assert evaluate(graph, None, TriggerState())[0] == []


class TestSuperseded:
    def test_fires_after_a_later_read(self, working: WorkingGraph, graph: ContextGraph) -> None:
        """A second read of the same file fires the first read's superseded trigger."""
        first = graph.by_kind("file")[0]
        graph.add_file_read("parser.py", "new")
        firings, _ = evaluate(working.view, None, TriggerState())
        assert ("superseded", (first,)) in [(f.name, f.targets) for f in firings]

    def test_does_not_fire_for_the_latest_read(self, working: WorkingGraph) -> None:
        """The only read of a file is not superseded."""
        firings, _ = evaluate(working.view, None, TriggerState())
        assert "superseded" not in _names(firings)


class TestConsumed:
    def _graph(self) -> tuple[ContextGraph, str]:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        graph.add_assistant("running", tool_calls=[{"id": "c1", "name": "bash"}])
        node_id = graph.add_tool_result(
            "c1", "output", triggers=[TriggerSpec(kind="consumed", pipeline="mask")]
        )
        return graph, node_id

    def test_fires_after_a_later_assistant_turn(self) -> None:
        """A tool result followed by an assistant turn fires its consumed trigger."""
        graph, node_id = self._graph()
        graph.add_assistant("done")
        firings, _ = evaluate(graph, None, TriggerState())
        assert [(f.name, f.pipeline, f.targets) for f in firings] == [
            ("consumed", "mask", (node_id,))
        ]

    def test_does_not_fire_before_the_model_saw_it(self) -> None:
        """A tool result with no assistant turn after it is not consumed."""
        graph, _ = self._graph()
        assert evaluate(graph, None, TriggerState())[0] == []


class TestEvaluate:
    def test_is_pure(self, working: WorkingGraph) -> None:
        """Repeat calls with the same state give equal results and leave the state alone."""
        state = TriggerState().request_manual().mark_boundary("b")
        config = TriggerConfig(max_messages=1)
        first = evaluate(working.view, 10, state, config=config)
        second = evaluate(working.view, 10, state, config=config)
        assert first == second
        assert state == TriggerState(manual=True, boundaries=("b",))

    def test_orders_firings(self, working: WorkingGraph) -> None:
        """Firings come manual, boundary, budget, counts, then node triggers."""
        state = TriggerState().request_manual().mark_boundary("b")
        config = TriggerConfig(max_messages=1, max_tool_output_tokens=1)
        firings, _ = evaluate(working.view, 10, state, config=config)
        assert _names(firings) == [
            "manual",
            "boundary",
            "budget_hard",
            "message_count",
            "tool_output_tokens",
            "size",
        ]

    def test_state_forgets_nodes_that_left_the_view(self) -> None:
        """Fired node triggers of nodes no longer in the view are dropped from the state."""
        state = TriggerState(node_fired=frozenset({("gone", 0)}))
        assert evaluate(RatioView(0), BUDGET, state)[1].node_fired == frozenset()
