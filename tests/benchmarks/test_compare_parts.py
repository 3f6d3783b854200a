"""The parts of the peer comparison, on small sessions made here."""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.__main__ import available_specs
from benchmarks.compare.autogen_peer import _largest
from benchmarks.compare.contenders import ContenderSpec, context_graph_specs
from benchmarks.compare.facts import (
    MessageLedger,
    contexts_of,
    gold_values,
    message_text,
    references,
    squeezed,
)
from benchmarks.compare.openhands_peer import PLACEHOLDER, ObservationMaskingContender
from benchmarks.compare.page import _tight_line
from benchmarks.compare.probes import PROBE_KINDS
from benchmarks.compare.report import Verdict, judge, summary_table, verdict_table
from benchmarks.compare.runner import CallRow, Run, replay, setup
from benchmarks.compare.sdk_types import message_problems, payload_shape_problems
from benchmarks.compare.sessions import Session
from benchmarks.compare.stats import summarize
from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    SystemPrompt,
    TiktokenCounter,
    TokenCounter,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.validate.request import validate
from orchestrator.replay import model_call_points


def _events() -> list[AgentEvent]:
    """A small tool-using session: two parallel calls, an error, a later request."""
    return [
        SystemPrompt(content="You fix bugs."),
        UserTurn(content="Fix src/app/main.py for ticket ABC-123."),
        AssistantTurn(
            content="Looking.",
            tool_calls=[
                ToolCall(id="c1", name="bash", arguments='{"cmd": "pytest"}'),
                ToolCall(id="c2", name="read", arguments='{"path": "src/app/main.py"}'),
            ],
        ),
        ToolResult(call_id="c1", content="ValueError: bad port 8080", is_error=True),
        ToolResult(call_id="c2", content="def main():\n    return 1\n" * 40),
        AssistantTurn(content="Patching.", tool_calls=[ToolCall(id="c3", name="bash")]),
        ToolResult(call_id="c3", content="ok " * 300),
        UserTurn(content="Also keep the retry limit at 5000."),
        AssistantTurn(content="Done."),
    ]


def _session(events: list[AgentEvent], facts: Sequence[str] = ()) -> Session:
    return Session.made(events, facts)


class TestReferences:
    def test_user_turns_and_tool_errors_enter_when_seen(self) -> None:
        """A call's reference holds the entities of the user turns and errors fed so far."""
        events = _events()
        refs = references(events, frozenset(model_call_points(events)), ())
        assert refs.at_call[2] == {"src/app/main.py", "ABC-123"}
        assert refs.at_call[5] == {"src/app/main.py", "ABC-123", "ValueError", "8080"}
        assert refs.at_call[8] == {*refs.at_call[5], "5000"}
        assert refs.at_call[9] == refs.at_call[8]

    def test_a_recorded_compaction_resets_the_view(self) -> None:
        """After a compaction only what follows it is expected."""
        events = [
            *_events()[:4],
            Compaction(content="summary"),
            UserTurn(content="Go on with TK-1234."),
        ]
        refs = references(events, frozenset({6}), ())
        assert refs.at_call[6] == {"TK-1234"}

    def test_a_harness_notice_is_not_the_users_turn(self) -> None:
        """A notice's entities (a harness's folder tree) are not expected; the user's are.

        Gemini CLI's session context lists up to 200 paths: counted as the user's facts,
        they outweighed everything the user said.
        """
        tree = (
            "<session_context>\nWorkspace /repo\n├───src/app/main.py\n├───Makefile\n"
            "</session_context>"
        )
        events: list[AgentEvent] = [
            UserTurn(content=tree, notice=True),
            UserTurn(content="Fix ticket ABC-123."),
            AssistantTurn(content="Looking."),
        ]
        refs = references(events, frozenset({2, 3}), ())
        assert refs.at_call[2] == {"ABC-123"}
        assert "src/app/main.py" not in refs.universe

    def test_gold_values_count_once_they_appear(self) -> None:
        """A gold value is expected from the call after it first appears anywhere."""
        fact = 'get_reservation_details(reservation_id="3RK2T9")'
        assert gold_values([fact]) == ["3RK2T9"]
        events: list[AgentEvent] = [
            UserTurn(content="Help me."),
            AssistantTurn(content="Which one?"),
            UserTurn(content="Reservation 3RK2T9."),
            AssistantTurn(content="Fine."),
        ]
        refs = references(events, frozenset({1, 3, 4}), [fact])
        assert "3RK2T9" not in refs.at_call[1]
        assert "3RK2T9" in refs.at_call[3]


def _calling(arguments: object) -> dict[str, Any]:
    """An assistant message with one tool call whose `arguments` are as given."""
    call = {"id": "c1", "type": "function", "function": {"name": "edit", "arguments": arguments}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class TestMessageText:
    """What a probe or a reference entity is searched in: what the model reads."""

    def test_an_answer_in_a_tool_calls_arguments_is_found(self) -> None:
        """A line the agent passed to a tool, quotes and all, counts as in the request.

        The arguments are one JSON string: searched as sent, `"` reads `\\"`, so before
        this an edit's `old_string` never held a line with a quote, for any contender.
        """
        line = "help='Force colorization of the \"command\" output.',"
        message = _calling(json.dumps({"old_string": f"    {line}\n", "path": "a.py"}))
        assert line not in json.dumps(message)  # escaped as sent
        ledger = MessageLedger([line, "a.py", "absent"])
        assert ledger.facts(message).entities == {line, "a.py"}

    @given(st.text(min_size=1, max_size=40))
    @settings(max_examples=60)
    def test_every_argument_string_reads_as_the_model_reads_it(self, answer: str) -> None:
        """Whatever the text, an argument's value is found after decoding."""
        message = _calling(json.dumps({"new_string": answer, "nested": [{"x": answer}]}))
        assert answer in message_text(message)

    @pytest.mark.parametrize(
        "arguments",
        ['{"old_string": "unterminated', "", "[1, 2", 42, None, {"already": "decoded"}],
    )
    def test_arguments_that_are_not_json_read_as_they_stand(self, arguments: object) -> None:
        """Malformed or odd arguments neither raise nor vanish: their strings stay."""
        text = message_text(_calling(arguments))
        assert "edit" in text.split("\n")  # the rest of the message is read as before
        if isinstance(arguments, str):
            assert arguments in text
        if isinstance(arguments, dict):
            assert "decoded" in text

    @pytest.mark.parametrize(
        ("message", "held"),
        [
            ({"role": "assistant", "tool_calls": "not a list"}, "not a list"),
            ({"role": "assistant", "tool_calls": [None, "x", {"function": "f"}]}, "f"),
            ({"role": "user", "content": [{"type": "text", "text": "hi"}]}, "hi"),
            (["not", "a", "dict"], "dict"),
        ],
    )
    def test_odd_shapes_read_their_strings(self, message: object, held: str) -> None:
        """Any JSON value is read for its strings, tool calls of any shape too."""
        assert held in message_text(message).split("\n")


class TestInContext:
    """An entity kept in context: with what stood beside it where it was first seen."""

    def test_a_context_is_the_entity_with_its_neighbours_on_the_line(self) -> None:
        # Twelve characters a side, cut where they fall.
        assert contexts_of("8080", "We serve on port 8080 for now.\nok") == (
            "rve on port 8080",
            "8080 for now.",
        )

    def test_a_side_too_short_gives_none_and_a_lone_entity_is_its_own(self) -> None:
        """The line's start or end limits a side; a side of whitespace is no context."""
        assert contexts_of("ABC-123", "Fix ABC-123\n") == ("ABC-123",)  # "Fix" is 3
        assert contexts_of("ABC-123", "Fixes ABC-123\n") == ("Fixes ABC-123",)
        assert contexts_of("ABC-123", "ABC-123") == ("ABC-123",)
        assert contexts_of("ABC-123", "         ABC-123   \r\n") == ("ABC-123",)
        assert contexts_of("absent", "some text") == ("absent",)

    def test_whitespace_is_squeezed_and_places_are_capped(self) -> None:
        """Re-indented text still counts; only the first few places give contexts."""
        assert contexts_of("x.py", '  File   "x.py", line 3') == ('File "x.py', 'x.py", line 3')
        many = "\n".join(f"line {n} of x.py here" for n in range(10))
        assert len(contexts_of("x.py", many)) <= 6

    @given(st.text(max_size=60), st.text(min_size=1, max_size=8))
    @settings(max_examples=100)
    def test_every_context_holds_the_entity(self, text: str, entity: str) -> None:
        """Whatever the text, each context holds the entity (squeezed) and is squeezed."""
        for context in contexts_of(entity, text):
            assert squeezed(entity) in context
            assert context == squeezed(context) or context == entity

    def test_references_record_the_first_sources_context(self) -> None:
        refs = references(_events(), frozenset({2, 5, 9}), ())
        assert refs.contexts["8080"] == ("r: bad port 8080",)
        assert refs.contexts["5000"] == ("ry limit at 5000",)  # "." is too short a side
        assert set(refs.contexts) == set(refs.universe)

    def test_a_bare_list_of_names_is_kept_but_not_in_context(self) -> None:
        """The extractive brief's identifiers line holds every name, none in context."""
        events = _events()
        counter = TiktokenCounter()
        listed = {
            "messages": [
                {"role": "system", "content": "You fix bugs."},
                {"role": "user", "content": "Key identifiers: `ABC-123`, `8080`, `5000`"},
            ]
        }
        quoted = {
            "messages": [
                {"role": "system", "content": "You fix bugs."},
                {"role": "user", "content": "Fix it, for ticket ABC-123. Error: bad port 8080"},
            ]
        }
        rows = {}
        for name, body in (("listed", listed), ("quoted", quoted)):
            run = replay(
                _spec(body), setup(_session(events), counter), "50%", 10_000, counter, memory=False
            )
            rows[name] = run.rows[-1]
        assert rows["listed"].kept == 3 and rows["listed"].kept_in_context == 0
        assert rows["quoted"].kept == 2 and rows["quoted"].kept_in_context == 2

    def test_the_ledger_finds_contexts_in_squeezed_text_only_when_asked(self) -> None:
        message = {"role": "tool", "content": "Serve   on port\n8080 for now."}
        assert MessageLedger(["8080"], contexts=["port 8080"]).facts(message).entities == {
            "8080",
            "port 8080",
        }
        assert MessageLedger(["8080", "port 8080"]).facts(message).entities == {"8080"}


class TestSdkTypes:
    def test_a_conforming_tool_message_passes(self) -> None:
        """A tool message with its call id conforms to the SDK's types."""
        assert message_problems({"role": "tool", "tool_call_id": "c1", "content": "4"}) == []

    def test_unknown_keys_and_wrong_types_are_reported(self) -> None:
        """A misspelled key and a non-string content are both found, with their paths."""
        problems = message_problems({"role": "tool", "tool_call": "c1", "content": 4})
        assert any("tool_call: unknown key" in p for p in problems)
        assert any("tool_call_id: missing required key" in p for p in problems)

    def test_an_empty_request_is_reported(self) -> None:
        """The API rejects an empty message list, so the check does too."""
        assert payload_shape_problems({"messages": []})
        assert payload_shape_problems({"messages": [{"role": "user", "content": "x"}]}) == []


class _Scripted:
    """A contender that always answers with the same body, or refuses."""

    def __init__(self, body: dict[str, Any] | None) -> None:
        self._body = body

    def prepare(self, events: Sequence[AgentEvent]) -> list[Any]:
        return list(events)

    async def feed(self, item: Any) -> None:
        return None

    async def tune(self, budget: int) -> None:
        return None

    async def request(self, budget: int) -> Any | None:
        return self._body

    def payload(self, native: Any) -> dict[str, Any]:
        return dict(native)


def _spec(body: dict[str, Any] | None) -> ContenderSpec:
    def make(budget: int, counter: TokenCounter) -> _Scripted:
        return _Scripted(body)

    return ContenderSpec(name="scripted", family="test", make=make, settings="")


class TestReplay:
    def test_an_invalid_request_is_caught_by_both_checks(self) -> None:
        """An orphan result breaks our rules; a misspelled key breaks the SDK's types."""
        body = {"messages": [{"role": "tool", "tool_call": "x", "content": "ABC-123"}]}
        counter = TiktokenCounter()
        session = _session(_events())
        run = replay(_spec(body), setup(session, counter), "50%", 1_000, counter, memory=True)
        assert len(run.rows) == len(session.calls)
        assert all(row.our_errors > 0 and row.sdk_errors > 0 for row in run.rows)
        assert [row.kept for row in run.rows] == [1, 1, 1, 1]
        assert run.rows[1].prefix_reused and not run.rows[0].prefix_reused
        assert run.peak_bytes is not None

    def test_a_refusal_keeps_nothing_and_breaks_the_prefix(self) -> None:
        """A refused call is counted, keeps no entity and does not extend the prefix."""
        counter = TiktokenCounter()
        session = _session(_events())
        run = replay(_spec(None), setup(session, counter), "50%", 1_000, counter, memory=False)
        assert all(row.refused and row.kept == 0 and not row.prefix_reused for row in run.rows)
        assert run.rows[-1].reference == 5


class TestObservationMasking:
    def test_old_observations_are_masked_and_stay_paired(self) -> None:
        """Results older than the window become the placeholder; the body stays valid."""
        contender = ObservationMaskingContender(attention_window=3)
        events = _events()

        async def last_request() -> Any:
            for item in contender.prepare(events):
                await contender.feed(item)
            return await contender.request(10)

        body = contender.payload(anyio.run(last_request))
        tools = [m for m in body["messages"] if m["role"] == "tool"]
        assert [m["content"] == PLACEHOLDER for m in tools] == [True, True, False]
        assert len(body["messages"][2]["tool_calls"]) == 2
        assert validate(body, "openai") == []


@settings(max_examples=60, deadline=None)
@given(limit=st.integers(0, 300), largest_fitting=st.integers(0, 400))
def test_autogen_sizes_are_the_largest_that_fit(limit: int, largest_fitting: int) -> None:
    """The size search returns the largest fitting count in [1, limit], or 1 when none fits."""

    async def fits(size: int) -> bool:
        return size <= largest_fitting

    found = anyio.run(_largest, limit, fits)
    assert found == min(max(largest_fitting, 1), max(limit, 1))


class TestPeers:
    def test_a_missing_peer_is_skipped_with_a_note(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without autogen-core the AutoGen contenders are left out and the page says so."""
        monkeypatch.setitem(sys.modules, "autogen_core", None)
        monkeypatch.setitem(sys.modules, "autogen_core.model_context", None)
        specs, notes = available_specs()
        assert not [s for s in specs if s.family == "autogen"]
        assert any("autogen-core" in note for note in notes)
        assert [s.name for s in specs if s.ours] == [
            "context-graph coding",
            "context-graph service",
            "context-graph chat",
            "context-graph coding + agent tools",
            "context-graph coding + cost guard",
        ]

    def test_autogen_requests_fit_and_batch_parallel_results(self) -> None:
        """The buffered context answers within the budget, with parallel results batched."""
        from benchmarks.compare.autogen_peer import AutoGenContender

        counter = TiktokenCounter()
        session = _session(_events())
        spec = ContenderSpec(
            "autogen buffered",
            "autogen",
            lambda budget, c: AutoGenContender("buffered", budget, c),
            "",
        )
        run = replay(spec, setup(session, counter), "50%", 400, counter, memory=False)
        assert all(not row.over_budget and row.our_errors == 0 for row in run.rows)
        wide = replay(spec, setup(session, counter), "8k", 8_000, counter, memory=False)
        assert wide.rows[-1].kept == wide.rows[-1].reference == 5

    def test_langchain_counts_like_the_measure(self) -> None:
        """trim_messages is given the same count the requests are measured with."""
        from benchmarks.compare.langchain_peer import LangChainTrimContender
        from context_graph.render import count_payload

        counter = TiktokenCounter()
        contender = LangChainTrimContender(8_000, counter)

        async def trimmed() -> Any:
            for item in contender.prepare(_events()):
                await contender.feed(item)
            return await contender.request(8_000)

        messages = anyio.run(trimmed)
        body = contender.payload(messages)
        assert contender._count(messages) == count_payload(body, "openai", counter)


class TestTightSessions:
    """The prefix diagnosis splits the misses by how much of the budget the task takes."""

    @staticmethod
    def _run(task: int, budget: int, reused: Sequence[bool]) -> Run:
        run = Run("x", "fam", f"s{task}", "50%", budget, task_tokens=task)
        run.rows = [CallRow(i, 10, 5, False, 0, 0, 0, 0, flag, 0) for i, flag in enumerate(reused)]
        return run

    def test_misses_in_tight_sessions_are_told_apart(self) -> None:
        tight = self._run(900, 1_000, [False, False, True, False])  # 2 misses of 3 pairs
        roomy = self._run(100, 1_000, [False, True, True, True, False])  # 1 miss of 4 pairs
        line = _tight_line([tight, roomy])
        assert line.startswith("2 of the 3 misses are in the 1 sessions")
        assert "over the other 1 sessions prefix stability is 0.75" in line


class TestRecoverable:
    """Ours with agent tools names ids; what one expand of them brings back is recoverable."""

    @staticmethod
    def _events() -> list[AgentEvent]:
        events: list[AgentEvent] = [
            SystemPrompt(content="You fix bugs."),
            UserTurn(content="Fix the failing tests in src/app."),
        ]
        for i in range(10):
            events.append(
                AssistantTurn(
                    content=f"Run {i}.",
                    tool_calls=[ToolCall(id=f"c{i}", name="bash", arguments='{"cmd": "pytest"}')],
                )
            )
            lines = [f"case_{i}_{k} failed: ValueError code E{i}{k:03d}" for k in range(150)]
            events.append(ToolResult(call_id=f"c{i}", content="\n".join(lines), is_error=True))
            events.append(UserTurn(content=f"Keep going with ticket TKT-{i:04d}."))
        events.append(AssistantTurn(content="Done."))
        return events

    def test_agent_tools_make_missing_facts_recoverable(self) -> None:
        """At a tight budget some missing facts are one named expand away; without, none."""
        specs = {s.name: s for s in context_graph_specs()}
        counter = TiktokenCounter()
        session = _session(self._events())
        with_tools = replay(
            specs["context-graph coding + agent tools"],
            setup(session, counter),
            "50%",
            3_000,
            counter,
            memory=False,
        )
        without = replay(
            specs["context-graph coding"],
            setup(session, counter),
            "50%",
            3_000,
            counter,
            memory=False,
        )
        assert sum(row.recoverable for row in with_tools.rows) > 0
        assert sum(row.recoverable for row in without.rows) == 0
        for row in with_tools.rows:
            assert row.kept + row.recoverable <= row.reference
            assert row.our_errors == 0


class TestFill:
    """Fill: tokens sent over the budget, at the calls whose request was compacted."""

    def test_only_compacted_answered_calls_count(self) -> None:
        """A call sent whole (raw fits) or refused does not count; the others average."""
        run = Run("ours", "fam", "s", "50%", 1_000)
        run.rows = [
            CallRow(1, 500, 500, False, 0, 0, 0, 0, True, 0),  # whole history: not compacted
            CallRow(2, 3_000, 900, False, 0, 0, 0, 0, True, 0),
            CallRow(3, 4_000, 700, False, 0, 0, 0, 0, True, 0),
            CallRow(4, 5_000, None, True, 0, 0, 0, 0, False, 0),  # refused
        ]
        assert summarize([run], "ours", "50%").fill == (0.9 + 0.7) / 2
        assert "| fill (compacted) |" in summary_table([run], ["ours"], "50%")


class TestProbeAndFillVerdicts:
    """The page's targets table judges every probe kind against the best peer, and fill."""

    @staticmethod
    def _run(name: str, passed: int, *, over_budget: bool = False, sent: int = 900) -> Run:
        """Two calls, each asking `tool_value` once; `passed` of them answered it."""
        run = Run(name, "fam", "s", "8k", 1_000)
        probed = [(0, 0, 0)] * len(PROBE_KINDS)
        run.rows = []
        for index in range(2):
            asked = list(probed)
            asked[PROBE_KINDS.index("tool_value")] = (1, int(index < passed), 0)
            row = CallRow(index, 3_000, sent, over_budget, 0, 0, 0, 0, True, 0)
            run.rows.append(dataclasses.replace(row, probed=tuple(asked)))
        return run

    def _verdicts(self, runs: list[Run]) -> dict[str, Verdict]:
        return {v.target: v for v in judge(runs, ["ours"], ["peer"], ["8k"])}

    def test_a_kind_behind_the_best_peer_is_named(self) -> None:
        verdict = self._verdicts([self._run("ours", 1), self._run("peer", 2)])[
            "every probe kind >= the best peer"
        ]
        assert not verdict.met
        assert verdict.detail == "`tool_value` 0.500 vs 1.000 (peer)"

    def test_a_tie_or_a_lead_is_met(self) -> None:
        for peer_passed in (0, 1):
            verdict = self._verdicts([self._run("ours", 1), self._run("peer", peer_passed)])[
                "every probe kind >= the best peer"
            ]
            assert verdict.met and verdict.detail == "1 kinds"

    def test_a_peer_over_the_budget_passes_nothing(self) -> None:
        """A request over the budget is not what the agent keeps within it."""
        runs = [self._run("ours", 1), self._run("peer", 2, over_budget=True, sent=1_200)]
        assert self._verdicts(runs)["every probe kind >= the best peer"].met

    def test_fill_is_judged_at_the_target(self) -> None:
        """Fill is tokens sent over the budget at compacted calls: 0.9 meets 0.8, 0.7 not."""
        full = self._verdicts([self._run("ours", 1, sent=900), self._run("peer", 0)])
        short = self._verdicts([self._run("ours", 1, sent=700), self._run("peer", 0)])
        assert full["fill >= 0.8"].met and full["fill >= 0.8"].detail == "0.900"
        assert not short["fill >= 0.8"].met and short["fill >= 0.8"].detail == "0.700"
        table = verdict_table(list(short.values()), ["ours"])
        assert "| fill >= 0.8 | 8k | **not met**: 0.700 |" in table

    def test_fill_without_a_compacted_call_is_not_a_miss(self) -> None:
        """Every request was the whole history: fill has nothing to judge."""
        verdict = self._verdicts([self._run("ours", 1, sent=3_000), self._run("peer", 0)])
        assert verdict["fill >= 0.8"].met
        assert verdict["fill >= 0.8"].detail == "no call compacted"
