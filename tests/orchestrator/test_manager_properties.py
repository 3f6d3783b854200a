"""Property tests of `ContextManager`: random sessions, triggers, pipelines and budgets.

A random session is fed event by event, as an agent loop would, and rendered at every
point where the agent would call its model. Whatever the configuration, every render is
provider-valid and within its budget (or refused with a `BudgetExceededError` that
names the budget and what the request needs), the pristine record stays exactly as
ingested, and every node of the working view expands to the originals that were
ingested. Some outputs carry a credential, and some managers redact secrets, so safety
edits (which may touch pinned nodes) meet compaction edits too.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

import anyio
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    BudgetExceededError,
    FileRead,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.graph.nodes import Node, TriggerSpec
from context_graph.render import FORMATS, count_payload
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate.request import validate
from orchestrator import ContextManager, GuardConfig, Recorder, TriggerConfig
from orchestrator.compaction.overflow import MIN_HEAD_CHARS
from orchestrator.policy import Policy, get_policy
from orchestrator.replay import model_call_points

VOCABULARY = (
    "parser token error value config module import return status failed passed "
    "assert request handler cache index buffer stream line column offset retry"
).split()
PATHS = ("src/parser.py", "src/cache.py", "tests/test_parser.py")
# Sizes in words (the counter counts words): a one-liner up to a long log.
SIZES = (2, 12, 60, 250, 900)
# A credential the secret redactor recognizes (GitHub token format; not a real one).
SECRET = "token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def _text(seed: int, words: int) -> str:
    """Deterministic text of `words` words, eight to a line, like a log or a file."""
    rng = random.Random(seed)
    chosen = [rng.choice(VOCABULARY) for _ in range(words)]
    return "\n".join(" ".join(chosen[i : i + 8]) for i in range(0, words, 8))


def _content(draw: st.DrawFn) -> str:
    text = _text(draw(st.integers(0, 2**16)), draw(st.sampled_from(SIZES)))
    return f"{text}\n{SECRET}" if draw(st.integers(0, 5)) == 0 else text


NODE_TRIGGERS = st.lists(
    st.one_of(
        st.builds(TriggerSpec, kind=st.just("size"), threshold=st.sampled_from([10, 100, 500])),
        st.builds(TriggerSpec, kind=st.just("age"), threshold=st.integers(0, 2)),
        st.builds(TriggerSpec, kind=st.just("superseded")),
        st.builds(TriggerSpec, kind=st.just("consumed")),
    ),
    max_size=2,
)


def _answer(draw: st.DrawFn, call_id: str) -> AgentEvent:
    triggers = tuple(draw(NODE_TRIGGERS))
    if draw(st.booleans()):
        path = draw(st.sampled_from(PATHS))
        return FileRead(path=path, content=_content(draw), call_id=call_id, triggers=triggers)
    return ToolResult(
        call_id=call_id, content=_content(draw), is_error=draw(st.booleans()), triggers=triggers
    )


@st.composite
def sessions(draw: st.DrawFn) -> list[AgentEvent]:
    """A coding-agent session: user turns, each followed by steps of tool calls."""
    events: list[AgentEvent] = [SystemPrompt(content=_text(draw(st.integers(0, 99)), 20))]
    for turn in range(draw(st.integers(1, 3))):
        events.append(
            UserTurn(content=_text(draw(st.integers(0, 99)), draw(st.sampled_from(SIZES[:3]))))
        )
        for step in range(draw(st.integers(0, 4))):
            calls = [f"t{turn}s{step}c{i}" for i in range(draw(st.integers(1, 2)))]
            events.append(
                AssistantTurn(
                    content=_text(step, draw(st.sampled_from(SIZES[:2]))),
                    tool_calls=tuple(ToolCall(id=c, name="read") for c in calls),
                )
            )
            events.extend(_answer(draw, call) for call in calls)
            if draw(st.integers(0, 3)) == 0:
                # The harness speaks in the user's role (a background task finished).
                events.append(UserTurn(content=_text(step, 12), notice=True))
        if draw(st.booleans()):
            events.append(AssistantTurn(content=_text(turn, draw(st.sampled_from(SIZES[:3])))))
    return events


@st.composite
def trigger_configs(draw: st.DrawFn) -> TriggerConfig:
    """Any valid graph-level trigger configuration."""
    soft = draw(st.none() | st.sampled_from([0.3, 0.5, 0.7]))
    hard = draw(st.none() | st.sampled_from([0.6, 0.8, 0.95]))
    if soft is not None and hard is not None and soft >= hard:
        soft = None
    return TriggerConfig(
        soft_ratio=soft,
        hard_ratio=hard,
        hysteresis=draw(st.sampled_from([0.05, 0.1, 0.2])),
        max_messages=draw(st.none() | st.integers(2, 30)),
        max_tool_output_tokens=draw(st.none() | st.integers(5, 2_000)),
    )


GUARDS = st.builds(
    GuardConfig,
    min_progress=st.sampled_from([0.0, 0.05, 0.3]),
    floor_tokens=st.sampled_from([0, 100, 1_024]),
)


@dataclass(frozen=True)
class Setup:
    """One manager configuration."""

    format: ProviderFormat
    budget: int
    triggers: TriggerConfig
    stages: str
    guards: GuardConfig
    compact_to: float
    redact: bool

    def manager(self) -> ContextManager:
        pipeline = None if self.stages == "default" else get_policy(self.stages).pipeline
        return ContextManager(
            format=self.format,
            budget=self.budget,
            counter=WordCounter(),
            policy=Policy(
                triggers=self.triggers,
                pipeline=pipeline,
                guards=self.guards,
                compact_to=self.compact_to,
                redact_secrets=self.redact,
            ),
        )


SETUPS = st.builds(
    Setup,
    format=st.sampled_from(FORMATS),
    budget=st.integers(100, 4_000),
    triggers=trigger_configs(),
    stages=st.sampled_from(["default", "coding", "service", "chat"]),
    guards=GUARDS,
    compact_to=st.sampled_from([0.5, 0.7, 1.0]),
    redact=st.booleans(),
)


def _pristine(manager: ContextManager) -> tuple[object, ...]:
    """Everything observable about the raw record, nodes included."""
    raw = manager.raw
    return graph_snapshot(raw), tuple(raw)


def _render_and_check(manager: ContextManager, setup: Setup, request: str = "") -> bool:
    """Render once and check the promises; return whether the render was refused.

    `request` is the text of the user's latest request (not a notice): every request
    sent carries it verbatim.
    """
    before = _pristine(manager)
    last = manager.stats().last_render_tokens
    try:
        with Recorder(manager.bus) as recorder:
            result = manager.render_sync()
    except BudgetExceededError as exc:
        # Refused: typed, with the numbers, and no new request for the caller.
        assert exc.budget == setup.budget < exc.required
        assert manager.stats().last_render_tokens == last
        refused = True
    else:
        assert validate(result.payload, setup.format) == []
        assert not setup.redact or SECRET not in json.dumps(result.payload)
        # Verbatim, or (the overflow fallback, said on the bus) its head, cut with a notice.
        degraded = bool(recorder.of("overflow_fallback"))
        sent = request[: MIN_HEAD_CHARS // 2] if degraded else request
        assert json.dumps(sent)[1:-1] in json.dumps(result.payload)
        assert result.tokens <= setup.budget
        tokens = count_payload(result.payload, setup.format, manager.raw.token_cache)
        assert result.tokens == tokens
        refused = False
    assert _pristine(manager) == before
    return refused


def _check_expand(manager: ContextManager, ingested: dict[str, Node]) -> None:
    """Every working node, and every node an edit added, expands to ingested originals."""
    working = manager.working
    added = [node_id for entry in working.audit() for node_id in entry.added]
    for node_id in (*working.current_ids(), *added):
        originals = manager.expand(node_id)
        assert originals, node_id
        assert all(original is ingested[original.id] for original in originals), node_id
        if node_id in ingested:
            assert originals == (ingested[node_id],)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=sessions(), setup=SETUPS, data=st.data())
def test_every_render_is_valid_within_budget_and_the_record_stays_pristine(
    events: list[AgentEvent], setup: Setup, data: st.DataObject
) -> None:
    """Fed event by event, the manager renders valid requests in budget or refuses cleanly."""
    manager = setup.manager()
    ingested: dict[str, Node] = {}
    points = model_call_points(events)
    refused = 0
    request = ""
    for fed, agent_event in enumerate(events, start=1):
        for node_id in manager.ingest([agent_event]):
            ingested[node_id] = manager.raw[node_id]
        if isinstance(agent_event, UserTurn) and not agent_event.notice:
            request = manager.raw[manager.raw.transcript()[-1]].text
        if fed not in points:
            continue
        action = data.draw(st.sampled_from(["render", "render", "boundary", "compact"]))
        if action == "boundary":
            manager.mark_boundary(f"after event {fed}")
        elif action == "compact":
            _compact(manager)
        refused += _render_and_check(manager, setup, request)
        _check_expand(manager, ingested)
    raw = manager.raw
    assert raw.transcript() == tuple(ingested)
    assert len(raw) == len(ingested)
    assert all(raw[node_id] is node for node_id, node in ingested.items())
    event(f"refused renders: {'some' if refused else 'none'}")
    processors = {entry.processor for entry in manager.working.audit()}
    event(f"proposals applied: {'some' if processors else 'none'}")
    for name in sorted(processors):
        event(f"applied by {name}")


def _compact(manager: ContextManager) -> None:
    """A manual compaction: it too leaves the pristine record as it was."""
    before = _pristine(manager)
    anyio.run(manager.compact)
    assert _pristine(manager) == before


class TestRefusedRender:
    def test_a_refused_render_keeps_the_audited_compaction_it_applied(self) -> None:
        """Decided behaviour: compaction is the manager's own, audited and reversible edit.

        A render that raises BudgetExceededError keeps the proposals it applied before it
        found that even the compacted floor does not fit: each passed the invariant
        checker, the pristine record is unchanged, `expand` returns the originals, and a
        retry (with a larger budget, or after the caller trimmed its input) starts from
        the smaller view instead of compacting again.
        """
        # Under even the overflow fallback's shortest heads (the system prompt, both
        # requests and the outputs cut to 200 characters each, with notices).
        manager = ContextManager(format="openai", budget=60, counter=WordCounter(), policy=Policy())
        manager.add_system("you are a careful agent")
        manager.add_user("fix the parser " * 50)  # the first request: part of the floor
        for i in range(3):
            manager.add_assistant(f"step {i}", tool_calls=[{"id": f"c{i}", "name": "bash"}])
            manager.add_tool_result(f"c{i}", _text(i, 480))
        manager.add_user("now explain every change you made " * 35)  # the latest turn
        pristine = [node.text for node in manager.raw]
        with pytest.raises(BudgetExceededError):
            manager.render_sync()
        audit = manager.working.audit()
        assert audit  # the compaction stays
        assert [node.text for node in manager.raw][: len(pristine)] == pristine
        for entry in audit:
            for node_id in entry.added:
                assert all(node.seq is not None for node in manager.expand(node_id))
        result = manager.render_sync(budget=2_000)
        assert validate(result.payload, "openai") == []
