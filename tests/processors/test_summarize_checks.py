from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.entities import critical_entities
from context_graph.graph.nodes import Node
from context_graph.testing import WordCounter
from processors.summarize.checks import (
    CandidateCheck,
    check_candidate,
    find_tool_call_syntax,
    required_entities,
    tool_names_of,
)


def _nodes(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript()]


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Fix ticket ABC-1234 in src/app/main.py before 2024-05-20.")
    graph.add_assistant(tool_calls=[{"id": "a", "name": "bash", "arguments": {"command": "make"}}])
    graph.add_tool_result("a", "make: *** [build] Error 2\nKeyError: 'user_id'", is_error=True)
    graph.add_assistant(tool_calls=[{"id": "b", "name": "lint", "arguments": {"path": "x"}}])
    graph.add_tool_result("b", "E501 line too long in config_loader.py", is_error=True)
    graph.add_assistant(tool_calls=[{"id": "c", "name": "lint", "arguments": {"path": "x"}}])
    graph.add_tool_result("c", "All checks passed!")  # an unknown outcome would resolve nothing
    return graph


class TestFindToolCallSyntax:
    @pytest.mark.parametrize(
        "text",
        [
            'bash(command="ls -la")',
            "- Read(file_path='/etc/hosts')",
            "  `str_replace_editor(command='view', path='a.py')`",
            "[Assistant tool call]: shell(ls)",
            "Tool call: run_tests({})",
            '{"name": "bash", "arguments": {"command": "ls"}}',
            '{"arguments": {"command": "ls"}, "name": "bash"}',
            '{"tool_calls": [{"id": "1"}]}',
            '{"type": "tool_use", "id": "toolu_1"}',
            '<tool_call>{"name": "bash"}</tool_call>',
            '<function_calls><invoke name="bash"></invoke></function_calls>',
            '<parameter name="command">ls</parameter>',
            "<function=bash>ls</function>",
            "<|python_tag|>run()",
            "[TOOL_CALLS] bash",
        ],
    )
    def test_call_syntax_is_found(self, text: str) -> None:
        """Function-call lines, labelled calls, JSON calls and tool tags are all caught."""
        summary = f"## Progress\nThe agent fixed the bug.\n{text}\nThen it stopped."
        assert find_tool_call_syntax(summary, ["run_tests"]) != []

    @pytest.mark.parametrize(
        "text",
        [
            "The agent called `parse_config()` to load settings and it failed.",
            "print(compute(1, 2))",
            "- ran `python -c 'print(1)'`: ok (exit 0)",
            "- used get_reservation_details with reservation_id 3RK2T9: ok",
            "The assistant used the tool `bash` with command: ls",
            'The config has {"name": "prod", "region": "eu"}.',
            "Use a <div> tag and an <input> field.",
            "Tool calls were made: 12 in total.",
        ],
    )
    def test_prose_and_plain_code_pass(self, text: str) -> None:
        """Prose about calls, code of non-tools and ordinary JSON or HTML are not flagged."""
        assert find_tool_call_syntax(text) == []

    def test_span_tool_names_are_checked(self) -> None:
        """A call line of a tool the span used is caught even if the name is uncommon."""
        line = "get_reservation_details(reservation_id='3RK2T9')"
        assert find_tool_call_syntax(line) == []
        assert find_tool_call_syntax(line, ["get_reservation_details"]) == [line]


class TestRequiredEntities:
    def test_user_turns_and_open_errors_count(self, graph: ContextGraph) -> None:
        """User-turn entities and open-error entities are required; resolved ones are not."""
        required = required_entities(_nodes(graph))
        assert {"ABC-1234", "src/app/main.py", "2024-05-20", "KeyError"} <= set(required)
        assert "config_loader.py" not in required  # that lint error was resolved

    def test_carried_entities_fill_the_room_left(self, graph: ContextGraph) -> None:
        """Entities carried from the previous summary come first while the limit allows."""
        fresh = required_entities(_nodes(graph))
        required = required_entities(_nodes(graph), carried=["OLD-1", "OLD-2"])
        assert required == ["OLD-1", "OLD-2", *fresh]
        capped = required_entities(_nodes(graph), carried=["OLD-1", "OLD-2"], limit=len(fresh) + 1)
        assert capped == ["OLD-1", *fresh]

    def test_limits_hold_on_a_huge_turn(self) -> None:
        """A pasted wall of identifiers is capped per turn and overall."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(" ".join(f"KEY-{n}" for n in range(1_000, 3_000)))
        graph.add_user("and TICKET-77")
        required = required_entities(_nodes(graph), per_turn=5, limit=6)
        assert required == ["KEY-1000", "KEY-1001", "KEY-1002", "KEY-1003", "KEY-1004", "TICKET-77"]

    def test_tool_names_are_collected(self, graph: ContextGraph) -> None:
        """The span's tool names are listed once each, in order."""
        assert tool_names_of(_nodes(graph)) == ["bash", "lint"]


class TestCheckCandidate:
    def test_good_candidate_passes(self) -> None:
        """A short candidate with every required entity is accepted."""
        check = check_candidate("Fix ABC-1234 in a.py.", tokens=4, limit=100, required=["ABC-1234"])
        assert check.ok
        assert check.reason() == ""

    def test_garbled_identifier_is_refused_and_named(self) -> None:
        """`ABC-1234` turned into `ABC-1243` is a missing entity, named in the retry."""
        check = check_candidate("Fix ABC-1243.", tokens=2, limit=100, required=["ABC-1234"])
        assert not check.ok
        assert check.missing == ("ABC-1234",)
        assert "ABC-1234" in check.retry_instructions()
        assert "dropped ABC-1234" in check.reason()

    def test_not_shorter_is_refused(self) -> None:
        """A candidate as long as what it replaces is refused."""
        check = check_candidate("x", tokens=10, limit=10)
        assert check.too_long and not check.ok
        assert "10" in check.retry_instructions()

    def test_pinned_facts_must_be_verbatim(self) -> None:
        """A pinned fact that is paraphrased counts as dropped."""
        fact = "deploys go through staging first"
        check = check_candidate("Deploy via staging.", tokens=3, limit=50, facts=[fact])
        assert check.missing == (fact,)

    def test_tool_syntax_and_empty_are_refused(self) -> None:
        """Tool-call syntax and blank candidates are refused with their reasons."""
        called = check_candidate('bash(command="rm -rf /")', tokens=3, limit=50)
        assert called.tool_syntax and "tool-call syntax" in called.reason()
        assert "prose" in called.retry_instructions()
        blank = check_candidate("  \n", tokens=0, limit=50)
        assert blank.empty and blank.reason() == "empty"

    def test_unicode_entities_survive(self) -> None:
        """Entities next to emoji and other scripts are matched exactly."""
        text = "Ticket ABC-1234 ✅ für den Kunden 東京; see src/ü/app.py 🚀"
        required = critical_entities(text)
        assert check_candidate(text, tokens=1, limit=99, required=required).ok

    @given(
        words=st.lists(st.from_regex(r"[A-Z]{2,4}-\d{2,5}", fullmatch=True), max_size=8),
        filler=st.text(max_size=80),
    )
    def test_ok_means_every_rule_holds(self, words: list[str], filler: str) -> None:
        """Whenever a check passes, the text is shorter and holds every required entity."""
        text = filler + " " + " ".join(words)
        check = check_candidate(text, tokens=len(text.split()), limit=200, required=words)
        if check.ok:
            assert check.tokens < check.limit
            assert all(w in text for w in words)
            assert find_tool_call_syntax(text) == []
        else:
            assert isinstance(check, CandidateCheck) and check.reason()

    def test_json_summary_without_a_call_is_fine(self) -> None:
        """A JSON value in a summary is not a tool call unless it names one with arguments."""
        text = json.dumps({"name": "prod", "size": 3})
        assert check_candidate(text, tokens=3, limit=50).ok
