"""Triggers: when compaction should run, and on which nodes.

`evaluate(view, budget, state)` is a pure function of the working view, the token budget
and a `TriggerState`: it returns the `Firing`s due now and the next state. The same
arguments always give the same answer; nothing is kept on any object, so the manager
(or a replay, or a test) holds the state and passes it back in.

Graph-level triggers come from a `TriggerConfig`:

- `budget_soft` / `budget_hard`: the view's tokens over the budget reached a ratio;
- `message_count`: more nodes in the view than a limit;
- `tool_output_tokens`: tool outputs (results, files, sub-agent answers) hold more tokens
  than a limit;
- `boundary`: `state.mark_boundary(label)` was called (fires once per mark);
- `manual`: `state.request_manual()` was called (fires once per request).

The threshold triggers (the first three kinds) have hysteresis. Once one fires it is
disarmed, and it rearms only after its value fell below the rearm level:
`ratio - hysteresis` for a budget ratio (hysteresis is a share of the budget), and
`limit * (1 - hysteresis)` for a count (a share of the limit). So a compaction that
leaves the view just under a threshold does not fire again on the next turn. A hard
firing also disarms the soft trigger: the hard pipeline does the soft one's work.

Node-level triggers are the `TriggerSpec`s each node declares: `size` (more than
`threshold` tokens), `age` (more than `threshold` user turns since the node), `superseded`
(a later read of the same file covers it) and `consumed` (an assistant turn came after
it). Each declared trigger fires at most once for its node; a replacement node is a new
node, so its own triggers count afresh. Firings of one kind and pipeline are grouped into
one `Firing` whose targets are in view order.
"""

from __future__ import annotations

from collections.abc import Mapping

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import Node, TriggerKind, TriggerSpec
from orchestrator.compaction.trigger_config import (
    NODE_TRIGGERS,
    TRIGGER_NAMES,
    Firing,
    LevelTrigger,
    TriggerConfig,
    TriggerName,
    TriggerState,
    TriggerView,
)
from orchestrator.working.figures import Position, ViewFigures, figures_of
from orchestrator.working.view import WorkingView

__all__ = [
    "NODE_TRIGGERS",
    "TRIGGER_NAMES",
    "Firing",
    "LevelTrigger",
    "TriggerConfig",
    "TriggerName",
    "TriggerState",
    "TriggerView",
    "evaluate",
]

# A trigger's name and its kind differ only for the two budget levels.
_KIND: Mapping[TriggerName, TriggerKind] = {
    "budget_soft": "budget_ratio",
    "budget_hard": "budget_ratio",
    "message_count": "message_count",
    "tool_output_tokens": "tool_output_tokens",
    "boundary": "boundary",
    "manual": "manual",
    "size": "size",
    "age": "age",
    "superseded": "superseded",
    "consumed": "consumed",
}
_NODE_NAME: Mapping[TriggerKind, TriggerName] = {
    "size": "size",
    "age": "age",
    "superseded": "superseded",
    "consumed": "consumed",
}


# --- graph-level triggers -------------------------------------------------------------------


def _level(
    name: LevelTrigger,
    value: float,
    threshold: float,
    rearm: float,
    disarmed: set[LevelTrigger],
) -> bool:
    """Update `disarmed` for one threshold trigger; return whether it fires now."""
    if name in disarmed:
        if value < rearm:
            disarmed.discard(name)
        return False
    if value >= threshold:
        disarmed.add(name)
        return True
    return False


def _budget_firings(
    config: TriggerConfig, tokens: int, budget: int, disarmed: set[LevelTrigger]
) -> list[Firing]:
    ratio = tokens / budget
    fired: list[Firing] = []
    levels: tuple[tuple[LevelTrigger, float | None, str], ...] = (
        ("budget_hard", config.hard_ratio, "hard"),
        ("budget_soft", config.soft_ratio, "soft"),
    )
    for name, threshold, word in levels:
        if threshold is None:
            continue
        if name == "budget_soft" and fired:
            disarmed.add(name)  # the hard firing subsumes the soft one
            continue
        if _level(name, ratio, threshold, threshold - config.hysteresis, disarmed):
            reason = (
                f"budget ratio {ratio:.2f} reached the {word} threshold {threshold:.2f} "
                f"({tokens} of {budget} tokens)"
            )
            fired.append(_graph_firing(config, name, reason))
    return fired


def _count_firing(
    config: TriggerConfig,
    name: LevelTrigger,
    value: int,
    limit: int | None,
    what: str,
    disarmed: set[LevelTrigger],
) -> list[Firing]:
    if limit is None:
        return []
    # Counts fire when over the limit, i.e. at limit + 1.
    rearm = limit * (1 - config.hysteresis)
    if not _level(name, value, limit + 1, rearm, disarmed):
        return []
    return [_graph_firing(config, name, f"{value} {what}, over the limit of {limit}")]


def _graph_firing(config: TriggerConfig, name: TriggerName, reason: str) -> Firing:
    return Firing(kind=_KIND[name], name=name, pipeline=config.pipeline_for(name), reason=reason)


# --- node-level triggers --------------------------------------------------------------------


def _node_reason(spec: TriggerSpec, node: Node, view: TriggerView) -> str | None:
    """Why `spec` fires on `node` now, or `None` when it does not (consumed aside)."""
    if spec.kind == "size":
        tokens = view.tokens(node.id)
        limit = _threshold(spec, node, "tokens")
        return f"`{node.id}` has {tokens} tokens (over {limit:g})" if tokens > limit else None
    if spec.kind == "age":
        age = view.turns - node.turn
        limit = _threshold(spec, node, "user turns")
        return f"`{node.id}` is {age} turns old (over {limit:g})" if age > limit else None
    if spec.kind == "superseded":
        return f"`{node.id}` is covered by a later read" if view.is_superseded(node.id) else None
    msg = (
        f"node `{node.id}`: trigger `{spec.kind}` is graph-level and cannot be declared on a "
        f"node; set it on TriggerConfig instead, or use one of {', '.join(NODE_TRIGGERS)}"
    )
    raise ConfigurationError(msg)


def _threshold(spec: TriggerSpec, node: Node, unit: str) -> float:
    if spec.threshold is None:
        msg = (
            f"node `{node.id}`: trigger `{spec.kind}` has no threshold; declare "
            f"TriggerSpec(kind={spec.kind!r}, threshold=N) with N in {unit}"
        )
        raise ConfigurationError(msg)
    return spec.threshold


def _node_firings(
    config: TriggerConfig,
    view: TriggerView,
    figures: ViewFigures,
    fired_before: frozenset[tuple[str, int]],
) -> tuple[list[Firing], set[tuple[str, int]]]:
    declared = figures.declared
    if not declared:  # the common case: evaluated after every ingest, so kept cheap
        return [], set()
    last_assistant: Position = figures.last_assistant
    groups: dict[tuple[TriggerKind, str], list[tuple[str, str]]] = {}
    fired: set[tuple[str, int]] = set()
    for position, node in declared:
        node_id = node.id
        for index, spec in enumerate(node.triggers):
            if (node_id, index) in fired_before:
                fired.add((node_id, index))
                continue
            if spec.kind == "consumed":
                due = last_assistant > position
                reason = f"`{node_id}` was followed by an assistant turn" if due else None
            else:
                reason = _node_reason(spec, node, view)
            if reason is None:
                continue
            fired.add((node_id, index))
            key = (spec.kind, config.pipeline_for(_NODE_NAME[spec.kind], spec))
            groups.setdefault(key, []).append((node_id, reason))
    order = sorted(groups, key=lambda k: (NODE_TRIGGERS.index(k[0]), k[1]))
    firings = [
        Firing(
            kind=kind,
            name=_NODE_NAME[kind],
            pipeline=pipeline,
            targets=tuple(node_id for node_id, _ in groups[kind, pipeline]),
            reason="; ".join(reason for _, reason in groups[kind, pipeline]),
        )
        for kind, pipeline in order
    ]
    return firings, fired


# --- evaluation -----------------------------------------------------------------------------


def evaluate(
    view: TriggerView,
    budget: int | None,
    state: TriggerState,
    *,
    config: TriggerConfig | None = None,
) -> tuple[list[Firing], TriggerState]:
    """Return the triggers that fire on `view` now, and the state to pass next time.

    Pure and deterministic: the arguments are not changed, and the same arguments give
    the same result. Firings come in a fixed order: manual, boundaries (oldest first),
    budget hard, budget soft, message count, tool-output tokens, then node triggers by
    kind (size, age, superseded, consumed).

    Args:
        view: The current working view (`WorkingGraph.view`) or a graph.
        budget: The token budget of the coming render; `None` skips the budget triggers.
        state: What fired before (start with `TriggerState()`).
        config: The graph-level triggers and pipelines; `TriggerConfig()` by default.

    Raises:
        ConfigurationError: a budget that is not positive, or a node trigger that is
            graph-level or lacks its threshold.
    """
    config = config if config is not None else TriggerConfig()
    if budget is not None and budget <= 0:
        msg = f"evaluate: budget must be a positive number of tokens, got {budget}"
        raise ConfigurationError(msg)
    # A working view keeps its figures up to date as events arrive; anything else is
    # counted here.
    figures = (
        view.figures()
        if isinstance(view, WorkingView)
        else figures_of(view.units(), view.__getitem__, view.tokens)
    )
    disarmed: set[LevelTrigger] = set(state.disarmed)
    firings: list[Firing] = []
    if state.manual:
        firings.append(_graph_firing(config, "manual", "manual compaction requested"))
    for label in state.boundaries:
        firings.append(_graph_firing(config, "boundary", f"task boundary `{label}`"))
    if budget is not None:
        firings += _budget_firings(config, view.total_tokens, budget, disarmed)
    firings += _count_firing(
        config, "message_count", figures.nodes, config.max_messages, "messages in view", disarmed
    )
    if config.max_tool_output_tokens is not None:
        firings += _count_firing(
            config,
            "tool_output_tokens",
            figures.output_tokens,
            config.max_tool_output_tokens,
            "tool-output tokens in view",
            disarmed,
        )
    node_firings, node_fired = _node_firings(config, view, figures, state.node_fired)
    firings += node_firings
    if (
        not state.boundaries
        and not state.manual
        and disarmed == state.disarmed
        and node_fired == state.node_fired
    ):
        return firings, state  # the usual case after an ingest: nothing moved
    new_state = TriggerState(disarmed=frozenset(disarmed), node_fired=frozenset(node_fired))
    return firings, new_state
