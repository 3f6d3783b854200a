"""The OpenAI Responses format under hostile content, and what any graph renders to.

Custom tool calls are call nodes whose `meta` says `responses_type: custom_tool_call`; the
`meta_view` fixture (conftest.py) gives them that meta, as the Responses importer does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import JsonValue, ValidationError

from benchmarks.sdk_types import sdk_problems
from context_graph import (
    BudgetExceededError,
    ContextGraph,
    IngestError,
    ReasoningPart,
    TextPart,
    ThinkingPart,
)
from context_graph.render import FORMATS, Renderer, RenderSource
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.validate import validate

REASONING = ReasoningPart(id="rs_1", summary=("Look at a.py first.",), encrypted_content="gAAA==")
CUSTOM: Mapping[str, JsonValue] = {"responses_type": "custom_tool_call"}
MetaViewFactory = Callable[..., RenderSource]


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _call(call_id: str, name: str = "read", arguments: str = '{"path": "a.py"}') -> dict[str, str]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _render(source: Any, fmt: str = "responses") -> dict[str, Any]:
    result = Renderer(format=fmt).render(source)  # type: ignore[arg-type]
    assert validate(result.payload, fmt) == []  # type: ignore[arg-type]
    assert sdk_problems(result.payload, fmt) == []
    payload: dict[str, Any] = result.payload
    return payload


class TestHostileContent:
    @pytest.mark.parametrize(
        "part",
        [
            {"type": "reasoning", "summary": "not a list"},
            {"type": "reasoning", "summary": [3]},
            {"type": "reasoning", "encrypted_content": {"x": 1}},
            {"type": "reasoning", "id": 7},
            {"type": "reasoning", "signature": "unknown field"},
        ],
    )
    def test_a_malformed_reasoning_part_is_refused(self, graph: ContextGraph, part: Any) -> None:
        """A reasoning part of the wrong shape is an IngestError, and the graph is unchanged."""
        graph.add_user("go")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError):
            content: list[Any] = [part, {"type": "text", "text": "done"}]
            graph.add_assistant(content)
        assert graph_snapshot(graph) == before

    def test_a_reasoning_part_is_frozen(self) -> None:
        """Nothing can change a reasoning part once made: it is sent back as received."""
        with pytest.raises(ValidationError):
            REASONING.encrypted_content = "changed"

    def test_odd_text_goes_back_byte_for_byte(self, graph: ContextGraph) -> None:
        """Control characters, quotes and astral characters in reasoning are not touched."""
        odd = ReasoningPart(
            id="rs_\u2603", summary=('"\x00\n\U0001f600',), encrypted_content="\\u0000"
        )
        graph.add_user("go")
        graph.add_assistant([odd, TextPart(text="ok")])
        summary = [{"type": "summary_text", "text": '"\x00\n\U0001f600'}]
        assert _render(graph)["input"][1] == {
            "type": "reasoning",
            "id": "rs_\u2603",
            "summary": summary,
            "encrypted_content": "\\u0000",
        }


# --- properties ---------------------------------------------------------------------------

_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=12)
_REASONING = st.builds(
    ReasoningPart,
    id=st.none() | st.from_regex(r"rs_[a-z0-9]{1,6}", fullmatch=True),
    summary=st.lists(_TEXT, max_size=2).map(tuple),
    encrypted_content=st.none() | st.text(max_size=8),
)
_ASSISTANT_PART = (
    _REASONING
    | st.builds(TextPart, text=_TEXT)
    | st.builds(ThinkingPart, thinking=_TEXT, signature=st.none() | st.just("sig"))
)
_TURN = st.tuples(
    st.lists(_ASSISTANT_PART, max_size=4),
    st.lists(st.sampled_from(["answered", "unanswered", "custom"]), max_size=3),
    _TEXT,
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(turns=st.lists(_TURN, min_size=1, max_size=5), share=st.sampled_from([None, 3, 2]))
def test_any_graph_renders_a_valid_body_with_every_call_paired(
    meta_view: MetaViewFactory, turns: list[tuple[list[Any], list[str], str]], share: int | None
) -> None:
    """Any graph, at any budget that fits, gives a body both checks accept, calls all paired."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("start")
    custom: dict[str, Mapping[str, JsonValue]] = {}
    for n, (parts, calls, user) in enumerate(turns):
        specs = [_call(f"call_{n}_{k}") for k in range(len(calls))]
        ids = graph.add_assistant(parts, tool_calls=specs)
        for k, kind in enumerate(calls):
            if kind == "custom":
                custom[ids[k + 1]] = CUSTOM
            if kind != "unanswered":
                graph.add_tool_result(f"call_{n}_{k}", f"out {n} {k}")
        graph.add_user(user)
    source = meta_view(graph, custom)
    renderer = Renderer(format="responses")
    full = renderer.render(source).tokens
    try:
        result = renderer.render(source, budget=None if share is None else full // share)
    except BudgetExceededError:
        return
    assert validate(result.payload, "responses") == []
    assert sdk_problems(result.payload, "responses") == []
    items = result.payload["input"]
    calls = [i["call_id"] for i in items if i["type"] in ("function_call", "custom_tool_call")]
    outputs = [i["call_id"] for i in items if i["type"].endswith("_output")]
    assert sorted(calls) == sorted(outputs)


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_renders_a_graph_with_reasoning_valid(
    meta_view: MetaViewFactory, fmt: str
) -> None:
    """A session with reasoning, custom and unanswered calls is valid in every format."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("go")
    _, call = graph.add_assistant([REASONING], tool_calls=[_call("c1", "sh", "raw text")])
    graph.add_tool_result("c1", "done")
    graph.add_assistant([REASONING, TextPart(text="next")], tool_calls=[_call("c2")])
    graph.add_user("and?")
    _render(meta_view(graph, {call: CUSTOM}), fmt=fmt)
