"""Property tests: for any event sequence and any budget, a render is valid and under
budget, or raises BudgetExceededError; and rendering never changes the graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    BudgetExceededError,
    ContextGraph,
    FileRead,
    IngestError,
    Note,
    SystemPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    UserNode,
    UserTurn,
)
from context_graph.render import FORMATS, Renderer, count_payload
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.validate import validate

CALL_IDS = st.sampled_from(["a", "b", "c", "call.7", "x" * 50])
TEXT = st.text(alphabet="ab \n", max_size=15)
PARTS = st.lists(
    st.one_of(
        st.builds(TextPart, text=TEXT),
        st.builds(ThinkingPart, thinking=TEXT, signature=st.none() | st.just("sig")),
    ),
    max_size=3,
).map(tuple)

EVENTS = st.lists(
    st.one_of(
        st.builds(SystemPrompt, content=TEXT),
        st.builds(UserTurn, content=TEXT, pinned=st.booleans(), notice=st.booleans()),
        st.builds(
            AssistantTurn,
            content=PARTS,
            tool_calls=st.lists(
                st.builds(ToolCall, id=CALL_IDS, name=st.sampled_from(["read", "bash"])),
                max_size=3,
            ).map(tuple),
        ),
        st.builds(ToolResult, call_id=CALL_IDS, content=TEXT, is_error=st.booleans()),
        st.builds(FileRead, path=st.sampled_from(["x.py", "y.py"]), content=TEXT),
        st.builds(Note, content=TEXT),
    ),
    max_size=30,
)
SdkCheck = Callable[[Any, str], list[str]]


def _graph(events: list[AgentEvent]) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    for event in events:
        try:
            graph.add(event)
        except IngestError:
            continue
    return graph


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.none() | st.integers(0, 400), st.sampled_from(FORMATS))
def test_render_is_valid_and_under_budget_or_raises(
    events: list[AgentEvent], budget: int | None, fmt: str
) -> None:
    """Whatever happened and whatever the budget, the request is valid and fits, or raises."""
    graph = _graph(events)
    before = graph_snapshot(graph)
    try:
        result = Renderer(format=fmt).render(graph, budget=budget)  # type: ignore[arg-type]
    except BudgetExceededError as exc:
        assert budget is not None and exc.required > budget
        return
    finally:
        assert graph_snapshot(graph) == before
    assert validate(result.payload, fmt) == []
    assert result.tokens == count_payload(result.payload, fmt, graph.token_cache)
    assert budget is None or result.tokens <= budget


@settings(max_examples=200, deadline=None)
@given(EVENTS, st.integers(0, 400), st.sampled_from(FORMATS))
def test_the_first_and_latest_requests_are_never_dropped(
    events: list[AgentEvent], budget: int, fmt: str
) -> None:
    """Notices are not requests: the floor keeps the user's own first and latest requests."""
    graph = _graph(events)
    requests = [n.id for n in graph if isinstance(n, UserNode) and not n.notice]
    try:
        result = Renderer(format=fmt).render(graph, budget=budget)  # type: ignore[arg-type]
    except BudgetExceededError:
        return
    assert not {*requests[:1], *requests[-1:]} & set(result.dropped)


@settings(max_examples=100, deadline=None)
@given(EVENTS, st.sampled_from(FORMATS))
def test_a_renderer_follows_the_graph_as_it_grows(events: list[AgentEvent], fmt: str) -> None:
    """A renderer kept across appends gives what a fresh renderer gives, every time."""
    graph = ContextGraph(counter=WordCounter())
    kept = Renderer(format=fmt)  # type: ignore[arg-type]
    for event in events:
        try:
            graph.add(event)
        except IngestError:
            continue
        assert _outcome(kept, graph) == _outcome(Renderer(format=fmt), graph)  # type: ignore[arg-type]


def _outcome(renderer: Renderer, graph: ContextGraph) -> str | int:
    """The JSON of a render at a small budget, or the minimum it said it needs."""
    try:
        return renderer.render(graph, budget=60).to_json()
    except BudgetExceededError as exc:
        return exc.required
