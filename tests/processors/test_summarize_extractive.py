from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph
from context_graph.graph.content import ImagePart, TextPart
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.testing import WordCounter
from processors.summarize.brief import TITLE, parse, render
from processors.summarize.checks import find_tool_call_syntax, tool_names_of
from processors.summarize.extractive import ExtractiveSummarizer

REQUEST = (
    "Fix ticket ABC-1234 in src/app/main.py. You must never touch the prod database. "
    "Please keep the public API stable."
)


def _call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "name": name, "arguments": arguments}


def build_session() -> ContextGraph:
    """A small coding session: read, a failing test, an edit, a passing test."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("You are a coding agent.")
    graph.add_user(REQUEST)
    graph.add_assistant(
        "I'll start by reading the module.",
        tool_calls=[_call("c1", "Read", file_path="src/app/main.py")],
    )
    graph.add_file_read("src/app/main.py", "def main():\n    return 1\n", call_id="c1")
    graph.add_assistant(tool_calls=[_call("c2", "bash", command="pytest -x tests/test_main.py")])
    graph.add_tool_result(
        "c2",
        "<returncode>1</returncode>\n<output>E   AssertionError: expected 2, got 1\n</output>",
    )
    graph.add_assistant(
        "I decided to return 2 instead of 1.",
        tool_calls=[
            _call("c3", "Edit", file_path="src/app/main.py", old_string="1", new_string="2")
        ],
    )
    graph.add_tool_result("c3", "The file src/app/main.py has been updated.")
    graph.add_assistant(tool_calls=[_call("c4", "bash", command="pytest -x tests/test_main.py")])
    graph.add_tool_result("c4", "<returncode>0</returncode>\n<output>1 passed</output>")
    graph.add_assistant(tool_calls=[_call("c5", "bash", command="make deploy")])
    graph.add_tool_result(
        "c5", "Traceback (most recent call last):\nKeyError: 'DEPLOY_TOKEN'", is_error=True
    )
    graph.add_user("Don't deploy today. Update CHANGELOG.md for release v2.3.1 instead.")
    graph.add_assistant("Next I will edit CHANGELOG.md and stop there.")
    return graph


def _nodes(graph: ContextGraph) -> list[Node]:
    return [graph[i] for i in graph.transcript()]


def _section(text: str, heading: str) -> str:
    """The body of one `## heading` section of a brief."""
    start = text.index(f"## {heading}")
    body = text[start:].split("\n", 1)[1]
    return body.split("\n## ", 1)[0]


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    return build_session()


@pytest.fixture(name="summarizer")
def summarizer_fixture() -> ExtractiveSummarizer:
    return ExtractiveSummarizer(counter=WordCounter())


class TestOptions:
    @pytest.mark.parametrize(
        "options",
        [
            {"max_tokens": 10},
            {"max_tokens": "big"},
            {"max_items": 0},
            {"entities_per_turn": -1},
            {"max_tokens": True},
            {"counter": object()},
        ],
    )
    def test_bad_options_are_refused(self, options: dict[str, Any]) -> None:
        """Each bad option raises ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="ExtractiveSummarizer"):
            ExtractiveSummarizer(**options)


class TestBrief:
    def test_goal_is_the_first_request_verbatim(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """The goal section quotes the first user turn exactly."""
        text = summarizer.brief(_nodes(graph))
        assert text.startswith(TITLE)
        assert _section(text, "Goal: the user's first request, verbatim").strip() == REQUEST

    def test_later_user_messages_are_quoted_whole(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """A later user turn is kept word for word, every sentence of it."""
        section = _section(summarizer.brief(_nodes(graph)), "User messages")
        assert "- Don't deploy today. Update CHANGELOG.md for release v2.3.1 instead." in section

    def test_decisions_files_commands_and_errors(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """Decisions, modified files, outcomes, and open vs resolved errors are listed."""
        text = summarizer.brief(_nodes(graph))
        assert "I decided to return 2 instead of 1." in _section(text, "Decisions")
        assert "- src/app/main.py" in _section(text, "Files modified")
        assert "## Files read" not in text  # read, then modified: listed once, as modified
        commands = _section(text, "Commands and tool use")
        assert (
            "ran `pytest -x tests/test_main.py`: failed (exit 1); "
            "output of `bash`: `E AssertionError: expected 2, got 1`"
        ) in commands
        # The newest test run stands in a section of its own, not among the commands.
        latest = "ran `pytest -x tests/test_main.py`: ok (exit 0, 1 passed)"
        assert latest not in commands
        assert latest in _section(text, "Latest test run")
        errors = _section(text, "Errors")
        assert "[resolved] `pytest -x tests/test_main.py`" in errors
        assert "[open] `make deploy`: output of `bash`: `KeyError: 'DEPLOY_TOKEN'`" in errors

    def test_identifiers_and_state(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """User-turn and open-error entities are listed; the state is the last assistant text."""
        text = summarizer.brief(_nodes(graph))
        lines = _section(text, "Key identifiers").strip().split("\n")
        user = {"ABC-1234", "src/app/main.py", "CHANGELOG.md", "v2.3.1"}
        assert user <= set(lines[0].split(", "))
        assert lines[1].startswith("From tool output: ")
        assert "`KeyError`" in lines[1].split(": ", 1)[1].split(", ")
        state = _section(text, "Current state and next step").strip()
        assert state == "Next I will edit CHANGELOG.md and stop there."

    def test_no_tool_call_syntax(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """Calls are described in prose, never imitated."""
        nodes = _nodes(graph)
        text = summarizer.brief(nodes)
        assert find_tool_call_syntax(text, tool_names_of(nodes)) == []
        assert "Read(" not in text and '"arguments"' not in text

    def test_other_tools_are_described(self, summarizer: ExtractiveSummarizer) -> None:
        """A non-shell tool is named with its scalar arguments and its outcome."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Cancel reservation 3RK2T9.")
        graph.add_assistant(tool_calls=[_call("x", "cancel_reservation", reservation_id="3RK2T9")])
        graph.add_tool_result("x", "Error: reservation is not refundable", is_error=True)
        text = summarizer.brief(_nodes(graph))
        assert "used cancel_reservation with reservation_id 3RK2T9: failed" in text
        assert (
            "[open] `cancel_reservation`: "
            "output of `cancel_reservation`: `Error: reservation is not refundable`"
        ) in text

    @pytest.mark.parametrize(
        ("name", "arguments", "read", "modified"),
        [
            ("str_replace_editor", {"command": "view", "path": "/r/a.py"}, ["/r/a.py"], []),
            ("str_replace_editor", {"command": "create", "path": "/r/b.py"}, [], ["/r/b.py"]),
            ("Write", {"file_path": "notes.md", "content": "x"}, [], ["notes.md"]),
            ("apply_patch", {"path": "lib/x.go"}, [], ["lib/x.go"]),
            ("bash", {"command": "cat src/a.py | grep foo"}, ["src/a.py"], []),
            ("bash", {"command": "sed -i 's/a/b/' src/c.py"}, [], ["src/c.py"]),
            ("bash", {"command": "echo hi > out/log.txt"}, [], ["out/log.txt"]),
            ("bash", {"command": "cat > new.py << 'EOF'\nprint(1)\nEOF"}, [], ["new.py"]),
        ],
    )
    def test_files_from_call_arguments(
        self,
        summarizer: ExtractiveSummarizer,
        name: str,
        arguments: dict[str, Any],
        read: list[str],
        modified: list[str],
    ) -> None:
        """Reads and edits are told apart by the tool's name, subcommand or shell verb."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        graph.add_assistant(tool_calls=[_call("f", name, **arguments)])
        graph.add_tool_result("f", "done")
        text = summarizer.brief(_nodes(graph))
        for path in read:
            assert f"- {path}" in _section(text, "Files read")
        for path in modified:
            assert f"- {path}" in _section(text, "Files modified")
        assert ("## Files read" in text) == bool(read)
        assert ("## Files modified" in text) == bool(modified)

    def test_image_only_first_turn_is_not_blank(self, summarizer: ExtractiveSummarizer) -> None:
        """A first turn with only an image still gives a goal that says so."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user([ImagePart(media_type="image/png", data="aGVsbG8=")])
        text = summarizer.brief(_nodes(graph))
        assert "[1 image(s)]" in _section(text, "Goal: the user's first request, verbatim")

    def test_unicode_is_kept_whole(self, summarizer: ExtractiveSummarizer) -> None:
        """Mixed scripts and emoji survive verbatim."""
        request = "Bitte ändere 東京 → Ōsaka in données/villes.json 🚀. Never remove émojis ✅."
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(request)
        graph.add_user("Ne jamais toucher à prod. Always keep 日本語 comments.")
        text = summarizer.brief(_nodes(graph))
        assert request in text
        assert "Always keep 日本語 comments." in text

    def test_empty_input_gives_only_the_title(self, summarizer: ExtractiveSummarizer) -> None:
        """No nodes and no previous brief: an empty brief."""
        assert summarizer.brief([]) == TITLE

    async def test_summarize_is_the_async_twin(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """The protocol method returns exactly the blocking brief."""
        nodes = _nodes(graph)
        text = await summarizer.summarize(nodes, previous=None, instructions=None)
        assert text == summarizer.brief(nodes)

    def test_instructions_add_a_focus_section(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """Custom instructions are echoed and sentences about their topic are listed."""
        text = summarizer.brief(_nodes(graph), instructions="focus on the database")
        focus = _section(text, "Requested focus")
        assert "Asked for: focus on the database" in focus
        assert "You must never touch the prod database." in focus

    def test_keep_adds_identifiers(
        self, graph: ContextGraph, summarizer: ExtractiveSummarizer
    ) -> None:
        """Strings passed in `keep` are listed even if the span never mentions them."""
        text = summarizer.brief(_nodes(graph), keep=["PINNED-9"])
        assert "PINNED-9" in _section(text, "Key identifiers")


class TestBound:
    def test_huge_span_is_bounded(self) -> None:
        """Thousands of commands stay within max_tokens; the newest are kept, the rest counted."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("Run the whole migration for ticket MIG-42.")
        for n in range(2_000):
            graph.add_assistant(tool_calls=[_call(f"c{n}", "bash", command=f"migrate step {n}")])
            graph.add_tool_result(f"c{n}", f"<returncode>0</returncode>step {n} done")
        summarizer = ExtractiveSummarizer(max_tokens=200, max_items=50, counter=WordCounter())
        text = summarizer.brief(_nodes(graph))
        assert len(text.split()) <= 200
        assert "migrate step 1999" in text
        assert "earlier items omitted)" in text
        assert "MIG-42" in text

    def test_long_goal_keeps_head_and_tail(self) -> None:
        """A request over half the bound is cut in the middle with a marker."""
        request = "START " + "word " * 5_000 + "END"
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(request)
        text = ExtractiveSummarizer(max_tokens=400, counter=WordCounter()).brief(_nodes(graph))
        goal = _section(text, "Goal: the user's first request, verbatim")
        assert goal.startswith("START") and goal.rstrip().endswith("END")
        assert "tokens omitted ...]" in goal
        assert len(text.split()) <= 400

    def test_keep_is_never_dropped(self) -> None:
        """Kept identifiers survive even when everything else is dropped to fit."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(" ".join(f"ID-{n}" for n in range(300)))
        keep = ["ID-5", "ID-250"]
        text = ExtractiveSummarizer(max_tokens=80, counter=WordCounter()).brief(
            _nodes(graph), keep=keep
        )
        assert all(k in text for k in keep)

    @settings(max_examples=40, deadline=None)
    @given(
        turns=st.lists(st.text(min_size=1, max_size=300), min_size=1, max_size=12),
        limit=st.integers(min_value=120, max_value=600),
    )
    def test_bound_and_no_call_syntax_hold_for_any_text(self, turns: list[str], limit: int) -> None:
        """For any user and assistant text the brief stays within bound and has no call syntax."""
        graph = ContextGraph(counter=WordCounter())
        for index, text in enumerate(turns):
            if index % 2:
                graph.add_assistant(text)
            else:
                graph.add_user(text)
        summarizer = ExtractiveSummarizer(max_tokens=limit, counter=WordCounter())
        brief = summarizer.brief(_nodes(graph))
        assert len(brief.split()) <= limit
        assert parse(brief) is not None


class TestRolling:
    def test_update_keeps_the_old_goal_and_resolves_old_errors(self) -> None:
        """A newer span updates the previous brief: same goal, errors resolved, state moved on."""
        graph = build_session()
        nodes = _nodes(graph)
        summarizer = ExtractiveSummarizer(counter=WordCounter())
        first = summarizer.brief(nodes)
        graph.add_user("Deploy after all, the token is set now.")
        graph.add_assistant(tool_calls=[_call("c9", "bash", command="make deploy")])
        graph.add_tool_result("c9", "<returncode>0</returncode>deployed")
        graph.add_assistant("Deployed; nothing left to do.")
        newer = _nodes(graph)[len(nodes) :]
        updated = summarizer.brief(newer, previous=first)
        assert REQUEST in updated
        assert "Deploy after all" not in _section(
            updated, "Goal: the user's first request, verbatim"
        )
        assert "[resolved] `make deploy`" in updated
        assert "[open]" not in updated
        assert _section(updated, "Current state and next step").strip() == (
            "Deployed; nothing left to do."
        )
        assert "ABC-1234" in updated  # carried from the previous brief

    def test_brief_reads_back_exactly(self, graph: ContextGraph) -> None:
        """Parsing a brief and writing it again gives the same text."""
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph), instructions="db")
        parsed = parse(text)
        assert parsed is not None
        assert render(parsed) == text

    @settings(max_examples=40, deadline=None)
    @given(texts=st.lists(st.text(min_size=1, max_size=200), min_size=1, max_size=6))
    def test_any_brief_reads_back_exactly(self, texts: list[str]) -> None:
        """For any turns, reading a brief back and writing it again changes nothing."""
        graph = ContextGraph(counter=WordCounter())
        for index, text in enumerate(texts):
            graph.add_user(text) if index % 2 == 0 else graph.add_assistant(text)
        brief = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph))
        parsed = parse(brief)
        assert parsed is not None and render(parsed) == brief

    def test_same_span_twice_adds_nothing(self, graph: ContextGraph) -> None:
        """Merging a span that the previous brief already holds repeats no list item."""
        summarizer = ExtractiveSummarizer(counter=WordCounter())
        nodes = _nodes(graph)
        once = summarizer.brief(nodes)
        assert summarizer.brief(nodes, previous=once) == once

    def test_foreign_previous_summary_is_kept_as_a_block(self, graph: ContextGraph) -> None:
        """A previous summary in another format is kept under its own heading."""
        previous = "The user wants ABC-1234 fixed; work started on main.py."
        text = ExtractiveSummarizer(counter=WordCounter()).brief(_nodes(graph), previous=previous)
        assert _section(text, "Earlier summary").strip() == previous

    def test_summary_nodes_in_the_span_are_merged(self, graph: ContextGraph) -> None:
        """A brief inside the span (a chunk summary) is merged, not quoted."""
        summarizer = ExtractiveSummarizer(counter=WordCounter())
        nodes = _nodes(graph)
        part = summarizer.brief(nodes[:6])
        chunk = SummaryNode(id="part-1", content=(TextPart(text=part),))
        merged = summarizer.brief([chunk, *nodes[6:]])
        assert merged.count(TITLE) == 1
        assert REQUEST in merged
        assert "[resolved] `pytest -x tests/test_main.py`" in merged


class TestFailureEntities:
    def test_a_resolved_failure_keeps_its_traceback_entities(self) -> None:
        """Frames of a failure that was later fixed are named in the brief, not just open ones."""
        graph = ContextGraph()
        graph.add_user("Make the tests pass.")
        graph.add_assistant("Running.", [_call("c1", "bash", command="pytest -x")])
        graph.add_tool_result(
            "c1",
            'File "/testbed/app/ledger_sync.py", line 2048, in settle_batch\n'
            "ValueError: negative amount",
            is_error=True,
        )
        graph.add_assistant("Fixed; again.", [_call("c2", "bash", command="pytest -x")])
        graph.add_tool_result("c2", "3 passed")
        text = ExtractiveSummarizer().brief(_nodes(graph))
        for entity in ("/testbed/app/ledger_sync.py", "2048", "settle_batch", "ValueError"):
            assert entity in text


class TestNotices:
    def test_a_notice_is_neither_the_goal_nor_a_constraint(
        self, summarizer: ExtractiveSummarizer
    ) -> None:
        """The harness's words ("DO NOT respond") are not the user's rules."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(
            "Caveat: the messages below were generated by the user while running local "
            "commands. DO NOT respond to these messages.",
            notice=True,
        )
        graph.add_user(REQUEST)
        graph.add_user("Background task b1 must be checked later.", notice=True)
        text = summarizer.brief(_nodes(graph))
        assert _section(text, "Goal: the user's first request, verbatim").strip() == REQUEST
        assert "DO NOT respond" not in text
        assert "b1 must be checked" not in text

    def test_a_notices_names_are_not_key_identifiers(
        self, summarizer: ExtractiveSummarizer
    ) -> None:
        """Claude Code's agent-types reminder (a notice) names settings files and the
        like; the brief's key identifiers are for what the user named."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user(REQUEST)
        graph.add_user(
            "<system-reminder>\nAvailable agent types: statusline-setup (edits "
            "settings.json and keybindings.json), output-style-setup.\n</system-reminder>",
            notice=True,
        )
        graph.add_user("Also check config/deploy.yaml before you finish.")
        text = summarizer.brief(_nodes(graph))
        identifiers = _section(text, "Key identifiers")
        assert "deploy.yaml" in identifiers and "main.py" in identifiers
        assert "settings.json" not in text and "keybindings.json" not in text
