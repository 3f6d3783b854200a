"""What triggers are declared as, and what fires: names, config, state, `Firing`.

`orchestrator.compaction.triggers` evaluates them; these are the values it reads and
returns, frozen, so that evaluation stays a pure function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, Protocol, TypeAlias, TypedDict, Unpack, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from context_graph._keywords import check_keywords
from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node, TriggerKind, TriggerSpec
from context_graph.graph.units import Unit

__all__ = [
    "NODE_TRIGGERS",
    "TRIGGER_NAMES",
    "Firing",
    "LevelTrigger",
    "TriggerConfig",
    "TriggerFields",
    "TriggerName",
    "TriggerState",
    "TriggerView",
]

LevelTrigger: TypeAlias = Literal[
    "budget_hard", "budget_soft", "message_count", "tool_output_tokens"
]
"""The threshold triggers, which disarm on firing and rearm with hysteresis."""

TriggerName: TypeAlias = Literal[
    "budget_soft",
    "budget_hard",
    "message_count",
    "tool_output_tokens",
    "boundary",
    "manual",
    "size",
    "age",
    "superseded",
    "consumed",
]
"""Every trigger by name; `TriggerConfig.pipelines` maps these to pipelines."""

#: Every trigger name, in the order of `TriggerName`.
TRIGGER_NAMES: tuple[TriggerName, ...] = get_args(TriggerName)
#: The node-level trigger kinds, in the order their firings are listed.
NODE_TRIGGERS: tuple[TriggerKind, ...] = ("size", "age", "superseded", "consumed")

_FROZEN = ConfigDict(frozen=True, extra="forbid")


class TriggerView(Protocol):
    """What the evaluator reads: a `WorkingView` (`WorkingGraph.view`) or a `ContextGraph`."""

    @property
    def turns(self) -> int:
        """How many user turns the session has had."""

    @property
    def total_tokens(self) -> int:
        """The content tokens of every node in the view."""

    def units(self) -> tuple[Unit, ...]:
        """The view's interaction units, in order."""

    def tokens(self, node_id: str) -> int:
        """One node's content tokens."""

    def is_superseded(self, node_id: str) -> bool:
        """Whether a later read of the same file covers this node."""

    def __getitem__(self, node_id: str) -> Node: ...


class TriggerFields(TypedDict, total=False):
    """The keywords `TriggerConfig(...)` takes: its fields, each documented there."""

    soft_ratio: float | None
    hard_ratio: float | None
    hysteresis: float
    max_messages: int | None
    max_tool_output_tokens: int | None
    default_pipeline: str
    pipelines: Mapping[TriggerName, str]


class TriggerConfig(BaseModel):
    """The graph-level triggers and the pipelines triggers run.

    Invalid options raise `ConfigurationError` when constructed directly.
    """

    model_config = _FROZEN

    soft_ratio: float | None = Field(0.7, gt=0)
    """Fire `budget_soft` when view tokens / budget reach this; `None` turns it off."""
    hard_ratio: float | None = Field(0.9, gt=0)
    """Fire `budget_hard` when view tokens / budget reach this; `None` turns it off."""
    hysteresis: float = Field(0.1, gt=0, lt=1)
    """How far a threshold trigger's value must fall below its threshold to rearm."""
    max_messages: int | None = Field(None, gt=0)
    """Fire `message_count` when the view holds more nodes than this."""
    max_tool_output_tokens: int | None = Field(None, gt=0)
    """Fire `tool_output_tokens` when tool outputs in the view hold more tokens than this."""
    default_pipeline: str = Field("default", min_length=1)
    """The pipeline of a trigger that `pipelines` (or its `TriggerSpec`) does not name."""
    pipelines: Mapping[TriggerName, str] = Field(default_factory=dict)
    """Trigger name -> pipeline name; a node's `TriggerSpec.pipeline` takes precedence."""

    def __init__(self, **data: Unpack[TriggerFields]) -> None:
        check_keywords("TriggerConfig()", data, TriggerFields)
        try:
            super().__init__(**data)
        except ValidationError as exc:
            problems = "; ".join(
                f"`{'.'.join(str(p) for p in e['loc']) or 'config'}`: {e['msg']}"
                for e in exc.errors()
            )
            msg = f"TriggerConfig: {problems}"
            raise ConfigurationError(msg) from None

    @model_validator(mode="after")
    def _check_levels(self) -> TriggerConfig:
        soft, hard = self.soft_ratio, self.hard_ratio
        if soft is not None and hard is not None and soft >= hard:
            msg = f"soft_ratio {soft} must be below hard_ratio {hard}"
            raise ValueError(msg)
        lowest = min((r for r in (soft, hard) if r is not None), default=None)
        if lowest is not None and self.hysteresis >= lowest:
            msg = (
                f"hysteresis {self.hysteresis} must be below the lowest ratio {lowest}, "
                "or that trigger would never rearm"
            )
            raise ValueError(msg)
        if any(not name for name in self.pipelines.values()):
            msg = "pipeline names must not be empty"
            raise ValueError(msg)
        return self

    def pipeline_for(self, name: TriggerName, spec: TriggerSpec | None = None) -> str:
        """The pipeline a trigger runs: the spec's own, else `pipelines[name]`, else default."""
        if spec is not None and spec.pipeline is not None:
            return spec.pipeline
        return self.pipelines.get(name, self.default_pipeline)


class TriggerState(BaseModel):
    """What already fired and what is pending; immutable, so evaluation stays pure."""

    model_config = _FROZEN

    disarmed: frozenset[LevelTrigger] = frozenset()
    """Threshold triggers that fired and have not rearmed yet."""
    node_fired: frozenset[tuple[str, int]] = frozenset()
    """(node id, index into the node's `triggers`) of node triggers that fired."""
    boundaries: tuple[str, ...] = ()
    """Task boundaries marked since the last evaluation, oldest first."""
    manual: bool = False
    """Whether a manual compaction was requested since the last evaluation."""

    def mark_boundary(self, label: str) -> TriggerState:
        """A state with a task boundary `label` pending (it fires at the next evaluation)."""
        if not label:
            msg = "mark_boundary: the label is empty; name the task that ended"
            raise ConfigurationError(msg)
        return self.model_copy(update={"boundaries": (*self.boundaries, label)})

    def request_manual(self) -> TriggerState:
        """A state with a manual compaction pending (it fires once, at the next evaluation)."""
        return self.model_copy(update={"manual": True})


class Firing(BaseModel):
    """One trigger that fired: what, which pipeline to run, on which nodes, and why."""

    model_config = _FROZEN

    kind: TriggerKind
    """The trigger's kind (both budget levels are `budget_ratio`)."""
    name: TriggerName
    """The trigger's name, which tells the budget levels apart."""
    pipeline: str
    """The pipeline to run."""
    targets: tuple[str, ...] = ()
    """For node triggers, the ids of the nodes that fired, in view order."""
    reason: str
    """A short human explanation with the numbers that made it fire."""
