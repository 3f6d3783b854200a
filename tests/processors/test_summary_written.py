"""The files the agent wrote stay in the brief as they now read (issue 31, item 1).

An edit quotes the text it replaces, and an agent that wrote the file itself quotes it
from its own earlier call: once a summary takes that call, the brief is the only place
left to read it from. The brief keeps each file the agent wrote whole, with the edits it
made since applied, and drops a file whose text it can no longer know.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ContextGraph
from context_graph.graph.nodes import ToolCallNode
from context_graph.testing import WordCounter
from processors.summarize.brief import DROP_ORDER, Brief, bound, parse, render
from processors.summarize.checks import check_candidate, tool_names_of
from processors.summarize.extractive import ExtractiveSummarizer, describe_use
from processors.summarize.lineage import line_sources
from processors.summarize.written import FileEdit, Writes, apply
from tests.processors.brief_sessions import add_bash, transcript

HEADING = "## Files as the agent wrote them (its later edits applied)"
APP = "def total(items):\n    return sum(items)\n\n\nprint(total([1, 2, 3]))\n"


def _call(
    graph: ContextGraph, call: str, name: str, args: Any, output: str = "ok", **flags: Any
) -> None:
    arguments = args if isinstance(args, str) else json.dumps(args)
    graph.add_assistant("", tool_calls=[{"id": call, "name": name, "arguments": arguments}])
    graph.add_tool_result(call, output, **flags)


def _written(text: str) -> dict[str, str]:
    brief = parse(text)
    assert brief is not None
    return brief.written


def _graph() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("Write a script that totals the items, then fix what fails.")
    return graph


def _brief(graph: ContextGraph, **options: Any) -> str:
    return ExtractiveSummarizer(**options).brief(transcript(graph))


class TestEachToolsWrites:
    def test_claude_codes_write_then_edit(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        edit = {
            "file_path": "/repo/app.py",
            "old_string": "sum(items)",
            "new_string": "sum(items or [])",
        }
        _call(graph, "e", "Edit", edit)
        text = _brief(graph)
        assert HEADING in text
        assert _written(text) == {"/repo/app.py": APP.replace("sum(items)", "sum(items or [])")}

    def test_the_editor_tools_create_replace_and_insert(self) -> None:
        graph = _graph()
        _call(
            graph,
            "c",
            "str_replace_editor",
            {"command": "create", "path": "/w/a.py", "file_text": "a = 1\nb = 2"},
        )
        _call(
            graph,
            "r",
            "str_replace_editor",
            {"command": "str_replace", "path": "/w/a.py", "old_str": "b = 2", "new_str": "b = 3"},
        )
        _call(
            graph,
            "i",
            "str_replace_editor",
            {"command": "insert", "path": "/w/a.py", "insert_line": 1, "new_str": "c = 0"},
        )
        assert _written(_brief(graph)) == {"/w/a.py": "a = 1\nc = 0\nb = 3"}

    def test_gemini_clis_write_file_and_a_replace_of_every_occurrence(self) -> None:
        graph = _graph()
        _call(graph, "w", "write_file", {"file_path": "/p/x.txt", "content": "red red blue"})
        _call(
            graph,
            "r",
            "replace",
            {
                "file_path": "/p/x.txt",
                "old_string": "red",
                "new_string": "green",
                "expected_replacements": 2,
            },
        )
        assert _written(_brief(graph)) == {"/p/x.txt": "green green blue"}

    def test_a_multi_edit_applies_its_edits_in_order(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/r/m.py", "content": "x = 1\ny = 2\n"})
        edits = [
            {"old_string": "x = 1", "new_string": "x = 10"},
            {"old_string": "x = 10\ny", "new_string": "x = 10\nz"},
        ]
        _call(graph, "m", "MultiEdit", {"file_path": "/r/m.py", "edits": edits})
        assert _written(_brief(graph)) == {"/r/m.py": "x = 10\nz = 2\n"}

    def test_codex_apply_patch_adds_and_updates(self) -> None:
        graph = _graph()
        add = "*** Add File: src/lib.rs\n+fn one() -> u8 {\n+    1\n+}"
        _call(graph, "a", "apply_patch", f"*** Begin Patch\n{add}\n*** End Patch")
        hunk = "@@\n fn one() -> u8 {\n-    1\n+    2\n }"
        update = f"*** Begin Patch\n*** Update File: src/lib.rs\n{hunk}\n*** End Patch"
        _call(graph, "u", "apply_patch", {"input": update})
        assert _written(_brief(graph)) == {"src/lib.rs": "fn one() -> u8 {\n    2\n}"}

    def test_a_todo_list_and_a_stdin_write_are_no_files(self) -> None:
        graph = _graph()
        _call(graph, "t", "TodoWrite", {"todos": [{"content": "fix it", "status": "pending"}]})
        _call(graph, "s", "write_stdin", {"session_id": 3, "chars": "y\n"})
        assert HEADING not in _brief(graph)


class TestWhatTheBriefCannotKnow:
    def test_a_failed_edit_leaves_the_file_as_it_was(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        edit = {"file_path": "/repo/app.py", "old_string": "sum(items)", "new_string": "0"}
        _call(graph, "e", "Edit", edit, output="String to replace not found", is_error=True)
        assert _written(_brief(graph)) == {"/repo/app.py": APP}

    def test_an_edit_of_text_the_file_does_not_have_drops_the_file(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        # Reported done, yet the brief's text has no such line: it cannot be the file.
        _call(
            graph,
            "e",
            "Edit",
            {"file_path": "/repo/app.py", "old_string": "nothing like this", "new_string": "x"},
        )
        text = _brief(graph)
        assert HEADING not in text
        assert "/repo/app.py" in text  # still listed as modified

    def test_a_shell_write_drops_the_file(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        add_bash(graph, "s", "sed -i 's/sum/total/' app.py", "")
        assert HEADING not in _brief(graph)

    def test_a_file_written_again_after_a_shell_write_is_known_again(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        add_bash(graph, "s", "echo x > app.py", "")
        _call(graph, "w2", "Write", {"file_path": "/repo/app.py", "content": "print(1)\n"})
        assert _written(_brief(graph)) == {"/repo/app.py": "print(1)\n"}

    def test_a_file_that_reads_as_a_turn_is_only_listed(self) -> None:
        graph = _graph()
        forged = 'PROMPT = [\n    {"role": "system", "content": "hi"},\n]\n'
        _call(graph, "w", "Write", {"file_path": "/repo/chat.py", "content": forged})
        _call(graph, "w2", "Write", {"file_path": "/repo/ok.py", "content": "x = 1\n"})
        text = _brief(graph)
        assert _written(text) == {"/repo/ok.py": "x = 1\n"}
        nodes = transcript(graph)
        check = check_candidate(text, tokens=1, limit=10**6, tool_names=tool_names_of(nodes))
        assert check.ok, check.kinds


class TestRollingUpdates:
    def test_an_edit_in_a_later_span_updates_the_earlier_briefs_file(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        first = _brief(graph)
        start = len(transcript(graph))
        _call(
            graph,
            "e",
            "Edit",
            {"file_path": "/repo/app.py", "old_string": "[1, 2, 3]", "new_string": "[4]"},
        )
        updated = ExtractiveSummarizer().brief(transcript(graph)[start:], previous=first)
        assert _written(updated) == {"/repo/app.py": APP.replace("[1, 2, 3]", "[4]")}

    def test_a_shell_write_in_a_later_span_drops_the_earlier_briefs_file(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        first = _brief(graph)
        start = len(transcript(graph))
        add_bash(graph, "s", "cat patch.txt >> ./app.py", "")
        updated = ExtractiveSummarizer().brief(transcript(graph)[start:], previous=first)
        assert HEADING not in updated


class TestBound:
    def test_the_written_files_go_first_oldest_first(self) -> None:
        assert DROP_ORDER[0] == "written"
        brief = Brief(
            goal="Write the files.",
            requests=["Keep every helper small."],
            written={"/a.py": "alpha " * 40, "/b.py": "beta " * 40},
        )
        count = WordCounter().count
        whole = count(render(brief))
        text = bound(brief, whole - 10, count, keep=())
        assert _written(text) == {"/b.py": "beta " * 40}
        assert "Keep every helper small." in text

    def test_a_long_file_keeps_its_head_and_tail(self) -> None:
        graph = _graph()
        lines = [f"line_{n} = {n}" for n in range(400)]
        _call(graph, "w", "Write", {"file_path": "/repo/big.py", "content": "\n".join(lines)})
        kept = _written(_brief(graph, max_tokens=600))["/repo/big.py"]
        assert kept.startswith("line_0 = 0") and kept.endswith("line_399 = 399")
        assert "tokens omitted" in kept


_TEXT = st.text(st.sampled_from("ab`#\n -"), max_size=40)


class TestProperties:
    @given(
        files=st.dictionaries(
            st.text(st.sampled_from("abc/._"), min_size=1, max_size=8), _TEXT, max_size=3
        )
    )
    @settings(max_examples=200, deadline=None)
    def test_render_and_parse_give_the_files_back(self, files: dict[str, str]) -> None:
        # Backtick runs, `## ` headings and fences inside a file do not end its quote.
        brief = Brief(goal="g", written=files)
        assert parse(render(brief)) is not None
        assert _written(render(brief)) == {p: t for p, t in files.items() if "\r" not in t}

    @given(
        steps=st.lists(
            st.tuples(
                st.sampled_from(["write", "edit", "shell"]),
                st.sampled_from(["/r/a.py", "/r/b.py"]),
                st.text(st.sampled_from("xyz\n"), min_size=1, max_size=6),
                st.text(st.sampled_from("xyz\n"), max_size=6),
            ),
            max_size=12,
        ),
        cut=st.integers(min_value=0, max_value=12),
    )
    @settings(max_examples=200, deadline=None)
    def test_the_brief_never_shows_text_a_file_does_not_have(
        self, steps: list[tuple[str, str, str, str]], cut: int
    ) -> None:
        """Writes, edits (failing when their text is not in the file) and shell writes,
        summarized in two spans: each file the brief shows reads as the file does."""
        graph = _graph()
        disk: dict[str, str] = {}
        boundaries: list[int] = []
        for n, (kind, path, first, second) in enumerate(steps):
            boundaries.append(len(transcript(graph)))
            if kind == "write":
                _call(graph, f"c{n}", "Write", {"file_path": path, "content": first})
                disk[path] = first
            elif kind == "edit":
                ok = path in disk and first in disk[path]
                args = {"file_path": path, "old_string": first, "new_string": second}
                _call(
                    graph,
                    f"c{n}",
                    "Edit",
                    args,
                    output="ok" if ok else "not found",
                    is_error=not ok,
                )
                if ok:
                    disk[path] = disk[path].replace(first, second, 1)
            else:
                add_bash(graph, f"c{n}", f"echo {n} > {path.rsplit('/', 1)[1]}", "")
                disk[path] = f"{n}\n"
        nodes = transcript(graph)
        split = boundaries[cut] if cut < len(boundaries) else len(nodes)
        first_brief = ExtractiveSummarizer(max_tokens=10**6).brief(nodes[:split])
        text = ExtractiveSummarizer(max_tokens=10**6).brief(nodes[split:], previous=first_brief)
        for path, shown in _written(text).items():
            assert disk[path] == shown


class TestApply:
    def test_edits_of_files_it_does_not_hold_change_nothing(self) -> None:
        writes = Writes(edits=[FileEdit("/x.py", "a", "b")])
        assert apply({"/y.py": "a"}, writes) == {"/y.py": "a"}


class TestLineage:
    def test_a_files_lines_trace_to_the_call_that_wrote_them(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        nodes = transcript(graph)
        text = _brief(graph)
        sources = line_sources(text, nodes, describe=describe_use)
        number = text.split("\n").index("def total(items):") + 1
        write = next(n.id for n in nodes if isinstance(n, ToolCallNode))
        assert write in sources[str(number)]


class TestClinesEditor:
    """Cline's `editor`: the new text alone creates a file, `insert_line` inserts at that
    line, and a failure is a JSON report with `"success": false`, never an error flag
    (each as the real Cline 3.0.65 did; tests/context_graph/importers/test_cline_real.py)."""

    @staticmethod
    def _report(ok: bool) -> str:
        return json.dumps({"query": "edit:/p/out.txt", "result": "", "success": ok})

    def test_create_edit_insert_and_failures(self) -> None:
        graph = _graph()
        path = "/p/out.txt"
        _call(
            graph,
            "c",
            "editor",
            {"path": path, "new_text": "cap is $500\ndone\n"},
            self._report(True),
        )
        edit = {"path": path, "old_text": "cap is $500", "new_text": "cap is $800"}
        _call(graph, "e", "editor", edit, self._report(True))
        missing = {"path": path, "old_text": "not in the file", "new_text": "x"}
        _call(graph, "f", "editor", missing, self._report(False))
        _call(graph, "g", "editor", {"path": path, "new_text": "again"}, self._report(False))
        insert = {"path": path, "insert_line": 2, "new_text": "inserted"}
        _call(graph, "i", "editor", insert, self._report(True))
        assert _written(_brief(graph)) == {path: "cap is $800\ninserted\ndone\n"}


class TestFailedShellWrites:
    def test_a_shell_command_that_failed_may_still_have_written(self) -> None:
        graph = _graph()
        _call(graph, "w", "Write", {"file_path": "/repo/app.py", "content": APP})
        add_bash(graph, "s", "echo x > app.py && false", "exit 1", is_error=True)
        assert HEADING not in _brief(graph)
