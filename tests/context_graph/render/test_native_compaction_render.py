"""Native compactions in renders: verbatim to their own provider, set aside for any other.

Every body is checked by our validator and by the SDKs' own request types.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from benchmarks.sdk_types import sdk_problems
from context_graph.errors import BudgetExceededError
from context_graph.graph.content import TextPart
from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    SystemPrompt,
    ToolCall,
    ToolResult,
    UserTurn,
    coerce_events,
)
from context_graph.graph.native import NativeCompaction
from context_graph.importers import load_events
from context_graph.render import FORMATS, Renderer
from context_graph.render.native import ForeignCompaction
from context_graph.render.result import count_payload
from context_graph.render.turns import NATIVE_SUMMARY_HEADER
from context_graph.testing import WordCounter
from context_graph.validate import validate

SUMMARY = "The user asked to fix a.py; the failure was an off-by-one."
THINK = {"type": "thinking", "thinking": "Now test it.", "signature": "c2ln"}
BLOCK: dict[str, Any] = {"type": "compaction", "content": SUMMARY, "signature": "c2lnMg=="}
ENCRYPTED = "gAAAAABpG5SB-opaque-payload-" + "Zm9v" * 20
ITEM: dict[str, Any] = {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}

ANTHROPIC_BODY: dict[str, Any] = {
    "system": "You are a coding agent.",
    "messages": [
        {"role": "user", "content": "fix a.py"},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"p": "a"}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x = 1"}],
        },
        {
            "role": "assistant",
            "content": [
                BLOCK,
                THINK,
                {"type": "text", "text": "Fixed; running the tests."},
                {"type": "tool_use", "id": "toolu_2", "name": "test", "input": {}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_2", "content": "passed"}],
        },
    ],
}
RESPONSES_BODY: dict[str, Any] = {
    "instructions": "You are a coding agent.",
    "input": [
        {"role": "user", "content": "fix a.py"},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "x = 1"},
        ITEM | {"created_by": "system"},
        {"role": "user", "content": "now the tests"},
    ],
}


def _graph(payload: Any) -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.ingest(load_events(payload))
    return graph


def _checked(graph: ContextGraph, fmt: str, budget: int | None = None) -> Any:
    result = Renderer(format=fmt).render(graph, budget=budget)
    assert validate(result.payload, fmt) == []
    assert sdk_problems(result.payload, fmt) == []
    return result


def _no_native(payload: Any) -> bool:
    text = json.dumps(payload)
    return '"compaction"' not in text and ENCRYPTED not in text and "c2lnMg==" not in text


class TestOwnProvider:
    def test_the_anthropic_block_goes_back_where_it_was(self) -> None:
        """The block opens the assistant message it came in, before its thinking, verbatim."""
        result = _checked(_graph(ANTHROPIC_BODY), "anthropic")
        assert result.payload["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "[conversation start]"}]},
            {"role": "assistant", "content": ANTHROPIC_BODY["messages"][3]["content"]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": [{"type": "text", "text": "passed"}],
                    }
                ],
            },
        ]
        assert result.foreign_compactions == ()

    def test_the_responses_item_goes_back_in_input(self) -> None:
        """The item is sent as the API takes it, after the user's messages it keeps.

        Its output-only `created_by` is left out; the call and its output are what it
        stands for.
        """
        result = _checked(_graph(RESPONSES_BODY), "responses")
        assert result.payload == {
            "instructions": "You are a coding agent.",
            "input": [
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "fix a.py"}],
                },
                ITEM,
                {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": "now the tests"}],
                },
            ],
        }
        assert result.foreign_compactions == ()

    def test_an_encrypted_item_is_counted_by_its_size(self) -> None:
        """A larger payload costs more tokens, and the count is the payload's own."""
        bigger = json.loads(json.dumps(RESPONSES_BODY).replace(ENCRYPTED, ENCRYPTED * 10))
        small_graph, large_graph = ContextGraph(), ContextGraph()  # the real tokenizer
        small_graph.ingest(load_events(RESPONSES_BODY))
        large_graph.ingest(load_events(bigger))
        small = _checked(small_graph, "responses")
        large = _checked(large_graph, "responses")
        cache = small_graph.token_cache
        grew = cache.count_text(ENCRYPTED * 10) - cache.count_text(ENCRYPTED)
        assert large.tokens - small.tokens == grew > 0
        assert large.tokens == count_payload(large.payload, "responses", cache)
        assert small.tokens == count_payload(small.payload, "responses", cache)

    def test_the_anthropic_count_is_the_payloads(self) -> None:
        """The block's text counts, and the render's count is its body's."""
        result = _checked(_graph(ANTHROPIC_BODY), "anthropic")
        assert result.tokens == count_payload(result.payload, "anthropic", WordCounter())


class TestOtherProviders:
    def test_an_anthropic_compaction_renders_the_pristine_record_elsewhere(self) -> None:
        """Every other format sends the nodes the block stands for, and says it set it aside."""
        graph = _graph(ANTHROPIC_BODY)
        (node_id,) = graph.by_kind("summary")
        for fmt in ("openai", "responses", "gemini"):
            result = _checked(graph, fmt)
            assert _no_native(result.payload)
            text = json.dumps(result.payload)
            assert "fix a.py" in text and "x = 1" in text and SUMMARY not in text
            assert result.foreign_compactions == (
                ForeignCompaction(node_id, "anthropic", "pristine_record", True),
            )

    def test_a_responses_compaction_renders_the_pristine_record_elsewhere(self) -> None:
        """Anthropic, Chat Completions and Gemini get the items before the compaction."""
        graph = _graph(RESPONSES_BODY)
        (node_id,) = graph.by_kind("summary")
        for fmt in ("openai", "anthropic", "gemini"):
            result = _checked(graph, fmt)
            assert _no_native(result.payload)
            assert "fix a.py" in json.dumps(result.payload)
            assert result.foreign_compactions == (
                ForeignCompaction(node_id, "responses", "pristine_record", False),
            )

    def test_the_pristine_record_is_fitted_under_the_budget(self) -> None:
        """The record the compaction stood for is fitted like any history: under budget."""
        long_output = " ".join(["word"] * 400)
        body = json.loads(json.dumps(RESPONSES_BODY).replace("x = 1", long_output))
        graph = _graph(body)
        whole = _checked(graph, "anthropic")
        fitted = _checked(graph, "anthropic", budget=whole.tokens // 2)
        assert fitted.tokens <= whole.tokens // 2
        assert fitted.dropped
        assert fitted.foreign_compactions == whole.foreign_compactions


class TestNoPristineRecord:
    def test_an_opaque_item_first_becomes_a_note(self) -> None:
        """With nothing earlier, another format gets a note saying what is unreadable."""
        graph = _graph({"input": [ITEM, {"role": "user", "content": "go on"}]})
        (node_id,) = graph.by_kind("summary")
        result = _checked(graph, "anthropic")
        assert _no_native(result.payload)
        first = result.payload["messages"][0]["content"][0]["text"]
        assert "compacted by OpenAI" in first
        assert result.foreign_compactions == (
            ForeignCompaction(node_id, "responses", "no_pristine_record", False),
        )

    def test_a_readable_block_first_sends_its_summary(self) -> None:
        """Anthropic's summary text is what another format reads when nothing is earlier."""
        messages = [
            {"role": "assistant", "content": [BLOCK, {"type": "text", "text": "Continuing."}]},
            {"role": "user", "content": "go on"},
        ]
        graph = _graph(messages)
        (node_id,) = graph.by_kind("summary")
        result = _checked(graph, "openai")
        assert _no_native(result.payload)
        assert result.payload["messages"][0] == {
            "role": "user",
            "content": f"{NATIVE_SUMMARY_HEADER}\n\n{SUMMARY}",
        }
        assert result.foreign_compactions == (
            ForeignCompaction(node_id, "anthropic", "no_pristine_record", True),
        )

    def test_a_system_prompt_alone_is_no_pristine_record(self) -> None:
        """The system prompt is sent anyway: it does not stand in for the compacted turns."""
        graph = _graph({"instructions": "sys", "input": [ITEM, {"role": "user", "content": "x"}]})
        result = _checked(graph, "openai")
        assert result.foreign_compactions[0].reason == "no_pristine_record"


# --- the invariant over random sessions ---------------------------------------------------


@st.composite
def _sessions(draw: st.DrawFn) -> tuple[list[AgentEvent], str]:
    """A session of turns and tool calls with one native compaction at a random place."""
    turns = draw(st.integers(min_value=0, max_value=5))
    events: list[AgentEvent] = [SystemPrompt(content="sys")]
    for k in range(turns):
        events.append(UserTurn(content=f"request {k}"))
        if draw(st.booleans()):
            call = ToolCall(id=f"call_{k}", name="run", arguments={"n": k})
            events.append(AssistantTurn(content=f"calling {k}", tool_calls=(call,)))
            events.append(ToolResult(call_id=f"call_{k}", content=f"output {k}"))
        events.append(AssistantTurn(content=f"answer {k}"))
    boundaries = [0] + [i + 1 for i, e in enumerate(events) if not isinstance(e, AssistantTurn)]
    boundaries = [i for i in boundaries if i == len(events) or _starts_unit(events, i)]
    at = draw(st.sampled_from(boundaries))
    provider = draw(st.sampled_from(["anthropic", "responses"]))
    item = BLOCK if provider == "anthropic" else ITEM
    native = NativeCompaction(provider=provider, item=item)
    text = (TextPart(text=SUMMARY),) if provider == "anthropic" else ()
    events.insert(at, Compaction(content=text, native=native))
    events.append(UserTurn(content="latest"))
    return events, provider


def _starts_unit(events: list[AgentEvent], index: int) -> bool:
    """Whether a compaction may go before `events[index]` (not between a call and its result)."""
    return index == len(events) or not isinstance(events[index], ToolResult)


class TestProperties:
    @settings(max_examples=40, deadline=None)
    @given(_sessions(), st.sampled_from([None, 0.6]))
    def test_other_formats_never_carry_the_artifact(
        self, drawn: tuple[list[AgentEvent], str], share: float | None
    ) -> None:
        """Wherever it stands, another format's body holds no artifact and stays valid."""
        events, provider = drawn
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(coerce_events(events))
        for fmt in FORMATS:
            whole = Renderer(format=fmt).render(graph)
            budget = None if share is None else max(1, int(whole.tokens * share))
            try:
                result = Renderer(format=fmt).render(graph, budget=budget)
            except BudgetExceededError:  # the floor may not fit a tight budget
                continue
            assert validate(result.payload, fmt) == []
            assert sdk_problems(result.payload, fmt) == []
            if budget is not None:
                assert result.tokens <= budget
            if fmt == provider:
                assert result.foreign_compactions == ()
            else:
                assert _no_native(result.payload)
                assert len(result.foreign_compactions) == 1

    @settings(max_examples=40, deadline=None)
    @given(_sessions())
    def test_a_responses_item_stands_for_all_but_the_users_messages(
        self, drawn: tuple[list[AgentEvent], str]
    ) -> None:
        """Unfitted, the item comes after every user message before it and nothing else."""
        events, provider = drawn
        assume(provider == "responses")
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(coerce_events(events))
        result = Renderer(format="responses").render(graph)
        assert validate(result.payload, "responses") == []
        assert sdk_problems(result.payload, "responses") == []
        at = next(i for i, e in enumerate(events) if isinstance(e, Compaction))
        before = [e.content[0].text for e in events[:at] if isinstance(e, UserTurn)]
        items = result.payload["input"]
        item_at = items.index(ITEM)
        assert all(i.get("role") == "user" for i in items[:item_at])
        assert [i["content"][0]["text"] for i in items[:item_at]] == before
