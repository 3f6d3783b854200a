"""The brief's sections (issue 31, Build 1) and the lineage of each of its lines.

Decisions come with the reason the assistant gave; open questions are those the other
party has not answered since, across rolling updates too; the plan is the agent's latest
todo list. Every line of a committed summary records the nodes it came from.
"""

from __future__ import annotations

from typing import Any

from context_graph import ContextGraph
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.testing import WordCounter
from processors.base import Abstract, ProcessorContext
from processors.summarize import HistorySummarizer
from processors.summarize.adapters import SYSTEM_PROMPT
from processors.summarize.brief import parse
from processors.summarize.extractive import ExtractiveSummarizer
from processors.summarize.lineage import LINE_SOURCES, sources_of
from processors.summarize.turns import decisions_with_reasons, latest_plan, question_sentences


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def _session() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user("Migrate the billing service to the new ledger.")
    graph.add_user("Skip the invoices table. Should we keep the v1 endpoints?")
    graph.add_assistant(
        "I'll use SQLite for the job queue. It needs no server, so the tests stay local. "
        "Which port does the staging database listen on?",
        tool_calls=[
            _call(
                "t1",
                "TodoWrite",
                todos=[
                    {"content": "Port the schema", "status": "completed"},
                    {"content": "Move the nightly job", "status": "in_progress"},
                ],
            )
        ],
    )
    graph.add_tool_result("t1", "Todos have been modified successfully.")
    graph.add_assistant(tool_calls=[_call("b1", "bash", command="pytest -x tests/test_ledger.py")])
    collected = "".join(f"tests/test_ledger.py::test_case_{n} PASSED\n" for n in range(300))
    graph.add_tool_result("b1", f"<returncode>1</returncode>\n{collected}E   KeyError: 'ledger_id'")
    graph.add_user("Ändere niemals die Datei config/prod.yaml.")
    graph.add_assistant("Noted; the file stays as it is. Should I drop the v1 tables now?")
    return graph


def _nodes(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript()]


def _section(text: str, heading: str) -> list[str]:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(f"## {heading}"))
    body = []
    for line in lines[start + 1 :]:
        if line.startswith("## "):
            break
        if line.strip():
            body.append(line)
    return body


class TestSections:
    def test_decisions_carry_their_reason(self) -> None:
        text = ExtractiveSummarizer().brief(_nodes(_session()))
        assert _section(text, "Decisions made and why") == [
            "- I'll use SQLite for the job queue. It needs no server, so the tests stay local."
        ]

    def test_a_cause_the_agent_found_is_kept_verbatim(self) -> None:
        """A sentence that says why something happens is the diagnosis the decisions
        after it rest on: it is kept whole, though it decides nothing."""
        graph = _session()
        graph.add_assistant(
            "The test fails because the ledger id is read before the row exists. Checking."
        )
        text = ExtractiveSummarizer().brief(_nodes(graph))
        assert _section(text, "Decisions made and why") == [
            "- I'll use SQLite for the job queue. It needs no server, so the tests stay local.",
            "- The test fails because the ledger id is read before the row exists.",
        ]

    def test_a_decision_s_reason_is_not_kept_twice(self) -> None:
        """The sentence after a decision that gives its reason is joined to it, and not
        listed again on its own though it states a cause."""
        said = "I'll retry the call. It fails because the socket closes. Then I test."
        assert decisions_with_reasons(said) == [
            "I'll retry the call. It fails because the socket closes."
        ]

    def test_causes_are_read_in_other_languages_and_not_from_weak_words(self) -> None:
        """`weil`, `porque`, `parce que`, 因为 state a cause; `since` or `otherwise` alone
        join a decision's reason but do not make a sentence a cause."""
        assert decisions_with_reasons("Der Test schlägt fehl, weil die Datei fehlt.") == [
            "Der Test schlägt fehl, weil die Datei fehlt."
        ]
        assert decisions_with_reasons("It has worked since Tuesday. Otherwise fine.") == []

    def test_instead_decides_only_beside_a_verb_of_choosing(self) -> None:
        """The words "instead" and "rather than" that only observe what the code does are no
        decision (django's trace: "But instead, it seems like the distinct is being
        ignored" was listed as one); beside a verb of choosing they are."""
        observed = (
            "But instead, it seems like the distinct is being ignored. "
            "It returns a list rather than a tuple."
        )
        assert decisions_with_reasons(observed) == []
        chosen = (
            "Use a subquery instead. Rather than patching the test, try the fixture. "
            "Instead of the regex, I'll use shlex."
        )
        assert decisions_with_reasons(chosen) == [
            "Use a subquery instead.",
            "Rather than patching the test, try the fixture.",
            "Instead of the regex, I'll use shlex.",
        ]

    def test_open_questions_are_those_not_answered_later(self) -> None:
        """The user's question was answered by the assistant's text after it, and the
        assistant's port question by the user's next message; its last one is open."""
        text = ExtractiveSummarizer().brief(_nodes(_session()))
        assert _section(text, "Open questions") == [
            "- the assistant asked: Should I drop the v1 tables now?"
        ]

    def test_a_later_reply_closes_a_question_of_an_earlier_brief(self) -> None:
        graph = _session()
        first = ExtractiveSummarizer().brief(_nodes(graph))
        graph.add_user("Yes, drop them.")
        later = [graph[i] for i in graph.transcript()][-1:]
        updated = ExtractiveSummarizer().brief(later, previous=first)
        assert "Open questions" not in updated
        parsed = parse(first)
        assert parsed is not None and parsed.questions

    def test_the_plan_is_the_latest_todo_list_and_not_a_command(self) -> None:
        text = ExtractiveSummarizer().brief(_nodes(_session()))
        assert _section(text, "Plan") == [
            "- [completed] Port the schema",
            "- [in_progress] Move the nightly job",
        ]
        assert "TodoWrite" not in text

    def test_codex_and_gemini_todo_tools_are_read_too(self) -> None:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Go.")
        graph.add_assistant(
            tool_calls=[_call("p1", "update_plan", plan=[{"step": "Read", "status": "done"}])]
        )
        graph.add_tool_result("p1", "Plan updated")
        graph.add_assistant(
            tool_calls=[
                _call("p2", "write_todos", todos=[{"description": "Fix", "status": "pending"}])
            ]
        )
        graph.add_tool_result("p2", "ok")
        assert latest_plan(_nodes(graph)) == ["[pending] Fix"]

    def test_questions_and_decisions_in_other_languages(self) -> None:
        asked = "Gut. Soll ich die Tabelle löschen? 好的。要删除吗\uff1f"
        assert question_sentences(asked) == ["Soll ich die Tabelle löschen?", "要删除吗\uff1f"]
        decided = "我决定改用 SQLite\uff0c因为它不需要服务器。"
        assert decisions_with_reasons(decided) == [decided]

    def test_what_is_read_again_is_a_list_of_its_own(self) -> None:
        """The sentences are memoized per text; a caller changing its list changes no later one."""
        text = "I'll use SQLite because it needs no server. Shall I drop the table?"
        decisions, questions = decisions_with_reasons(text), question_sentences(text)
        decisions.append("changed")
        questions.clear()
        assert decisions_with_reasons(text) == ["I'll use SQLite because it needs no server."]
        assert question_sentences(text) == ["Shall I drop the table?"]

    def test_briefs_of_the_earlier_format_are_read_back(self) -> None:
        old = "# Summary of the earlier conversation\n\n## Decisions\n- I'll keep v1."
        parsed = parse(old)
        assert parsed is not None and parsed.decisions == ["I'll keep v1."]

    def test_the_model_prompt_asks_for_the_same_sections(self) -> None:
        for heading in (
            "Decisions made and why",
            "Plan",
            "Latest test run",
            "Open questions",
            "Errors",
            "Files as the agent wrote them",
        ):
            assert heading in SYSTEM_PROMPT


class TestLineage:
    async def _summary(self, graph: ContextGraph, until_turn: int) -> SummaryNode:
        span = [graph[i] for i in graph.transcript() if 1 < graph[i].turn <= until_turn]
        proposal = await HistorySummarizer().propose(span, ProcessorContext.for_graph(graph))
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract)
        return edit.summary

    async def test_each_line_names_the_nodes_it_came_from(self) -> None:
        graph = _session()
        graph.add_user("Carry on.")
        summary = await self._summary(graph, 3)
        lines = summary.text.split("\n")

        def source_texts(fragment: str) -> list[str]:
            number = next(i for i, line in enumerate(lines, 1) if fragment in line)
            return [graph[i].text for i in sources_of(summary, number)]

        assert source_texts("Skip the invoices table.") == [
            "Skip the invoices table. Should we keep the v1 endpoints?"
        ]
        assert source_texts("Ändere niemals") == ["Ändere niemals die Datei config/prod.yaml."]
        assert "I'll use SQLite" in source_texts("I'll use SQLite")[0]
        command = source_texts("ran `pytest -x tests/test_ledger.py`")
        assert command[1].endswith("KeyError: 'ledger_id'")  # the call, then its output
        assert source_texts("[in_progress] Move the nightly job")[1].startswith("Todos have")
        headings = [i for i, line in enumerate(lines, 1) if line.startswith("#")]
        assert all(not sources_of(summary, i) for i in headings)
        assert all(
            str(i) in summary.meta[LINE_SOURCES]
            for i, line in enumerate(lines, 1)
            if line.startswith("- ")
        )

    async def test_a_line_carried_into_the_next_summary_keeps_its_origin(self) -> None:
        graph = _session()
        graph.add_user("Carry on.")
        graph.add_assistant("Carrying on with the nightly job.")
        graph.add_user("Done?")
        first = await self._summary(graph, 3)
        graph.add_derived(first)
        span = [first, *(graph[i] for i in graph.transcript() if graph[i].turn == 4)]
        proposal = await HistorySummarizer().propose(span, ProcessorContext.for_graph(graph))
        (edit,) = proposal.edits
        assert isinstance(edit, Abstract)
        second = edit.summary
        lines = second.text.split("\n")
        number = next(i for i, line in enumerate(lines, 1) if "Skip the invoices" in line)
        (source,) = sources_of(second, number)
        assert graph[source].text.startswith("Skip the invoices table.")
