"""Property tests: for any event sequence, the graph keeps its promises."""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    ContextGraph,
    FileRead,
    IngestError,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.testing import WordCounter

CALL_IDS = st.sampled_from(["a", "b", "c"])
TEXT = st.text(alphabet="ab \n", max_size=12)

users = st.builds(UserTurn, content=TEXT)
assistants = st.builds(
    AssistantTurn,
    content=TEXT,
    tool_calls=st.lists(
        st.builds(ToolCall, id=CALL_IDS, name=st.sampled_from(["read", "bash"])), max_size=3
    ).map(tuple),
)
results = st.builds(ToolResult, call_id=CALL_IDS, content=TEXT, is_error=st.booleans())
reads = st.builds(
    FileRead,
    path=st.sampled_from(["x.py", "y.py"]),
    content=TEXT,
    call_id=st.none() | CALL_IDS,
    line_range=st.none() | st.tuples(st.integers(1, 5), st.none() | st.integers(5, 9)),
)
events = st.lists(st.one_of(users, assistants, results, reads), max_size=25)


@dataclass
class PairingModel:
    """The pairing rule written out plainly: newest turn's open calls, earliest first."""

    open_calls: list[tuple[int, int, str]] = field(default_factory=list)
    """(turn number, position, call id) of every unanswered call."""
    turn: int = 0
    position: int = 0

    def accepts(self, event: AgentEvent) -> bool:
        if isinstance(event, AssistantTurn):
            return True
        call_id = getattr(event, "call_id", None)
        return call_id is None or any(c[2] == call_id for c in self.open_calls)

    def apply(self, event: AgentEvent) -> tuple[int, int, str] | None:
        """Record the event; return the call it answers, if any."""
        if isinstance(event, AssistantTurn):
            self.turn += 1
            for call in event.tool_calls:
                self.position += 1
                self.open_calls.append((self.turn, self.position, call.id))
            return None
        call_id = getattr(event, "call_id", None)
        if call_id is None:
            return None
        matching = [c for c in self.open_calls if c[2] == call_id]
        newest = max(c[0] for c in matching)
        chosen = min((c for c in matching if c[0] == newest), key=lambda c: c[1])
        self.open_calls.remove(chosen)
        return chosen


def _graph() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


@settings(max_examples=150, deadline=None)
@given(events)
def test_pairing_follows_the_positional_rule(batch: list[AgentEvent]) -> None:
    """Results pair exactly as the plain rule says, and bad events change nothing."""
    graph = _graph()
    model = PairingModel()
    call_nodes: dict[tuple[int, int, str], str] = {}
    for event in batch:
        before = (graph.transcript(), tuple(graph.edges()), graph.unanswered_calls())
        if not model.accepts(event):
            try:
                graph.add(event)
            except IngestError:
                assert (graph.transcript(), tuple(graph.edges()), graph.unanswered_calls()) == (
                    before
                )
                continue
            raise AssertionError(f"accepted an event the rule refuses: {event!r}")
        added = graph.add(event)
        turn_before = model.turn
        answered = model.apply(event)
        if isinstance(event, AssistantTurn):
            positions = range(model.position - len(event.tool_calls) + 1, model.position + 1)
            for pos, call, node_id in zip(positions, event.tool_calls, added[1:], strict=True):
                call_nodes[(turn_before + 1, pos, call.id)] = node_id
        elif answered is not None:
            call_node = graph.call_of(added[0])
            assert call_node is not None
            assert call_node.id == call_nodes[answered]
    expected_open = sorted(call_nodes[c] for c in model.open_calls)
    assert sorted(graph.unanswered_calls()) == expected_open


@settings(max_examples=150, deadline=None)
@given(events)
def test_graph_is_acyclic_and_ids_deterministic(batch: list[AgentEvent]) -> None:
    """The graph stays a DAG, and replaying the accepted events reproduces every id."""
    graph = _graph()
    accepted: list[AgentEvent] = []
    for event in batch:
        try:
            graph.add(event)
        except IngestError:
            continue
        accepted.append(event)
    assert nx.is_directed_acyclic_graph(graph.nx)
    replay = _graph()
    replay.ingest(accepted)
    assert replay.transcript() == graph.transcript()
    assert sorted(replay.edges()) == sorted(graph.edges())
    assert len(set(graph.transcript())) == len(graph)


@settings(max_examples=150, deadline=None)
@given(events, events)
def test_batch_ingest_is_all_or_nothing(prefix: list[AgentEvent], batch: list[AgentEvent]) -> None:
    """A batch lands whole exactly when each of its events would land one by one."""
    graph = _graph()
    for event in prefix:
        try:
            graph.add(event)
        except IngestError:
            continue
    snapshot = (graph.transcript(), sorted(graph.edges()), graph.unanswered_calls())
    stepwise_ok = True
    probe = _graph()
    probe.ingest(_accepted(prefix))
    for event in batch:
        try:
            probe.add(event)
        except IngestError:
            stepwise_ok = False
            break
    try:
        graph.ingest(batch)
    except IngestError:
        assert not stepwise_ok
        assert (graph.transcript(), sorted(graph.edges()), graph.unanswered_calls()) == snapshot
    else:
        assert stepwise_ok
        assert graph.transcript() == probe.transcript()


def _accepted(events_: list[AgentEvent]) -> list[AgentEvent]:
    graph = _graph()
    out = []
    for event in events_:
        try:
            graph.add(event)
        except IngestError:
            continue
        out.append(event)
    return out


@settings(max_examples=100, deadline=None)
@given(events)
def test_every_unit_holds_its_calls_and_results(batch: list[AgentEvent]) -> None:
    """Units partition the transcript, and a call and its answer share a unit."""
    graph = _graph()
    for event in batch:
        try:
            graph.add(event)
        except IngestError:
            continue
    seen = [node_id for unit in graph.units() for node_id in unit]
    assert sorted(seen) == sorted(graph.transcript())
    for call_id in graph.by_kind("tool_call"):
        answer = graph.answer_to(call_id)
        if answer is not None:
            assert graph.unit_of(answer.id) == graph.unit_of(call_id)
