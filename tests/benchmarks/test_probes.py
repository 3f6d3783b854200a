"""Fidelity probes: what the generator asks of a session, and how calls are scored."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.compare.contenders import ContenderSpec
from benchmarks.compare.fidelity import probe_recall, probe_table, reach
from benchmarks.compare.probes import LIMIT, PROBE_KINDS, STALE_AFTER, edited_lines, probes
from benchmarks.compare.runner import replay, setup
from benchmarks.compare.sessions import Session
from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    FileRead,
    SystemPrompt,
    TiktokenCounter,
    TokenCounter,
    ToolCall,
    ToolResult,
    UserTurn,
)
from orchestrator.replay import model_call_points


def _events() -> list[AgentEvent]:
    """A session that makes one probe of every kind."""
    return [
        SystemPrompt(content="You fix bugs in repo acme/widgets."),
        UserTurn(content="Fix the parser. You must keep the public API unchanged. Thanks."),
        AssistantTurn(
            content="Reading.",
            tool_calls=[ToolCall(id="c1", name="read", arguments='{"path": "src/parser.py"}')],
        ),
        FileRead(call_id="c1", path="src/parser.py", content="parse_tokens_v2 = 4096\n"),
        AssistantTurn(
            content="Running the tests.",
            tool_calls=[ToolCall(id="c2", name="bash", arguments='{"cmd": "pytest -q"}')],
        ),
        ToolResult(call_id="c2", content="FAILED test_parse: KeyError 'token'\n", is_error=True),
        AssistantTurn(
            content="The helper parse_tokens_v2 matters.\nNext I patch the lookup.",
            tool_calls=[ToolCall(id="c3", name="bash", arguments='{"cmd": "pytest -q"}')],
        ),
        ToolResult(call_id="c3", content="12 passed in 0.31s\n"),
        AssistantTurn(content="Done: all tests pass now."),
    ]


def _at_end(events: list[AgentEvent]) -> dict[str, list[str]]:
    asked = probes(events, frozenset({len(events)}))
    found: dict[str, list[str]] = {kind: [] for kind in PROBE_KINDS}
    for probe in asked.at_call[len(events)]:
        found[probe.kind].append(probe.answer)
    return found


class TestGenerator:
    """Each kind of probe, from a session made to hold one of each."""

    def test_every_kind_is_asked_with_its_answer(self) -> None:
        """The answers are the value used, the constraint, the file, the error and its fix."""
        found = _at_end(_events())
        assert found["constraint"] == ["You must keep the public API unchanged."]
        assert found["file"] == ["src/parser.py"]
        assert found["tool_value"] == ["parse_tokens_v2"]
        assert found["last_error"] == ["FAILED test_parse: KeyError 'token'"]
        assert found["resolution"] == ["12 passed in 0.31s"]
        assert found["next_step"] == ["Done: all tests pass now."]
        assert found["test_summary"] == ["12 passed in 0.31s"]

    def test_the_latest_test_summary_is_asked_failing_or_not(self) -> None:
        """`test_summary`: the runner's summary line of the newest test run, a failing
        run's too, replaced by the next run's and asked at the calls after it."""
        events = [
            SystemPrompt(content="You fix bugs."),
            UserTurn(content="Fix the parser."),
            AssistantTurn(content="Testing.", tool_calls=[ToolCall(id="t1", name="bash")]),
            ToolResult(
                call_id="t1",
                content="F.\n----\nRan 2 tests in 0.104s\n\nFAILED (failures=1)\n",
                is_error=True,
            ),
            AssistantTurn(content="Patching.", tool_calls=[ToolCall(id="t2", name="bash")]),
            ToolResult(call_id="t2", content="patched src/parser.py\n"),
            AssistantTurn(content="Again.", tool_calls=[ToolCall(id="t3", name="bash")]),
            ToolResult(call_id="t3", content="..\n----\nRan 2 tests in 0.099s\n\nOK\n"),
        ]
        asked = probes(events, frozenset({4, 6, len(events)}))

        def summaries(call: int) -> list[str]:
            return [p.answer for p in asked.at_call[call] if p.kind == "test_summary"]

        assert summaries(4) == ["FAILED (failures=1)"]
        assert summaries(6) == ["FAILED (failures=1)"]
        assert summaries(len(events)) == ["Ran 2 tests in 0.099s"]

    def test_the_text_an_edit_replaces_is_asked_at_the_call_it_answers(self) -> None:
        """`edit_text`: the longest line of an edit's old text, at the call whose answer
        makes the edit and at no other (the agent wrote it from that request)."""
        old = "def parse(tokens):\n    return lookup[tokens[0]]\n"
        edit = {"path": "src/parser.py", "old_str": old, "new_str": "def parse(t):\n"}
        multi = {"edits": [{"old_string": "    x = 1  # the counter"}, {"old_string": "y"}]}
        events: list[AgentEvent] = [
            UserTurn(content="Fix the parser."),
            AssistantTurn(content="Reading.", tool_calls=[ToolCall(id="r", name="read")]),
            ToolResult(call_id="r", content=old),
            AssistantTurn(
                content="Editing.",
                tool_calls=[
                    ToolCall(id="e", name="str_replace_editor", arguments=json.dumps(edit))
                ],
            ),
            ToolResult(call_id="e", content="edited"),
            AssistantTurn(
                content="Again.",
                tool_calls=[ToolCall(id="m", name="MultiEdit", arguments=json.dumps(multi))],
            ),
            ToolResult(call_id="m", content="edited"),
        ]
        asked = probes(events, frozenset({1, 3, 5, 7}))

        def edits(call: int) -> list[str]:
            return [p.answer for p in asked.at_call[call] if p.kind == "edit_text"]

        assert edits(3) == ["return lookup[tokens[0]]"]
        assert edits(5) == ["x = 1  # the counter"]  # "y" is too short to ask
        assert edits(1) == edits(7) == []

    def test_a_sentence_that_gives_a_reason_is_asked_from_then_on(self) -> None:
        """`reason`: a sentence of the agent's text that says why (a cause it found, the
        reason for a choice), asked at every call after it; a fragment is not asked."""
        events: list[AgentEvent] = [
            UserTurn(content="Fix the parser."),
            AssistantTurn(
                content="The lookup fails because the token map is built lazily. Reading.\n"
                "Because of it.",
                tool_calls=[ToolCall(id="r", name="read")],
            ),
            ToolResult(call_id="r", content="x = 1\n"),
            AssistantTurn(content="I patch it so that the map exists before the first call."),
        ]
        asked = probes(events, frozenset({1, 3, len(events)}))

        def reasons(call: int) -> list[str]:
            return [p.answer for p in asked.at_call[call] if p.kind == "reason"]

        assert reasons(1) == []
        assert reasons(3) == ["The lookup fails because the token map is built lazily."]
        assert reasons(len(events)) == [
            "The lookup fails because the token map is built lazily.",
            "I patch it so that the map exists before the first call.",
        ]

    @settings(max_examples=60, deadline=None)
    @given(
        arguments=st.text(max_size=80)
        | st.dictionaries(st.sampled_from(["old_str", "old_string", "old_text", "path"]), st.text())
    )
    def test_any_arguments_give_lines_of_their_old_text_or_nothing(
        self, arguments: str | dict[str, str]
    ) -> None:
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        for line in edited_lines(text):
            assert len(line) >= 8 and line == line.strip()
            assert isinstance(arguments, dict)
            assert any(line[:40] in value for value in arguments.values())

    def test_a_value_the_user_gave_is_not_a_tool_value(self) -> None:
        """An entity the user or system prompt showed first is not the tool's finding."""
        found = _at_end(_events())
        assert "acme/widgets" not in found["tool_value"]

    def test_a_value_is_asked_only_once_the_agent_used_it(self) -> None:
        """Before the assistant names it, the tool's value is not a probe."""
        events = _events()
        asked = probes(events, frozenset({4, len(events)}))
        assert not [p for p in asked.at_call[4] if p.kind == "tool_value"]

    def test_a_recorded_compaction_ends_earlier_probes(self) -> None:
        """After another tool's compaction only what came after it is asked."""
        events = [*_events(), Compaction(content="Summary."), UserTurn(content="Go on now.")]
        found = _at_end(events)
        assert found.pop("instruction") == ["Go on now."]
        assert all(not answers for answers in found.values())

    def test_the_error_line_is_asked_not_its_exit_status_wrapper(self) -> None:
        """`last_error` is the line naming the error, past `<returncode>` and `Exit code`."""
        events = _events()
        events[5] = ToolResult(
            call_id="c2",
            content="<returncode>1</returncode>\n<output>\nExit code 1\n"
            "E   ModuleNotFoundError: No module named 'yaml'\n</output>",
            is_error=True,
        )
        found = _at_end(events)
        assert found["last_error"] == ["E   ModuleNotFoundError: No module named 'yaml'"]

    def test_a_traceback_is_asked_by_its_exception_not_its_header(self) -> None:
        events = _events()
        events[5] = ToolResult(
            call_id="c2",
            content='Traceback (most recent call last):\n  File "run.py", line 3, in <module>\n'
            "    main()\nKeyError: 'user_id'",
            is_error=True,
        )
        assert _at_end(events)["last_error"] == ["KeyError: 'user_id'"]

    def test_a_traceback_is_asked_by_its_exception_not_a_frame_naming_an_error(self) -> None:
        """A frame's source line (`raise source.error(...)`) names an error too; the
        exception raised is the line the traceback ends with."""
        events = _events()
        events[5] = ToolResult(
            call_id="c2",
            content="Traceback (most recent call last):\n"
            '  File "fix.py", line 6, in <module>\n'
            "    content = re.sub(pattern, repl, content)\n"
            '  File "/usr/lib/python3.11/re/_parser.py", line 865, in _parse\n'
            '    raise source.error("missing ), unterminated subpattern",\n'
            "re.error: missing ), unterminated subpattern at position 0",
            is_error=True,
        )
        found = _at_end(events)
        assert found["last_error"] == ["re.error: missing ), unterminated subpattern at position 0"]

    def test_a_chained_traceback_is_asked_by_the_exception_raised_last(self) -> None:
        events = _events()
        events[5] = ToolResult(
            call_id="c2",
            content="Traceback (most recent call last):\n"
            '  File "base.py", line 82, in _execute\n'
            "    return self.cursor.execute(sql)\n"
            "sqlite3.OperationalError: no such table: django_content_type\n\n"
            "The above exception was the direct cause of the following exception:\n\n"
            "Traceback (most recent call last):\n"
            '  File "test_fix.py", line 9, in <module>\n'
            "    run()\n"
            "django.db.utils.OperationalError: no such table: django_content_type",
            is_error=True,
        )
        found = _at_end(events)
        assert found["last_error"] == [
            "django.db.utils.OperationalError: no such table: django_content_type"
        ]

    def test_a_traceback_is_asked_by_its_exception_whatever_its_name(self) -> None:
        """`ImproperlyConfigured` does not end in `Error`: it is still the line the frames
        end with, and a frame's source line naming `failures` is not asked."""
        events = _events()
        events[5] = ToolResult(
            call_id="c2",
            content="<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n"
            '  File "/testbed/django/core/management/commands/test.py", line 53, in handle\n'
            "    failures = test_runner.run_tests(test_labels)\n"
            "               ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            '  File "/testbed/django/conf/__init__.py", line 58, in _setup\n'
            "    raise ImproperlyConfigured(\n"
            "django.core.exceptions.ImproperlyConfigured: Requested setting ALLOWED_HOSTS\n"
            "</output>",
            is_error=True,
        )
        found = _at_end(events)
        assert found["last_error"] == [
            "django.core.exceptions.ImproperlyConfigured: Requested setting ALLOWED_HOSTS"
        ]

    def test_a_newer_error_ends_the_older_errors_resolution(self) -> None:
        """The resolution answered the error before; once another error is the last one,
        its resolution is no longer asked (the new error is, with its own fix later)."""
        events = [
            *_events()[:-1],
            AssistantTurn(
                content="Linting.",
                tool_calls=[ToolCall(id="c4", name="lint", arguments='{"cmd": "ruff ."}')],
            ),
            ToolResult(call_id="c4", content="E501 line too long in src/parser.py", is_error=True),
        ]
        found = _at_end(events)
        assert found["last_error"] == ["E501 line too long in src/parser.py"]
        assert found["resolution"] == []

    def test_an_error_of_wrappers_alone_is_not_asked(self) -> None:
        """A command that failed with no output has no line to ask for; it ends the older."""
        events = _events()
        events[5] = ToolResult(call_id="c2", content="<returncode>1</returncode>", is_error=True)
        assert _at_end(events)["last_error"] == []

    def test_an_old_error_is_no_longer_asked(self) -> None:
        """After STALE_AFTER more tool results the last error and its resolution end."""
        events = _events()
        for n in range(STALE_AFTER):
            events += [
                AssistantTurn(
                    content="Again.", tool_calls=[ToolCall(id=f"x{n}", name="ls", arguments="{}")]
                ),
                ToolResult(call_id=f"x{n}", content="listing of the tree"),
            ]
        found = _at_end(events)
        assert found["last_error"] == [] and found["resolution"] == []

    def test_a_rule_with_its_value_and_the_latest_instruction(self) -> None:
        """A binding or limiting sentence with a number is asked whole; so is the last message."""
        events: list[AgentEvent] = [
            UserTurn(content="HARD CONSTRAINT: the budget cap is $500 total. Be quick."),
            AssistantTurn(content="Understood."),
            UserTurn(content="Now summarize the invoices table."),
        ]
        found = _at_end(events)
        assert found["constraint_value"] == ["HARD CONSTRAINT: the budget cap is $500 total."]
        assert found["instruction"] == ["Now summarize the invoices table."]

    def test_probes_that_roll_are_not_capped(self) -> None:
        """`next_step` is still asked after more than LIMIT assistant turns."""
        events: list[AgentEvent] = [UserTurn(content="Work through the list.")]
        events += [AssistantTurn(content=f"Item {n} done; next item.") for n in range(LIMIT + 5)]
        found = _at_end(events)
        assert found["next_step"] == [f"Item {LIMIT + 4} done; next item."]

    def test_short_answers_and_the_limit(self) -> None:
        """Answers under 8 characters are not asked; at most LIMIT of a kind are made."""
        many = " ".join(f"You must keep flag_{i:03d} set." for i in range(LIMIT + 5))
        events: list[AgentEvent] = [UserTurn(content=many + " Never x.")]
        found = _at_end(events)
        assert len(found["constraint"]) == LIMIT
        assert "Never x." not in found["constraint"]

    @settings(max_examples=40, deadline=None)
    @given(st.lists(st.sampled_from(range(9)), min_size=1, max_size=30))
    def test_probes_are_deterministic_and_answers_occur_in_the_session(
        self, picks: list[int]
    ) -> None:
        """The same events ask the same probes, and every answer is text of the session."""
        base = _events()
        events = [base[i] for i in picks]
        calls = frozenset(model_call_points(events))
        first, second = probes(events, calls), probes(events, calls)
        assert first == second
        texts = [repr(e.model_dump()) for e in events]
        for answer in first.universe:
            assert len(answer) >= 8
            assert any(answer in text or answer.replace("'", "\\'") in text for text in texts)


class _Sends:
    """Sends a fixed body, answering some of the probes."""

    def __init__(self, body: dict[str, Any]) -> None:
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


class TestScoring:
    """A call passes the probes whose answers are in its request."""

    def test_recall_counts_answers_present_in_the_request(self) -> None:
        """Only the constraint and the file are in the body: those two kinds pass."""
        events = _events()
        session = Session.made(events)
        body = {
            "messages": [
                {"role": "user", "content": "You must keep the public API unchanged."},
                {"role": "user", "content": "see src/parser.py"},
            ]
        }

        def make(budget: int, counter: TokenCounter) -> _Sends:
            return _Sends(body)

        spec = ContenderSpec(name="sends", family="test", make=make, settings="")
        counter = TiktokenCounter()
        run = replay(spec, setup(session, counter), "50%", 10_000, counter, memory=False)
        recall = dict(zip(PROBE_KINDS, probe_recall([run], "sends", "50%"), strict=True))
        calls = len(session.calls)
        assert recall["constraint"] == (calls, calls, 0)
        assert recall["file"][1] == recall["file"][0] > 0
        assert recall["last_error"][0] > 0 and recall["last_error"][1] == 0
        assert recall["next_step"][1] == 0
        assert all(back == 0 for _, _, back in recall.values())
        table = probe_table([run], ["sends", "absent"], "50%")
        sends, absent = table.splitlines()[2:]
        assert sends.startswith("| sends | 0.000 | 1.000 | - | 1.000 | 0.000 |")
        assert absent == "| absent |" + " - |" * (len(PROBE_KINDS) + 2)  # + reference, in context

    def test_an_answer_one_expand_away_is_recoverable(self) -> None:
        """A missing answer inside what a named id expands to counts as recoverable."""
        events = _events()
        session = Session.made(events)
        body = {"messages": [{"role": "user", "content": "[call context_expand with id n1]"}]}

        class Expands(_Sends):
            def expansions(self, native: Any) -> dict[str, str]:
                return {"n1": "FAILED test_parse: KeyError 'token'\nFix the parser."}

        def make(budget: int, counter: TokenCounter) -> Expands:
            return Expands(body)

        spec = ContenderSpec(name="expands", family="test", make=make, settings="")
        counter = TiktokenCounter()
        run = replay(spec, setup(session, counter), "50%", 10_000, counter, memory=False)
        recall = dict(zip(PROBE_KINDS, probe_recall([run], "expands", "50%"), strict=True))
        active, passed, back = recall["last_error"]
        assert active > 0 and passed == 0 and back == active
        assert recall["constraint"][2] == 0
        reference, kept, recoverable = reach([run], "expands", "50%")
        assert kept == 0 and 0 < recoverable <= reference
        row = probe_table([run], ["expands"], "50%").splitlines()[-1]
        assert " 0.000 + 1.000 " in row


class TestWithinBudget:
    def test_a_request_over_the_budget_passes_no_probe(self) -> None:
        """The same request passes its probes under a budget it fits and none over one
        it exceeds: a peer that overruns the budget does not score what it overran with."""
        session = Session.made(_events())
        body = {
            "messages": [{"role": "user", "content": "You must keep the public API unchanged."}]
        }

        def make(budget: int, counter: TokenCounter) -> _Sends:
            return _Sends(body)

        spec = ContenderSpec(name="sends", family="test", make=make, settings="")
        counter = TiktokenCounter()
        ctx = setup(session, counter)
        fits = replay(spec, ctx, "50%", 10_000, counter, memory=False)
        over = replay(spec, ctx, "50%", 3, counter, memory=False)
        assert all(row.over_budget for row in over.rows)
        index = PROBE_KINDS.index("constraint")
        active, passed, _ = probe_recall([fits], "sends", "50%")[index]
        assert active > 0 and passed == active
        assert probe_recall([over], "sends", "50%")[index] == (active, 0, 0)

    def test_the_quick_table_shows_the_same_shares_and_the_overrun(self) -> None:
        """`benchmarks.probes_quick.table`: one row per contender, the probe shares as the
        page computes them, and the calls over the budget counted."""
        from benchmarks.probes_quick import table

        session = Session.made(_events())
        body = {
            "messages": [{"role": "user", "content": "You must keep the public API unchanged."}]
        }
        spec = ContenderSpec(
            name="sends", family="test", make=lambda b, c: _Sends(body), settings=""
        )
        counter = TiktokenCounter()
        over = replay(spec, setup(session, counter), "50%", 3, counter, memory=False)
        head, _, row = table([over], ["sends"], "50%").splitlines()
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        columns = [cell.strip() for cell in head.strip("|").split("|")]
        assert len(cells) == len(columns) and columns[-1] == "over budget"
        assert cells[columns.index("constraint")] == "0.000"
        assert cells[-1] == str(len(session.calls))


class TestProbesQuickCommand:
    def test_the_policy_is_named_by_policy(self) -> None:
        """`--policy` names the policy (`coding` when left out)."""
        from benchmarks.probes_quick import parser

        assert parser().parse_args(["--policy", "service"]).policy == "service"
        assert parser().parse_args([]).policy == "coding"

    def test_the_deprecated_spelling_is_refused(self, capsys: pytest.CaptureFixture[str]) -> None:
        """`--profile`, the CLI's deprecated spelling, is not this script's flag."""
        from benchmarks.probes_quick import parser

        with pytest.raises(SystemExit):
            parser().parse_args(["--profile", "service"])
        assert "--profile" in capsys.readouterr().err

    def test_compact_to_takes_shares_of_the_budget(self) -> None:
        """`--compact-to` takes one or more shares in (0, 1]; anything else is refused."""
        from benchmarks.probes_quick import parser

        assert parser().parse_args(["--compact-to", "0.5", "0.7"]).compact_to == [0.5, 0.7]
        assert parser().parse_args([]).compact_to is None
        for bad in ("0", "1.5", "nan", "half", "-0.2"):
            with pytest.raises(SystemExit):
                parser().parse_args(["--compact-to", bad])

    def test_a_request_after_compaction_takes_text(self) -> None:
        """`--request-after-compaction` takes the request's text; a blank one is refused."""
        from benchmarks.probes_quick import parser

        made = parser().parse_args(["--request-after-compaction", "Go on."])
        assert made.request_after_compaction == "Go on."
        assert parser().parse_args([]).request_after_compaction is None
        for bad in ("", "   "):
            with pytest.raises(SystemExit):
                parser().parse_args(["--request-after-compaction", bad])

    def test_a_continued_session_gets_its_request(self) -> None:
        """The request goes right after each imported compaction; the session's calls and
        raw size are those of the new events; a session with no compaction gives None."""
        from benchmarks.compare.sessions import continued_by_request

        loop: list[AgentEvent] = []
        for n in range(3):
            loop.append(
                AssistantTurn(content=f"Step {n}.", tool_calls=[ToolCall(id=f"c{n}", name="ls")])
            )
            loop.append(ToolResult(call_id=f"c{n}", content=f"out {n}"))
        summary = Compaction(content="The user asked for X; a.py was fixed.", origin="claude_code")
        session = Session.made([SystemPrompt(content="Be brief."), summary, *loop], raw_tokens=1)
        continued = continued_by_request(session, "Now do Y.")
        assert continued is not None and continued.label == "made +request"
        events = continued.events
        at = events.index(summary)
        assert (
            isinstance(events[at + 1], UserTurn) and events[at + 1].content[0].text == "Now do Y."
        )
        assert events[: at + 1] + events[at + 2 :] == session.events
        assert continued.calls == frozenset(model_call_points(events))
        assert continued.raw_tokens > 1
        assert continued_by_request(Session.made(loop), "Now do Y.") is None

    def test_a_lower_mark_lands_compaction_lower(self) -> None:
        """Each `--compact-to` row replays the policy with that low-water mark: the lower
        one sends less at the compacted calls, and compacts no more often."""
        from benchmarks.compare.stats import summarize
        from benchmarks.probes_quick import _spec

        events: list[AgentEvent] = [
            SystemPrompt(content="You fix bugs in repo acme/widgets."),
            UserTurn(content="Fix the parser; run the tests after each change."),
        ]
        for n in range(40):
            call = f"c{n}"
            events.append(
                AssistantTurn(
                    content=f"Step {n}.",
                    tool_calls=[ToolCall(id=call, name="bash", arguments='{"cmd": "pytest"}')],
                )
            )
            lines = "\n".join(f"test_{n}_{j} PASSED value={n * j}" for j in range(25))
            events.append(ToolResult(call_id=call, content=lines))
        session = Session.made(events)
        counter = TiktokenCounter()
        figures = {}
        for mark in (0.4, 0.9):
            spec = _spec("coding", mark)
            assert spec.name == f"context-graph coding compact_to={mark:g}"
            run = replay(spec, setup(session, counter), "8k", 4_000, counter, memory=False)
            figures[mark] = summarize([run], spec.name, "8k")
        low, high = figures[0.4], figures[0.9]
        assert low.fill is not None and high.fill is not None and low.fill < high.fill
        assert low.prefix_stability is not None and high.prefix_stability is not None
        assert low.prefix_stability >= high.prefix_stability
