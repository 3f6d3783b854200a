"""Golden tests: one per hardening rule, comparing whole payloads."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from context_graph import (
    BudgetExceededError,
    ConfigurationError,
    ContextGraph,
    ImagePart,
    RedactedThinkingPart,
    TextPart,
    ThinkingPart,
)
from context_graph.render import MISSING_RESULT_TEXT, Renderer, marker_text
from context_graph.testing import WordCounter


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return ContextGraph(counter=WordCounter())


def _call(call_id: str, name: str = "bash", **args: object) -> dict[str, object]:
    return {"id": call_id, "name": name, "arguments": args}


def _render(graph: ContextGraph, fmt: str, budget: int | None = None) -> dict[str, Any]:
    return Renderer(format=fmt).render(graph, budget=budget).payload  # type: ignore[arg-type]


class TestToolPairs:
    def test_parallel_calls_in_openai(self, graph: ContextGraph) -> None:
        """Tool messages follow their assistant message at once, in call order."""
        graph.add_system("be brief")
        graph.add_user("list both")
        graph.add_assistant("checking", tool_calls=[_call("a", cmd="ls"), _call("b", cmd="pwd")])
        graph.add_tool_result("b", "/home")
        graph.add_tool_result("a", "x.py")
        assert _render(graph, "openai") == {
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "list both"},
                {
                    "role": "assistant",
                    "content": "checking",
                    "tool_calls": [
                        {
                            "id": "a",
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"cmd": "ls"}'},
                        },
                        {
                            "id": "b",
                            "type": "function",
                            "function": {"name": "bash", "arguments": '{"cmd": "pwd"}'},
                        },
                    ],
                },
                {"role": "tool", "tool_call_id": "a", "content": "x.py"},
                {"role": "tool", "tool_call_id": "b", "content": "/home"},
            ]
        }

    def test_parallel_calls_in_anthropic(self, graph: ContextGraph) -> None:
        """tool_result blocks lead the next user message, in call order, errors flagged."""
        graph.add_system("be brief")
        graph.add_user("list both")
        graph.add_assistant("checking", tool_calls=[_call("a", cmd="ls"), _call("b", cmd="pwd")])
        graph.add_tool_result("b", "denied", is_error=True)
        graph.add_tool_result("a", "x.py")
        graph.add_user("thanks")
        assert _render(graph, "anthropic") == {
            "system": [{"type": "text", "text": "be brief"}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "list both"}]},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "text", "text": "checking"},
                        {"type": "tool_use", "id": "a", "name": "bash", "input": {"cmd": "ls"}},
                        {"type": "tool_use", "id": "b", "name": "bash", "input": {"cmd": "pwd"}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "a",
                            "content": [{"type": "text", "text": "x.py"}],
                        },
                        {
                            "type": "tool_result",
                            "tool_use_id": "b",
                            "content": [{"type": "text", "text": "denied"}],
                            "is_error": True,
                        },
                        {"type": "text", "text": "thanks"},
                    ],
                },
            ],
        }

    def test_parallel_calls_in_gemini(self, graph: ContextGraph) -> None:
        """functionResponse parts lead the next user turn, in call order, with ids."""
        graph.add_user("go")
        graph.add_assistant(tool_calls=[_call("a", "f", n=1), _call("b", "g")])
        graph.add_tool_result("a", "one")
        graph.add_tool_result("b", "bad", is_error=True)
        assert _render(graph, "gemini") == {
            "contents": [
                {"role": "user", "parts": [{"text": "go"}]},
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"id": "a", "name": "f", "args": {"n": 1}}},
                        {"functionCall": {"id": "b", "name": "g", "args": {}}},
                    ],
                },
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "a",
                                "name": "f",
                                "response": {"output": "one"},
                            }
                        },
                        {
                            "functionResponse": {
                                "id": "b",
                                "name": "g",
                                "response": {"error": "bad"},
                            }
                        },
                    ],
                },
            ]
        }

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_unanswered_call_gets_a_placeholder(self, graph: ContextGraph, fmt: str) -> None:
        """A call with no result is answered by a deterministic placeholder that says so."""
        graph.add_user("run it")
        graph.add_assistant(tool_calls=[_call("c1")])
        first = _render(graph, fmt)
        assert MISSING_RESULT_TEXT in str(first)
        assert _render(graph, fmt) == first

    def test_placeholder_is_an_error_result_in_anthropic(self, graph: ContextGraph) -> None:
        """The placeholder is flagged as an error so the model does not trust it."""
        graph.add_user("run it")
        graph.add_assistant(tool_calls=[_call("c1")])
        last = _render(graph, "anthropic")["messages"][-1]
        assert last == {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "c1",
                    "content": [{"type": "text", "text": MISSING_RESULT_TEXT}],
                    "is_error": True,
                }
            ],
        }


class TestRoleOrder:
    @pytest.mark.parametrize(("fmt", "key"), [("anthropic", "messages"), ("gemini", "contents")])
    def test_history_opening_with_the_assistant_gets_a_user_turn(
        self, graph: ContextGraph, fmt: str, key: str
    ) -> None:
        """A greeting-first session starts with a minimal user turn."""
        graph.add_assistant("Hello! How can I help?")
        graph.add_user("book a flight")
        first = _render(graph, fmt)[key][0]
        assert first["role"] == "user"
        assert "[conversation start]" in str(first)

    def test_same_role_neighbours_merge_in_anthropic(self, graph: ContextGraph) -> None:
        """Consecutive user turns become one message with both blocks."""
        graph.add_user("one")
        graph.add_user("two")
        assert _render(graph, "anthropic")["messages"] == [
            {
                "role": "user",
                "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
            }
        ]

    def test_openai_keeps_consecutive_users_apart(self, graph: ContextGraph) -> None:
        """OpenAI accepts consecutive user messages, so they are left as they were."""
        graph.add_user("one")
        graph.add_user("two")
        assert _render(graph, "openai")["messages"] == [
            {"role": "user", "content": "one"},
            {"role": "user", "content": "two"},
        ]

    def test_system_content_goes_where_each_provider_wants_it(self, graph: ContextGraph) -> None:
        """System prompt and notes: system messages, the system field, systemInstruction."""
        graph.add_system("rules")
        graph.add_user("hi")
        graph.add_note("user is Ada")
        assert _render(graph, "openai")["messages"][:2] == [
            {"role": "system", "content": "rules"},
            {"role": "system", "content": "user is Ada"},
        ]
        assert _render(graph, "anthropic")["system"] == [
            {"type": "text", "text": "rules"},
            {"type": "text", "text": "user is Ada"},
        ]
        assert _render(graph, "gemini")["systemInstruction"] == {
            "parts": [{"text": "rules"}, {"text": "user is Ada"}]
        }

    def test_final_assistant_loses_trailing_whitespace_in_anthropic(
        self, graph: ContextGraph
    ) -> None:
        """Anthropic rejects a final assistant message ending in whitespace."""
        graph.add_user("hi")
        graph.add_assistant("hello \n\n")
        assert _render(graph, "anthropic")["messages"][-1] == {
            "role": "assistant",
            "content": [{"type": "text", "text": "hello"}],
        }

    def test_whitespace_only_text_is_dropped_in_anthropic(self, graph: ContextGraph) -> None:
        """Empty text blocks are rejected by Anthropic and never sent."""
        graph.add_user("hi")
        graph.add_assistant([TextPart(text="\n\n")], tool_calls=[_call("c")])
        graph.add_tool_result("c", "ok")
        assistant = _render(graph, "anthropic")["messages"][1]
        assert [b["type"] for b in assistant["content"]] == ["tool_use"]


class TestThinking:
    def test_thinking_goes_back_unchanged_and_first(self, graph: ContextGraph) -> None:
        """Signed thinking is sent byte for byte, before the text and calls of its turn."""
        graph.add_user("fix it")
        graph.add_assistant(
            [
                TextPart(text="\n\n"),
                ThinkingPart(thinking="let me look", signature="EqQBCkgIARAB=="),
                RedactedThinkingPart(data="opaque=="),
                TextPart(text="Looking."),
            ],
            tool_calls=[_call("r", "read", path="a.py")],
        )
        graph.add_tool_result("r", "print(1)")
        assistant = _render(graph, "anthropic")["messages"][1]
        assert assistant["content"] == [
            {"type": "thinking", "thinking": "let me look", "signature": "EqQBCkgIARAB=="},
            {"type": "redacted_thinking", "data": "opaque=="},
            {"type": "text", "text": "Looking."},
            {"type": "tool_use", "id": "r", "name": "read", "input": {"path": "a.py"}},
        ]

    def test_thinking_is_only_sent_to_the_provider_that_signed_it(
        self, graph: ContextGraph
    ) -> None:
        """Gemini-signed thoughts go back to Gemini only; unsigned thinking goes nowhere."""
        graph.add_user("q")
        graph.add_assistant(
            [
                ThinkingPart(thinking="g", signature="gsig", provider="gemini"),
                ThinkingPart(thinking="unsigned"),
                TextPart(text="a"),
            ]
        )
        assert _render(graph, "anthropic")["messages"][1]["content"] == [
            {"type": "text", "text": "a"}
        ]
        assert _render(graph, "gemini")["contents"][1]["parts"] == [
            {"text": "g", "thought": True, "thoughtSignature": "gsig"},
            {"text": "a"},
        ]
        assert _render(graph, "openai")["messages"][1] == {"role": "assistant", "content": "a"}


class TestIds:
    def test_invalid_anthropic_ids_are_mapped_and_mapped_back(self, graph: ContextGraph) -> None:
        """Ids with characters Anthropic refuses are rewritten, the same way every time."""
        graph.add_user("go")
        _, call = graph.add_assistant(tool_calls=[_call("call:1.x")])
        graph.add_tool_result("call:1.x", "ok")
        result = Renderer(format="anthropic").render(graph)
        use = result.payload["messages"][1]["content"][0]
        answer = result.payload["messages"][2]["content"][0]
        assert use["id"] == answer["tool_use_id"]
        assert use["id"].startswith("call_1_x_")
        assert result.call_ids[use["id"]] == call
        assert Renderer(format="anthropic").render(graph).payload == result.payload

    def test_reused_ids_become_unique(self, graph: ContextGraph) -> None:
        """An id reused after it was answered is sent as a new id; the first keeps its own."""
        graph.add_user("go")
        graph.add_assistant(tool_calls=[_call("x")])
        graph.add_tool_result("x", "1")
        graph.add_assistant(tool_calls=[_call("x")])
        graph.add_tool_result("x", "2")
        for fmt in ("openai", "anthropic", "gemini"):
            ids = list(Renderer(format=fmt).render(graph).call_ids)  # type: ignore[arg-type]
            assert ids[0] == "x"
            assert len(set(ids)) == 2

    def test_long_ids_fit_openai(self, graph: ContextGraph) -> None:
        """OpenAI's 40-character cap is respected."""
        long_id = "toolu_" + "a" * 60
        graph.add_user("go")
        graph.add_assistant(tool_calls=[_call(long_id)])
        graph.add_tool_result(long_id, "ok")
        messages = _render(graph, "openai")["messages"]
        sent = messages[1]["tool_calls"][0]["id"]
        assert len(sent) <= 40
        assert messages[2]["tool_call_id"] == sent


class TestBudget:
    def _session(self, graph: ContextGraph, turns: int) -> None:
        graph.add_system("system words here")
        for i in range(turns):
            graph.add_user(f"request number {i} " + "pad " * 20)
            graph.add_assistant(f"on it {i}", tool_calls=[_call(f"c{i}", n=i)])
            graph.add_tool_result(f"c{i}", "output " * 30)

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_fits_by_dropping_whole_units_oldest_first(self, graph: ContextGraph, fmt: str) -> None:
        """Under budget, the first request and the latest turn stay; one marker says how many."""
        self._session(graph, 12)
        full = Renderer(format=fmt).render(graph)  # type: ignore[arg-type]
        result = Renderer(format=fmt).render(graph, budget=full.tokens // 2)  # type: ignore[arg-type]
        text = str(result.payload)
        assert result.tokens <= full.tokens // 2
        assert "request number 0" in text and "request number 11" in text
        assert marker_text(len(result.dropped)) in text
        assert text.count("earlier turn") == 1
        # Whole units only: an assistant unit's text and its call id go together; and
        # what is gone is a run of the oldest units after the protected first request.
        body = json.dumps(result.payload)
        present: list[bool] = []
        for i in range(12):
            if i:
                present.append(f"request number {i} " in body)
            text, call = f'"on it {i}"' in body, f'"c{i}"' in body
            assert text == call, (i, text, call)
            present.append(text)
        gone = present.index(True)
        assert gone == len(result.dropped) > 0
        assert all(present[gone:])

    @pytest.mark.parametrize("fmt", ["openai", "anthropic", "gemini"])
    def test_impossible_budget_raises_with_the_minimum(self, graph: ContextGraph, fmt: str) -> None:
        """When the floor itself does not fit, the error carries the budget and the minimum."""
        self._session(graph, 3)
        with pytest.raises(BudgetExceededError) as info:
            Renderer(format=fmt).render(graph, budget=10)  # type: ignore[arg-type]
        assert info.value.budget == 10
        floor = Renderer(format=fmt).render(graph, budget=info.value.required)  # type: ignore[arg-type]
        assert floor.tokens <= info.value.required

    def test_pinned_units_survive(self, graph: ContextGraph) -> None:
        """A pinned turn in the middle is kept while its neighbours are dropped."""
        self._session(graph, 3)
        graph.add_user("remember: never use rm -rf", pinned=True)
        self._session(graph, 6)
        full = Renderer(format="openai").render(graph)
        result = Renderer(format="openai").render(graph, budget=full.tokens // 3)
        assert "never use rm -rf" in str(result.payload)
        assert result.dropped

    def test_no_budget_keeps_everything(self, graph: ContextGraph) -> None:
        """Without a budget nothing is dropped and the size is reported."""
        self._session(graph, 4)
        result = Renderer(format="openai").render(graph)
        assert result.dropped == ()
        assert result.tokens == result.tokens_before

    def test_negative_budget_is_a_configuration_error(self, graph: ContextGraph) -> None:
        """A negative budget is a developer mistake."""
        with pytest.raises(ConfigurationError):
            Renderer().render(graph, budget=-1)


class TestCaching:
    def test_unchanged_graph_returns_the_same_result(self, graph: ContextGraph) -> None:
        """Rendering again with nothing new returns the cached result itself."""
        graph.add_user("hi")
        renderer = Renderer(format="anthropic")
        assert renderer.render(graph) is renderer.render(graph)

    def test_append_only_counts_the_new_content(self) -> None:
        """After one new event, only that event's text is counted again."""
        seen: list[str] = []

        class Recording(WordCounter):
            def count(self, text: str) -> int:
                seen.append(text)
                return super().count(text)

        graph = ContextGraph(counter=Recording())
        for i in range(20):
            graph.add_user(f"message {i}")
        renderer = Renderer(format="openai")
        renderer.render(graph)
        seen.clear()
        graph.add_user("the newest one")
        renderer.render(graph)
        assert seen == ["the newest one"]

    def test_render_is_deterministic_across_renderers(self, graph: ContextGraph) -> None:
        """Two renderers give byte-identical JSON for the same graph."""
        graph.add_user([TextPart(text="see"), ImagePart(media_type="image/png", data="iVBO")])
        graph.add_assistant("ok", tool_calls=[_call("c")])
        for fmt in ("openai", "anthropic", "gemini"):
            one = Renderer(format=fmt).render(graph).to_json()  # type: ignore[arg-type]
            two = Renderer(format=fmt).render(graph).to_json()  # type: ignore[arg-type]
            assert one == two


class TestCacheBreakpoints:
    def test_marks_system_stable_prefix_and_last_block(self, graph: ContextGraph) -> None:
        """With breakpoints on, the system, the unchanged prefix and the end are marked."""
        graph.add_system("rules")
        graph.add_user("one")
        graph.add_assistant("two")
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        renderer.render(graph)
        graph.add_user("three")
        graph.add_assistant("four")
        payload = renderer.render(graph).payload
        marks = [str(m) for m in payload["messages"] if "cache_control" in str(m)]
        assert "cache_control" in str(payload["system"][-1])
        assert len(marks) == 2
        assert "two" in marks[0] and "four" in marks[1]

    def test_never_more_than_four_marks(self, graph: ContextGraph) -> None:
        """However the history changes, a request carries at most four marks."""
        renderer = Renderer(format="anthropic", cache_breakpoints=True)
        graph.add_system("rules")
        for i in range(10):
            graph.add_user(f"u{i}")
            graph.add_assistant(f"a{i}")
            assert str(renderer.render(graph).payload).count("cache_control") <= 4

    def test_breakpoints_are_anthropic_only(self) -> None:
        """Asking for cache breakpoints in another format is a configuration error."""
        with pytest.raises(ConfigurationError):
            Renderer(format="openai", cache_breakpoints=True)


class TestCalibration:
    def _graph(self) -> ContextGraph:
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        for i in range(10):
            graph.add_user(f"question {i} " + "word " * 10)
            graph.add_assistant(f"answer {i} " + "word " * 10)
        return graph

    def test_budget_is_met_by_the_providers_count(self) -> None:
        """After the provider reports 2x our count, renders fit half as many local tokens."""
        from context_graph import Calibrator

        graph = self._graph()
        renderer = Renderer(format="anthropic", calibrator=Calibrator(smoothing=1.0))
        first = renderer.render(graph, budget=200)
        assert renderer.observe_usage(first, prompt_tokens=first.tokens * 2) == 2.0
        second = renderer.render(graph, budget=200)
        assert second.tokens <= 100 < first.tokens
        assert second.budget == 200

    def test_impossible_calibrated_budget_reports_the_providers_scale(self) -> None:
        """The error's budget and minimum are in the provider's tokens."""
        from context_graph import Calibrator

        graph = self._graph()
        calibrator = Calibrator(smoothing=1.0)
        calibrator.observe(100, 150)
        with pytest.raises(BudgetExceededError) as calibrated:
            Renderer(format="openai", calibrator=calibrator).render(graph, budget=20)
        with pytest.raises(BudgetExceededError) as local:
            Renderer(format="openai").render(graph, budget=13)
        assert calibrated.value.budget == 20
        assert calibrated.value.required == math.ceil(local.value.required * 1.5)

    def test_without_calibrator_usage_is_ignored(self) -> None:
        """observe_usage is a no-op without a calibrator."""
        graph = self._graph()
        renderer = Renderer()
        assert renderer.observe_usage(renderer.render(graph), 10_000) == 1.0


class TestSourceIdentity:
    def test_a_new_graph_at_the_same_version_is_rendered_afresh(self) -> None:
        """The render cache is tied to the graph object, not only to its version number."""
        renderer = Renderer(format="openai")
        one = ContextGraph(counter=WordCounter())
        one.add_user("first graph")
        two = ContextGraph(counter=WordCounter())
        two.add_user("second graph")
        assert one.version == two.version
        assert "first graph" in str(renderer.render(one).payload)
        assert "second graph" in str(renderer.render(two).payload)


class TestIdsBack:
    def test_result_under_a_rewritten_id_answers_its_call(self, graph: ContextGraph) -> None:
        """A result reported under the id a render sent pairs with the original call."""
        graph.add_user("go")
        _, call = graph.add_assistant(tool_calls=[_call("call:1.x")])
        sent = next(iter(Renderer(format="anthropic").render(graph).call_ids))
        assert sent != "call:1.x"
        result = graph.add_tool_result(sent, "done")
        answered = graph.call_of(result)
        assert answered is not None and answered.id == call
        assert graph.unanswered_calls() == ()
        assert getattr(graph[result], "tool_call_id", None) == "call:1.x"

    def test_unknown_id_is_still_refused(self, graph: ContextGraph) -> None:
        """An id that matches no call, directly or as a rewrite, is an orphan."""
        from context_graph import IngestError

        graph.add_user("go")
        graph.add_assistant(tool_calls=[_call("call:1.x")])
        with pytest.raises(IngestError, match="no matching tool call"):
            graph.add_tool_result("call_1_x_0000000000", "done")


class TestImportedCompaction:
    def test_summary_replaces_what_it_abstracts_but_not_pinned_nodes(
        self, graph: ContextGraph
    ) -> None:
        """After an imported compaction, the summary stands in; the system prompt stays."""
        graph.add_system("the rules")
        graph.add_user("old request")
        graph.add_assistant("old answer")
        graph.add({"type": "compaction", "content": "summary of the old part"})
        graph.add_user("new request")
        payload = Renderer(format="openai").render(graph).payload
        assert payload == {
            "messages": [
                {"role": "system", "content": "the rules"},
                {"role": "user", "content": "summary of the old part"},
                {"role": "user", "content": "new request"},
            ]
        }


class TestRefit:
    def _grow(self, graph: ContextGraph, start: int, count: int) -> None:
        for i in range(start, start + count):
            graph.add_user(f"question {i} " + "word " * 20)
            graph.add_assistant(f"answer {i} " + "word " * 20)

    def test_dropped_units_stay_the_same_while_they_fit(self) -> None:
        """With refit_to, later renders keep the earlier drops, so the prefix is stable."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        self._grow(graph, 0, 20)
        renderer = Renderer(format="openai", refit_to=0.6)
        budget = Renderer(format="openai").render(graph).tokens * 3 // 4
        first = renderer.render(graph, budget=budget)
        assert first.tokens <= int(budget * 0.6)
        self._grow(graph, 20, 1)
        second = renderer.render(graph, budget=budget)
        assert second.dropped == first.dropped
        assert (
            second.payload["messages"][: len(first.payload["messages"]) - 2]
            == (first.payload["messages"][:-2])
        )

    def test_refits_in_one_step_when_the_drops_no_longer_fit(self) -> None:
        """When the kept drops stop fitting, it drops down to the low-water mark again."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        self._grow(graph, 0, 20)
        renderer = Renderer(format="anthropic", refit_to=0.6)
        budget = Renderer(format="anthropic").render(graph).tokens * 3 // 4
        first = renderer.render(graph, budget=budget)
        self._grow(graph, 20, 12)
        later = renderer.render(graph, budget=budget)
        assert len(later.dropped) > len(first.dropped)
        assert later.tokens <= int(budget * 0.6)

    def test_without_refit_the_fewest_units_are_dropped(self) -> None:
        """The default drops only what it must, every time."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_system("rules")
        self._grow(graph, 0, 20)
        budget = Renderer(format="openai").render(graph).tokens * 3 // 4
        result = Renderer(format="openai").render(graph, budget=budget)
        assert budget * 0.6 < result.tokens <= budget

    @pytest.mark.parametrize("value", [0, -0.5, 1.5])
    def test_bad_refit_is_a_configuration_error(self, value: float) -> None:
        """refit_to must be a share in (0, 1]."""
        with pytest.raises(ConfigurationError, match="refit_to"):
            Renderer(refit_to=value)
