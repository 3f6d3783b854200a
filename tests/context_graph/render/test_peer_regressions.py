"""Regression tests for the bugs peers reported (research/peers.md, section 3).

Each test builds the history that broke a peer, renders it in every provider format and
checks that the body is valid (`validate(...) == []`), fits its budget, and does what the
survey says a correct engine does. Covered here: items 1-8, 11 (the pinned first
request), 14 (a single huge event), 15 (render stability), 16, 17 (our own placeholder
and omission marker) and 18.

Items 9, 10, 12 and 13 (the summarizer's input and failures, a summary call that
overflows, state derived from compacted content, compaction loops), the summary halves of
11 and 17, and 19 (overflow detection by error text, atomic rewrites, provider usage
reports) are covered in the processors / orchestrator issues.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from context_graph import (
    BudgetExceededError,
    ContextGraph,
    IngestError,
    Node,
    TextPart,
    ToolResultNode,
    Unit,
)
from context_graph.importers import load_graph
from context_graph.render import (
    FORMATS,
    MISSING_RESULT_TEXT,
    Renderer,
    RenderResult,
    count_payload,
    marker_text,
)
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate import validate

Message = dict[str, Any]
THINKING_ON = {"type": "enabled", "budget_tokens": 1024}
# A tool call written as prose: `[Assistant tool call]: shell(...)`, `tool_use: ...`.
PROSE_CALL = re.compile(r"(?i)(tool[ _]?(call|use)|function[ _]?call)\s*\]?\s*:|\b\w+\([^)]*\)")


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _call(call_id: str, name: str = "bash", **args: object) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": args}


def _oa_call(call_id: str, name: str, **args: object) -> dict[str, object]:
    arguments = json.dumps(args)
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- reading rendered bodies ----------------------------------------------------------------


_LIST_KEY = {"gemini": "contents", "responses": "input"}
_RESPONSES_CALLS = ("function_call", "custom_tool_call")
_RESPONSES_OUTPUTS = ("function_call_output", "custom_tool_call_output")


def _messages(payload: dict[str, Any], fmt: ProviderFormat) -> list[Message]:
    messages: list[Message] = payload[_LIST_KEY.get(fmt, "messages")]
    return messages


def _role(message: Message) -> str:
    """A message's role; a Responses call is the assistant's, its output the tool's."""
    if "role" in message:
        return str(message["role"])
    return "assistant" if message.get("type") in _RESPONSES_CALLS else "tool"


def _parts(message: Message, fmt: ProviderFormat) -> list[Any]:
    content = message["parts"] if fmt == "gemini" else message.get("content")
    return content if isinstance(content, list) else []


def _calls_in(message: Message, fmt: ProviderFormat) -> list[str]:
    if fmt == "openai":
        return [c["id"] for c in message.get("tool_calls") or ()]
    if fmt == "anthropic":
        return [b["id"] for b in _parts(message, fmt) if b["type"] == "tool_use"]
    if fmt == "responses":
        return [message["call_id"]] if message["type"] in _RESPONSES_CALLS else []
    return [p["functionCall"]["id"] for p in _parts(message, fmt) if "functionCall" in p]


def _results_in(message: Message, fmt: ProviderFormat) -> list[str]:
    if fmt == "openai":
        return [message["tool_call_id"]] if message["role"] == "tool" else []
    if fmt == "anthropic":
        return [b["tool_use_id"] for b in _parts(message, fmt) if b["type"] == "tool_result"]
    if fmt == "responses":
        return [message["call_id"]] if message["type"] in _RESPONSES_OUTPUTS else []
    return [p["functionResponse"]["id"] for p in _parts(message, fmt) if "functionResponse" in p]


def _call_ids(payload: dict[str, Any], fmt: ProviderFormat) -> list[str]:
    return [i for m in _messages(payload, fmt) for i in _calls_in(m, fmt)]


def _result_ids(payload: dict[str, Any], fmt: ProviderFormat) -> list[str]:
    return [i for m in _messages(payload, fmt) for i in _results_in(m, fmt)]


def _texts(payload: dict[str, Any], fmt: ProviderFormat) -> list[tuple[str, str]]:
    """(role, text) of every piece of text in the messages, tool results included."""
    found: list[tuple[str, str]] = []
    for message in _messages(payload, fmt):
        role = _role(message)
        content = message.get("content")
        if isinstance(content, str):
            found.append((role, content))
        if isinstance(message.get("output"), str):
            found.append((role, message["output"]))
        for part in _parts(message, fmt):
            if "text" in part:
                found.append((role, part["text"]))
            for inner in part.get("content") or ():
                found.append((role, inner["text"]))
            for value in part.get("functionResponse", {}).get("response", {}).values():
                found.append((role, value))
    return found


def _extends(old: dict[str, Any], new: dict[str, Any], fmt: ProviderFormat) -> bool:
    """Whether `new` starts with `old` (its last message may have grown by merged blocks)."""
    lists = ("messages", "contents", "input")
    if {k: v for k, v in old.items() if k not in lists} != {
        k: v for k, v in new.items() if k not in lists
    }:
        return False
    before, after = _messages(old, fmt), _messages(new, fmt)
    if len(after) < len(before) or after[: len(before) - 1] != before[:-1]:
        return False
    last, grown = before[-1], after[len(before) - 1]
    if last == grown:
        return True
    old_parts, new_parts = _parts(last, fmt), _parts(grown, fmt)
    return (
        fmt not in ("openai", "responses")  # neither merges neighbours
        and last["role"] == grown["role"]
        and new_parts[: len(old_parts)] == old_parts
    )


# --- rendering --------------------------------------------------------------------------


def _render(source: Any, fmt: ProviderFormat, budget: int | None = None) -> RenderResult:
    return Renderer(format=fmt).render(source, budget=budget)


def _floor(graph: ContextGraph, fmt: ProviderFormat) -> int:
    """The fewest tokens the renderer says it needs (the budget floor)."""
    with pytest.raises(BudgetExceededError) as info:
        Renderer(format=fmt).render(graph, budget=0)
    return info.value.required


def _sweep(graph: ContextGraph, fmt: ProviderFormat) -> list[tuple[int, RenderResult]]:
    """Renders at budgets from the floor up to the full size, each checked valid and fitting."""
    renderer = Renderer(format=fmt)
    full = renderer.render(graph).tokens
    low = _floor(graph, fmt)
    renders = [(b, renderer.render(graph, budget=b)) for b in range(low, full + 1)]
    for budget, result in renders:
        assert validate(result.payload, fmt) == [], budget
        assert result.tokens <= budget
    assert renders[0][1].dropped, "the sweep never put the budget under pressure"
    return renders


class _Projection:
    """A working view of a graph, as processors will make: nodes swapped or hidden."""

    def __init__(
        self, graph: ContextGraph, swap: dict[str, str], hide: frozenset[str] = frozenset()
    ) -> None:
        self._graph = graph
        self._swap = swap
        self._hide = hide

    @property
    def version(self) -> int:
        return self._graph.version

    def units(self) -> tuple[Unit, ...]:
        return tuple(
            Unit(
                u.head,
                u.kind,
                tuple(self._swap.get(i, i) for i in u.node_ids if i not in self._hide),
            )
            for u in self._graph.units()
        )

    def __getitem__(self, node_id: str) -> Node:
        return self._graph[node_id]

    def answer_to(self, call_node_id: str) -> Node | None:
        answer = self._graph.answer_to(call_node_id)
        return None if answer is None else self._graph[self._swap.get(answer.id, answer.id)]

    def first_call_with_id(self, tool_call_id: str) -> str | None:
        return self._graph.first_call_with_id(tool_call_id)


# --- sessions ---------------------------------------------------------------------------

#: A ReAct history as LangChain agents record it, in OpenAI Chat Completions form.
REACT: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You answer weather questions."},
        {"role": "user", "content": "What is the weather in SF and in NY?"},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("call_1", "weather")]},
        {"role": "tool", "tool_call_id": "call_1", "content": "SF: 60F and fog. " * 6},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("call_2", "weather")]},
        {"role": "tool", "tool_call_id": "call_2", "content": "NY: 50F and rain. " * 6},
        {"role": "assistant", "content": "SF is 60F and foggy; NY is 50F and rainy."},
        {"role": "user", "content": "And in LA?"},
        {"role": "assistant", "content": None, "tool_calls": [_oa_call("call_3", "weather")]},
        {"role": "tool", "tool_call_id": "call_3", "content": "LA: 75F and sun."},
    ]
}

#: An Anthropic session with thinking on: two tool loops, the second one still open.
LOOPS: dict[str, Any] = {
    "system": [{"type": "text", "text": "You fix bugs."}],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "fix the test"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "read it first", "signature": "c2lnMQ=="},
                {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "a.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "x = 1 " * 30}],
                }
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Fixed."}]},
        {"role": "user", "content": [{"type": "text", "text": "now run it"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                {"type": "tool_use", "id": "toolu_2", "name": "bash", "input": {"cmd": "pytest"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "1 failed"}],
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "look at the failure", "signature": "c2lnMw=="},
                {"type": "tool_use", "id": "toolu_3", "name": "read", "input": {"path": "t.py"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_3",
                    "content": [{"type": "text", "text": "assert x == 2"}],
                }
            ],
        },
    ],
}


def _agent_session(graph: ContextGraph) -> None:
    """A coding session: single and parallel calls, two user turns in the middle, one at the end."""
    graph.add_system("You are a coding agent.")
    graph.add_user("refactor the parser")
    for i in range(6):
        calls = [_call(f"c{i}a", "read", path=f"f{i}.py")]
        if i % 2:
            calls.append(_call(f"c{i}b", "grep", pattern="parse"))
        graph.add_assistant(f"step {i}", tool_calls=calls)
        for call in reversed(calls):
            graph.add_tool_result(str(call["id"]), "line " * (5 + i))
        if i == 2:
            graph.add_user("keep going")
    graph.add_user("wrap up")


# --- tests --------------------------------------------------------------------------------


class TestTrimBoundaries:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_trim_never_leaves_a_leading_tool_result(self, fmt: ProviderFormat) -> None:
        """langchain-ai/langchain#33245: the history kept by a trim never opens on a tool result."""
        graph = load_graph(REACT, format="openai", counter=WordCounter())
        for _, result in _sweep(graph, fmt):
            if not result.dropped:
                continue
            messages = _messages(result.payload, fmt)
            marker = marker_text(len(result.dropped))
            (at,) = [i for i, m in enumerate(messages) if marker in str(m)]
            assert [r for m in messages[at : at + 2] for r in _results_in(m, fmt)] == []

    def test_history_already_opening_on_a_tool_result_is_refused(self) -> None:
        """langchain-ai/langchain#33245: a history opening on a tool result is refused."""
        trimmed = {
            "messages": [
                {"role": "system", "content": "You answer weather questions."},
                {"role": "tool", "tool_call_id": "call_1", "content": "SF: 60F and fog."},
                {"role": "user", "content": "And in LA?"},
            ]
        }
        with pytest.raises(IngestError, match=r"messages\[1\].*`call_1` has no matching"):
            load_graph(trimmed, format="openai")

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_dropping_from_the_middle_never_orphans_a_call_or_result(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """microsoft/autogen#7955: whatever is dropped, every call sent has its one result."""
        _agent_session(graph)
        for _, result in _sweep(graph, fmt):
            calls = _call_ids(result.payload, fmt)
            assert _result_ids(result.payload, fmt) == calls
            assert sorted(result.call_ids) == sorted(calls)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_cut_pairs_the_result_with_its_own_call_when_ids_repeat(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """langchain-ai/langchain#38352: with a reused call id, a result stays with its own call."""
        graph.add_user("book the cheapest flight")
        graph.add_assistant("searching", tool_calls=[_call("0", "search", day=1)])
        graph.add_tool_result("0", "no seats " * 30)
        graph.add_user("try the next day")
        _, second = graph.add_assistant("searching again", tool_calls=[_call("0", "search", day=2)])
        graph.add_tool_result("0", "UA 12 at 9:00")
        result = _render(graph, fmt, _floor(graph, fmt))
        assert validate(result.payload, fmt) == []
        (sent,) = result.call_ids
        assert result.call_ids[sent] == second
        assert _call_ids(result.payload, fmt) == _result_ids(result.payload, fmt) == [sent]
        if fmt == "openai":
            assert result.payload["messages"] == [
                {"role": "user", "content": "book the cheapest flight"},
                {"role": "user", "content": marker_text(1)},
                {"role": "user", "content": "try the next day"},
                {
                    "role": "assistant",
                    "content": "searching again",
                    "tool_calls": [
                        {
                            "id": sent,
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"day": 2}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": sent, "content": "UA 12 at 9:00"},
            ]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_cutoff_never_covers_part_of_a_run_of_results(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """langchain-ai/langchain#38352: a late result stays with its batch."""
        graph.add_user("compare the two files")
        graph.add_assistant("reading both", tool_calls=[_call("r1", "read"), _call("r2", "read")])
        graph.add_tool_result("r1", "a " * 20)
        graph.add_assistant("waiting for b.py")
        graph.add_tool_result("r2", "b " * 20)
        graph.add_user("which is longer?")
        for _, result in _sweep(graph, fmt):
            results = _result_ids(result.payload, fmt)
            assert results in ([], ["r1", "r2"])
            assert results == _call_ids(result.payload, fmt)

    def test_late_result_is_sent_right_after_its_call(self, graph: ContextGraph) -> None:
        """langchain-ai/langmem#126: a parallel call's late result is sent right after its call."""
        graph.add_user("compare the two files")
        graph.add_assistant("reading both", tool_calls=[_call("r1", "read"), _call("r2", "read")])
        graph.add_tool_result("r1", "short")
        graph.add_assistant("waiting for b.py")
        graph.add_tool_result("r2", "long")
        read = {"name": "read", "arguments": "{}"}
        assert _render(graph, "openai").payload["messages"] == [
            {"role": "user", "content": "compare the two files"},
            {
                "role": "assistant",
                "content": "reading both",
                "tool_calls": [
                    {"id": "r1", "type": "function", "function": read},
                    {"id": "r2", "type": "function", "function": read},
                ],
            },
            {"role": "tool", "tool_call_id": "r1", "content": "short"},
            {"role": "tool", "tool_call_id": "r2", "content": "long"},
            {"role": "assistant", "content": "waiting for b.py"},
        ]


class TestUnansweredCalls:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_call_cut_off_by_a_crash_gets_a_placeholder_that_stays_put(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """pydantic/pydantic-ai#4728: a call left open by a crash gets the same placeholder."""
        graph.add_user("deploy it")
        graph.add_assistant("deploying", tool_calls=[_call("d1", "deploy", env="prod")])
        renderer = Renderer(format=fmt)
        before = renderer.render(graph).payload
        graph.add_user("did it work?")
        after = renderer.render(graph).payload
        assert validate(before, fmt) == validate(after, fmt) == []
        assert _extends(before, after, fmt)
        assert _result_ids(after, fmt) == ["d1"]
        answer = next(m for m in _messages(after, fmt) if _results_in(m, fmt))
        assert (_role(answer), MISSING_RESULT_TEXT) in _texts(after, fmt)
        if fmt == "openai":
            assert after["messages"] == [
                {"role": "user", "content": "deploy it"},
                {
                    "role": "assistant",
                    "content": "deploying",
                    "tool_calls": [
                        {
                            "id": "d1",
                            "type": "function",
                            "function": {"name": "deploy", "arguments": '{"env": "prod"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "d1", "content": MISSING_RESULT_TEXT},
                {"role": "user", "content": "did it work?"},
            ]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_result_after_an_approval_resume_stays_with_its_call(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """pydantic/pydantic-ai#4728: a result recorded after an approval answers its call."""
        graph.add_user("delete the temp files")
        graph.add_assistant(tool_calls=[_call("rm1", "rm", path="/tmp/x")])
        graph.add_user("yes, go ahead")
        graph.add_tool_result("rm1", "removed 3 files")
        graph.add_assistant("Done.")
        payload = _render(graph, fmt).payload
        assert validate(payload, fmt) == []
        assert _call_ids(payload, fmt) == _result_ids(payload, fmt) == ["rm1"]
        assert MISSING_RESULT_TEXT not in str(payload)
        if fmt == "openai":
            assert [m["role"] for m in payload["messages"]] == [
                "user",
                "assistant",
                "tool",
                "user",
                "assistant",
            ]

    def test_orphan_output_is_refused_so_later_turns_still_render(
        self, graph: ContextGraph
    ) -> None:
        """openai/openai-agents-python#4827: an output with no call never enters the history."""
        graph.add_user("list files")
        graph.add_assistant(tool_calls=[_call("ls1", "ls")])
        graph.add_tool_result("ls1", "a.py")
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="`ls9` has no matching tool call"):
            graph.add_tool_result("ls9", "stray output")
        assert graph_snapshot(graph) == before
        graph.add_user("and now?")
        for fmt in FORMATS:
            payload = _render(graph, fmt).payload
            assert validate(payload, fmt) == []
            assert "stray output" not in str(payload)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_abandoned_call_keeps_its_placeholder_when_its_id_is_reused(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """pydantic/pydantic-ai#4728: a retry that reuses a crashed call's id takes the result."""
        graph.add_user("run the tests")
        _, crashed = graph.add_assistant(tool_calls=[_call("t", "pytest")])
        graph.add_user("try again")
        _, retried = graph.add_assistant(tool_calls=[_call("t", "pytest")])
        graph.add_tool_result("t", "3 passed")
        result = _render(graph, fmt)
        assert validate(result.payload, fmt) == []
        first, second = _call_ids(result.payload, fmt)
        assert (result.call_ids[first], result.call_ids[second]) == (crashed, retried)
        assert _result_ids(result.payload, fmt) == [first, second]
        texts = [t for _, t in _texts(result.payload, fmt)]
        assert texts.index(MISSING_RESULT_TEXT) < texts.index("try again") < texts.index("3 passed")

    def test_second_observation_for_one_call_is_refused(self, graph: ContextGraph) -> None:
        """OpenHands/software-agent-sdk#3051: after a crash the first observation is kept."""
        graph.add_user("compute it")
        graph.add_assistant(tool_calls=[_call("c1", "calc")])
        graph.add_tool_result("c1", "error: the tool process died", is_error=True)
        before = graph_snapshot(graph)
        with pytest.raises(IngestError, match="every earlier call with this id"):
            graph.add_tool_result("c1", "42")
        assert graph_snapshot(graph) == before
        for fmt in FORMATS:
            payload = _render(graph, fmt).payload
            assert validate(payload, fmt) == []
            assert _result_ids(payload, fmt) == ["c1"]
            assert "error: the tool process died" in str(payload)
            assert "42" not in str(payload)

    def test_recorded_log_with_two_observations_is_refused_at_the_second(self) -> None:
        """OpenHands/software-agent-sdk#3051: a log with two results for a call names the second."""
        log = {
            "messages": [
                {"role": "user", "content": "compute it"},
                {"role": "assistant", "content": None, "tool_calls": [_oa_call("c1", "calc")]},
                {"role": "tool", "tool_call_id": "c1", "content": "error: the tool process died"},
                {"role": "tool", "tool_call_id": "c1", "content": "42"},
            ]
        }
        with pytest.raises(IngestError, match=r"messages\[3\].*already has its result"):
            load_graph(log, format="openai")


class TestThinkingLoops:
    def test_trim_keeps_the_open_tool_loop_with_its_thinking_first(self) -> None:
        """OpenHands/software-agent-sdk#1438: a trim never cuts the thinking off the open loop."""
        graph = load_graph(LOOPS, format="anthropic", counter=WordCounter())
        source = LOOPS["messages"]
        for budget, result in _sweep(graph, "anthropic"):
            messages = result.payload["messages"]
            assert validate({**result.payload, "thinking": THINKING_ON}, "anthropic") == []
            assert messages[-2]["content"][0] == source[-2]["content"][0], budget
            assert messages[-4]["content"][0] == source[-4]["content"][0], budget
        for fmt in ("openai", "gemini"):
            _sweep(graph, fmt)

    def test_redacted_thinking_goes_back_byte_for_byte(self) -> None:
        """anomalyco/opencode PR #38614: thinking and redacted_thinking go back as received."""
        graph = load_graph(LOOPS, format="anthropic", counter=WordCounter())
        result = _render(graph, "anthropic")
        assert result.payload == LOOPS
        assert result.to_json() == json.dumps(LOOPS, ensure_ascii=False)


class TestCounting:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_tokens_are_counted_locally_on_the_body_that_is_sent(self, fmt: ProviderFormat) -> None:
        """UKGovernmentBEIS/inspect_ai#3108: only the valid body is counted, as text, locally."""
        seen: set[type] = set()

        class TypeRecorder(WordCounter):
            def count(self, text: str) -> int:
                seen.add(type(text))
                return super().count(text)

        graph = ContextGraph(counter=TypeRecorder())
        _agent_session(graph)
        graph.add_assistant("checking", tool_calls=[_call("open", "bash", cmd="make")])
        budget = _floor(graph, fmt) + 10
        result = Renderer(format=fmt).render(graph, budget=budget)
        assert result.dropped
        assert validate(result.payload, fmt) == []
        assert result.tokens == count_payload(result.payload, fmt, WordCounter()) <= budget
        assert seen == {str}


class TestParallelBatches:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_parallel_batch_is_kept_or_dropped_whole(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """OpenHands/software-agent-sdk batch atomicity: parallel results are never split."""
        graph.add_user("audit the repo")
        batches = []
        for i in range(4):
            ids = [f"b{i}_{k}" for k in range(3)]
            graph.add_assistant(f"batch {i}", tool_calls=[_call(c, "read", n=i) for c in ids])
            for call_id in reversed(ids):
                graph.add_tool_result(call_id, f"file {call_id} " * (4 + i))
            batches.append(set(ids))
        graph.add_user("report")
        for _, result in _sweep(graph, fmt):
            sent = set(_call_ids(result.payload, fmt))
            assert all(batch <= sent or not batch & sent for batch in batches)
            assert _result_ids(result.payload, fmt) == _call_ids(result.payload, fmt)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_parallel_batch_that_overflows_the_kept_tail_raises(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """langchain-ai/deepagents PR #3405: a batch too big for the budget raises, never splits."""
        graph.add_user("audit the repo")
        ids = [f"read_{k}" for k in range(4)]
        graph.add_assistant(tool_calls=[_call(c, "read") for c in ids])
        for call_id in ids:
            graph.add_tool_result(call_id, "source line " * 100)
        with pytest.raises(BudgetExceededError) as info:
            _render(graph, fmt, 300)
        assert info.value.budget == 300
        assert info.value.required > 800
        result = _render(graph, fmt, info.value.required)
        assert validate(result.payload, fmt) == []
        assert result.tokens <= info.value.required
        assert _call_ids(result.payload, fmt) == _result_ids(result.payload, fmt) == ids


class TestPinnedContext:
    def test_trim_keeps_system_prompt_notes_and_first_request(self, graph: ContextGraph) -> None:
        """anomalyco/opencode#940: instructions and the first request survive the tightest trim."""
        graph.add_system("You are a careful coding agent.")
        graph.add_note("The repository targets Python 3.11.")
        graph.add_user("Fix tests/test_io.py; never push to main.")
        for i in range(3):
            graph.add_assistant(f"Step {i}.", tool_calls=[_call(f"s{i}", cmd=f"step {i}")])
            graph.add_tool_result(f"s{i}", "log line " * 15)
        graph.add_user("Now run the linter too.")
        graph.add_assistant(tool_calls=[_call("lint", "ruff")])
        graph.add_tool_result("lint", "All checks passed!")
        for fmt in FORMATS:
            result = _render(graph, fmt, _floor(graph, fmt))
            assert validate(result.payload, fmt) == []
            assert len(result.dropped) == 3
            text = str(result.payload)
            for kept in ("careful coding agent", "Python 3.11", "never push to main"):
                assert kept in text
        assert _render(graph, "openai", _floor(graph, "openai")).payload == {
            "messages": [
                {"role": "system", "content": "You are a careful coding agent."},
                {"role": "system", "content": "The repository targets Python 3.11."},
                {"role": "user", "content": "Fix tests/test_io.py; never push to main."},
                {"role": "user", "content": marker_text(3)},
                {"role": "user", "content": "Now run the linter too."},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "lint",
                            "type": "function",
                            "function": {"name": "ruff", "arguments": "{}"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "lint", "content": "All checks passed!"},
            ]
        }

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_latest_user_turn_after_a_tool_call_survives_the_trim(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """langchain-ai/langmem#111: the user's message right after a tool call is never trimmed."""
        graph.add_user("clean the build")
        for i in range(3):
            graph.add_assistant(tool_calls=[_call(f"k{i}", cmd="make clean")])
            graph.add_tool_result(f"k{i}", "removing " * 20)
        graph.add_user("stop, keep the cache directory")
        result = _render(graph, fmt, _floor(graph, fmt))
        assert validate(result.payload, fmt) == []
        assert len(result.dropped) == 3
        assert "stop, keep the cache directory" in str(_messages(result.payload, fmt)[-1])


class TestLargeEvents:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_one_huge_tool_result_is_dropped_by_its_tokens(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """OpenHands/software-agent-sdk#1172: one event can overflow; tokens decide."""
        graph.add_system("You are a build doctor.")
        graph.add_user("why is the build slow?")
        huge, _ = graph.add_assistant(tool_calls=[_call("log", "cat", path="build.log")])
        graph.add_tool_result("log", "compiling " * 5_000)
        graph.add_assistant("The log shows 5,000 compile steps.")
        graph.add_user("what should I change?")
        result = _render(graph, fmt, 100)
        assert validate(result.payload, fmt) == []
        assert result.tokens <= 100
        assert result.dropped == (huge,)
        assert "compiling" not in str(result.payload)
        assert "5,000 compile steps" in str(result.payload)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_huge_result_in_the_latest_turn_raises_with_what_it_needs(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """OpenHands/software-agent-sdk#1172: a huge kept event raises, never overflows."""
        graph.add_user("why is the build slow?")
        graph.add_assistant(tool_calls=[_call("log", "cat", path="build.log")])
        graph.add_tool_result("log", "compiling " * 5_000)
        with pytest.raises(BudgetExceededError) as info:
            _render(graph, fmt, 100)
        assert info.value.budget == 100
        assert info.value.required > 5_000
        fitted = _render(graph, fmt, info.value.required)
        assert validate(fitted.payload, fmt) == []
        assert fitted.tokens <= info.value.required


class TestRenderStability:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_renders_are_byte_identical_while_nothing_changes(self, fmt: ProviderFormat) -> None:
        """langchain-ai/langchain#37815: with nothing new, the body sent is the same bytes."""
        graphs = [ContextGraph(counter=WordCounter()) for _ in range(2)]
        for graph in graphs:
            _agent_session(graph)
            graph.add_assistant("checking", tool_calls=[_call("open", "bash", cmd="make")])
        budget = _floor(graphs[0], fmt) + 20
        renderer = Renderer(format=fmt)
        first = renderer.render(graphs[0], budget=budget).to_json()
        renderer.render(graphs[0])
        renderer.render(graphs[0], budget=budget + 50)
        assert renderer.render(graphs[0], budget=budget).to_json() == first
        assert Renderer(format=fmt).render(graphs[1], budget=budget).to_json() == first
        assert MISSING_RESULT_TEXT in first and "omitted to fit" in first

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_budget_the_whole_history_fits_drops_nothing(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """langchain-ai/langchain#37815: no trim fires (and rewrites the prefix) without need."""
        graph.add_user("list the files")
        graph.add_assistant(tool_calls=[_call("c1", "ls")])
        graph.add_tool_result("c1", "a.py b.py")
        graph.add_user("open a.py")
        graph.add_assistant(tool_calls=[_call("c2", "cat", path="a.py")])
        graph.add_tool_result("c2", "print(1)")
        graph.add_user("thanks")
        whole = _render(graph, fmt)
        fitted = _render(graph, fmt, whole.tokens)
        assert fitted.dropped == ()
        assert fitted.to_json() == whole.to_json()

    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("ending", ["assistant text", "tool results"])
    def test_append_keeps_the_rendered_prefix_without_budget_pressure(
        self, graph: ContextGraph, fmt: ProviderFormat, ending: str
    ) -> None:
        """langchain-ai/langchain#37815: appending a turn never rewrites what was sent before."""
        graph.add_system("You are a coding agent.")
        graph.add_user("add a test")
        graph.add_assistant("reading", tool_calls=[_call("r", "read", path="a.py")])
        graph.add_tool_result("r", "def f(): pass")
        if ending == "assistant text":
            graph.add_assistant("I will add test_f.")
        renderer = Renderer(format=fmt)
        before = renderer.render(graph, budget=10_000)
        graph.add_user("also cover errors")
        graph.add_assistant("writing", tool_calls=[_call("w", "write", path="t.py")])
        graph.add_tool_result("w", "ok")
        after = renderer.render(graph, budget=10_000)
        assert (before.dropped, after.dropped) == ((), ())
        assert validate(after.payload, fmt) == []
        assert _extends(before.payload, after.payload, fmt)


class TestMasking:
    def test_masked_result_stays_paired_with_its_call(self, graph: ContextGraph) -> None:
        """All-Hands-AI/OpenHands V0 masking: a masked output is still the result of its call."""
        graph.add_user("find the bug")
        graph.add_assistant("reading", tool_calls=[_call("c1", "cat", path="big.log")])
        raw = graph.add_tool_result("c1", "noise " * 200)
        masked = graph.add_derived(
            ToolResultNode(
                id="tool_result-masked-c1",
                content=(TextPart(text="[output cleared: 200 words]"),),
                tool_call_id="c1",
                name="cat",
                replaces=raw,
            )
        )
        graph.add_user("and now?")
        view = _Projection(graph, {raw: masked})
        for fmt in FORMATS:
            payload = _render(view, fmt).payload
            assert validate(payload, fmt) == []
            assert _call_ids(payload, fmt) == _result_ids(payload, fmt) == ["c1"]
            assert "noise" not in str(payload)
        assert _render(view, "openai").payload["messages"] == [
            {"role": "user", "content": "find the bug"},
            {
                "role": "assistant",
                "content": "reading",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "cat", "arguments": '{"path": "big.log"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "[output cleared: 200 words]"},
            {"role": "user", "content": "and now?"},
        ]

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_result_whose_call_is_hidden_is_not_dropped_silently(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """All-Hands-AI/OpenHands V0 masking: an output cut off from its call still says so."""
        graph.add_user("find the bug")
        _, call = graph.add_assistant("reading", tool_calls=[_call("c1", "cat", path="a.log")])
        graph.add_tool_result("c1", "ERROR at line 7")
        view = _Projection(graph, {}, hide=frozenset({call}))
        payload = _render(view, fmt).payload
        assert validate(payload, fmt) == []
        assert ("user", "[output of cat]") in _texts(payload, fmt)
        assert "ERROR at line 7" in str(payload)


class TestNoProseToolCalls:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_placeholder_and_marker_never_imitate_a_tool_call(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """anomalyco/opencode#50814: the text we add never reads like a call to copy."""
        _agent_session(graph)
        graph.add_assistant("running", tool_calls=[_call("sh", "shell", cmd="make test")])
        result = _render(graph, fmt, _floor(graph, fmt))
        assert validate(result.payload, fmt) == []
        assert PROSE_CALL.search("[Assistant tool call]: shell(cmd='make test')")
        recorded = {node.text for node in graph}
        added = [(role, text) for role, text in _texts(result.payload, fmt) if text not in recorded]
        assert sorted({text for _, text in added}) == sorted(
            {MISSING_RESULT_TEXT, marker_text(len(result.dropped))}
        )
        for role, text in added:
            assert role in ("user", "tool")
            assert PROSE_CALL.search(text) is None, text
            assert "shell" not in text and "make test" not in text


class TestRequestEnding:
    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("history", ["empty", "system only", "notes only"])
    def test_rendered_history_is_never_empty(
        self, graph: ContextGraph, fmt: ProviderFormat, history: str
    ) -> None:
        """pydantic/pydantic-ai#2050: the history sent always holds at least one message."""
        if history == "system only":
            graph.add_system("You are terse.")
        if history == "notes only":
            graph.add_note("The user is Ada.")
        payload = _render(graph, fmt, 100).payload
        assert validate(payload, fmt) == []
        assert _messages(payload, fmt)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_trimmed_run_ends_with_its_tool_results(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """pydantic/pydantic-ai#2050: a trim during a run keeps its tail and ends on its results."""
        _agent_session(graph)
        graph.add_assistant("step 7", tool_calls=[_call("p", "pytest"), _call("q", "ruff")])
        graph.add_tool_result("q", "clean")
        graph.add_tool_result("p", "1 failed")
        result = _render(graph, fmt, _floor(graph, fmt))
        assert validate(result.payload, fmt) == []
        assert result.dropped
        messages = _messages(result.payload, fmt)
        # Chat Completions and Responses send one message (item) per result.
        tail = messages[-2:] if fmt in ("openai", "responses") else messages[-1:]
        assert [r for m in tail for r in _results_in(m, fmt)] == ["p", "q"]
        assert "wrap up" in str(result.payload)

    @pytest.mark.parametrize("fmt", FORMATS)
    def test_history_ending_with_an_empty_user_turn_ends_with_a_request(
        self, graph: ContextGraph, fmt: ProviderFormat
    ) -> None:
        """pydantic/pydantic-ai#2050: a history that ends with the user ends with a request."""
        graph.add_user("hi")
        graph.add_assistant("Hello! What should I do?")
        graph.add_user("")
        payload = _render(graph, fmt).payload
        assert validate(payload, fmt) == []
        assert _messages(payload, fmt)[-1]["role"] == "user"
