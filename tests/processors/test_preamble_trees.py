"""`PreambleTreeTrimmer`: a harness's folder tree before the task, cut to its top levels."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.errors import ConfigurationError
from context_graph.graph.nodes import UserNode
from context_graph.importers import load_sessions
from context_graph.validate.request import validate
from orchestrator import ContextManager
from orchestrator.policy import Policy, get_policy
from processors import PreambleTreeTrimmer, available_processors, create_processor
from processors.preamble_trees import TREE_TRIMMED_KEY, trim_trees

FORMATS = ("openai", "anthropic", "gemini", "responses")
TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
GEMINI_TRAJECTORY = TRACES / "gemini_cli" / "google-gemini_gemini-cli" / "trajectory.json"


def gemini_tree(folders: int = 12, files: int = 15) -> str:
    """A folder tree laid out as Gemini CLI's session context lays it out."""
    lines = ["/home/me/project/"]
    for folder in range(folders):
        last_folder = folder == folders - 1
        lines.append(f"{'└' if last_folder else '├'}───pkg{folder}/")
        lead = "    " if last_folder else "│   "
        for file in range(files):
            branch = "└" if file == files - 1 else "├"
            lines.append(f"{lead}{branch}───module_{folder}_{file}.ts")
    return "\n".join(lines)


def session_context(tree: str) -> str:
    return (
        "<session_context>\nThis is the Gemini CLI. Today's date is Monday, April 6, 2026.\n"
        "My operating system is: linux\n- **Directory Structure:**\n\n"
        f"{tree}\n</session_context>"
    )


def session(
    *, tree: str | None = None, notice: bool = True, steps: int = 6
) -> list[dict[str, Any]]:
    """A session opened by a harness's session context, then a request and tool steps."""
    context = {"type": "user", "content": session_context(tree or gemini_tree())}
    if notice:
        context["notice"] = True
    events: list[dict[str, Any]] = [
        {"type": "system", "content": "You are a coding agent."},
        context,
        {"type": "user", "content": "Add a retry to pkg3/module_3_1.ts."},
    ]
    for step in range(steps):
        events += [
            {
                "type": "assistant",
                "content": f"Step {step}.",
                "tool_calls": [{"id": f"c{step}", "name": "bash", "arguments": '{"cmd": "ls"}'}],
            },
            {"type": "tool_result", "call_id": f"c{step}", "name": "bash", "content": f"ok {step}"},
        ]
    return events


def compacted(
    fmt: str, events: list[dict[str, Any]], processor: PreambleTreeTrimmer
) -> ContextManager:
    manager = ContextManager(format=fmt, policy=Policy(pipeline=(processor,)))
    manager.ingest(events)
    anyio.run(manager.compact)
    return manager


class TestTrimTrees:
    def test_the_top_levels_that_fit_stay_and_a_marker_counts_the_rest(self) -> None:
        """12 folders of 15 files at 40 entries: the 12 folders stay, 180 files go."""
        tree = gemini_tree()
        trimmed, omitted = trim_trees(tree, 40)
        assert omitted == 180
        lines = trimmed.split("\n")
        assert lines[0] == "/home/me/project/"
        assert [line for line in lines if "pkg" in line] == [f"├───pkg{i}/" for i in range(11)] + [
            "└───pkg11/"
        ]
        assert lines[-1] == "[... 180 deeper entries of this tree omitted ...]"
        assert "module_" not in trimmed

    def test_a_second_level_stays_when_it_fits(self) -> None:
        """3 folders of 5 files at 40 entries: all 18 lines fit, nothing is cut."""
        tree = gemini_tree(folders=3, files=5)
        assert trim_trees(tree, 40) == (tree, 0)
        trimmed, omitted = trim_trees(tree, 10)
        assert omitted == 15 and "module_" not in trimmed

    def test_tree_and_ascii_layouts_are_read(self) -> None:
        """`tree`'s own layout and its ASCII one (`|--`, `` `-- ``) are trees too."""
        unicode = "\n".join(
            ["."] + [f"├── dir{i}\n│   ├── a{i}.py\n│   └── b{i}.py" for i in range(6)]
        )
        ascii_ = "\n".join(
            ["."] + [f"|-- dir{i}\n|   |-- a{i}.py\n|   `-- b{i}.py" for i in range(6)]
        )
        for tree in (unicode, ascii_):
            trimmed, omitted = trim_trees(tree, 6)
            assert omitted == 12
            assert "dir5" in trimmed and "a0.py" not in trimmed

    def test_text_that_is_no_tree_is_untouched(self) -> None:
        """Prose, a markdown table, a short tree: nothing changes."""
        table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * 2} |" for i in range(30))
        short = gemini_tree(folders=2, files=3)
        for text in ("Just prose.\n" * 40, table, short):
            assert trim_trees(text, 3) == (text, 0)

    @given(
        st.lists(
            st.tuples(st.integers(0, 4), st.sampled_from(["├───", "└───", "|-- ", "`-- "])),
            max_size=80,
        ),
        st.integers(1, 60),
    )
    @settings(max_examples=200, deadline=None)
    def test_what_stays_is_the_original_lines_in_order(
        self, rows: list[tuple[int, str]], max_entries: int
    ) -> None:
        """Kept lines are the input's, in order; the count matches; a second pass cuts nothing."""
        lines = ["root/"] + [
            f"{'│   ' * depth}{branch}name{i}" for i, (depth, branch) in enumerate(rows)
        ]
        text = "\n".join(lines)
        trimmed, omitted = trim_trees(text, max_entries)
        out = [line for line in trimmed.split("\n") if not line.startswith("[... ")]
        iterator = iter(lines)
        assert all(line in iterator for line in out)  # a subsequence, in order
        assert len(lines) - len(out) == omitted
        assert trim_trees(trimmed, max_entries)[1] == 0

    @pytest.mark.parametrize(
        "note",
        [
            "  # the entry point",
            " # generated: do not edit",
            " // keep",
            " - the CLI",
            " (vendored)",
        ],
    )
    def test_a_tree_with_notes_after_its_entries_stays_whole(self, note: str) -> None:
        """A tree someone wrote (a CLAUDE.md's project layout) may hold a rule in a note."""
        lines = gemini_tree().split("\n")
        lines[5] += note
        tree = "\n".join(lines)
        assert trim_trees(tree, 40) == (tree, 0)

    def test_hostile_lines_are_read_in_one_pass(self) -> None:
        """A million verticals, or a million-line tree, are read without backtracking."""
        assert trim_trees("│" * 1_000_000, 5) == ("│" * 1_000_000, 0)
        huge = "\n".join(f"├───d{i}\n│   └───f{i}" for i in range(250_000))
        trimmed, omitted = trim_trees(huge, 40)
        assert omitted == 250_000 and trimmed.count("\n") == 250_000
        staircase = "\n".join(f"{' ' * depth}├───d{depth}" for depth in range(3_000))
        assert trim_trees(staircase, 40)[1] == 3_000 - 40


class TestPreambleTreeTrimmer:
    @pytest.mark.parametrize("fmt", FORMATS)
    def test_the_session_context_tree_is_cut_and_stays_valid(self, fmt: str) -> None:
        """The notice keeps its header and top level; the request is valid and smaller."""
        before = ContextManager(format=fmt)
        before.ingest(session())
        manager = compacted(fmt, session(), PreambleTreeTrimmer())
        after = manager.render_sync()
        assert validate(after.payload, fmt) == []
        assert after.tokens < before.render_sync().tokens - 1_000
        body = json.dumps(after.payload, ensure_ascii=False)
        assert "Today's date is Monday, April 6, 2026" in body and "pkg11/" in body
        assert "module_0_0.ts" not in body and "180 deeper entries of this tree omitted" in body
        assert "Add a retry to pkg3/module_3_1.ts." in body  # the request is the user's

    def test_the_whole_tree_stays_expandable(self) -> None:
        """The trimmed notice expands to the pristine one, tree and all."""
        manager = compacted("openai", session(), PreambleTreeTrimmer())
        (trimmed,) = [n for n in manager.working.view.overlay.derived.values()]
        assert isinstance(trimmed, UserNode) and trimmed.notice
        assert trimmed.meta[TREE_TRIMMED_KEY] == 180
        (original,) = manager.expand(trimmed.id)
        assert "module_11_14.ts" in original.content[0].text  # type: ignore[union-attr]

    @pytest.mark.parametrize(("note", "cut"), [("", True), ("  # generated: never edit", False)])
    def test_claude_codes_claude_md_layout_is_cut_only_without_notes(
        self, note: str, cut: bool
    ) -> None:
        """Through the gateway, Claude Code's CLAUDE.md reminder before the prompt is a
        preamble notice; a layout it documents with a rule in a note is not cut."""
        layout = gemini_tree().split("\n")
        layout[3] += note
        reminder = "<system-reminder>\n# claudeMd\n" + "\n".join(layout) + "\n</system-reminder>"
        events = session()
        events[1] = {"type": "user", "content": reminder, "notice": True}
        manager = compacted("anthropic", events, PreambleTreeTrimmer())
        trimmed = list(manager.working.view.overlay.derived.values())
        assert len(trimmed) == int(cut)

    def test_only_a_notice_before_the_first_request_is_cut(self) -> None:
        """The user's own tree, and a notice after the request, are the work: they stay."""
        tree = gemini_tree()
        users_own = session(notice=False)
        later = session()
        later.insert(4, {"type": "user", "content": session_context(tree), "notice": True})
        later.pop(1)
        for events in (users_own, later):
            manager = compacted("openai", events, PreambleTreeTrimmer())
            assert "module_0_0.ts" in json.dumps(manager.render_sync().payload)

    def test_a_small_notice_is_left_alone(self) -> None:
        """Under `min_tokens`, or with a tree too short for a marker, nothing changes."""
        short = gemini_tree(folders=2, files=3)
        for processor, events in (
            (PreambleTreeTrimmer(min_tokens=100_000), session()),
            (PreambleTreeTrimmer(), session(tree=short)),
        ):
            manager = compacted("openai", events, processor)
            assert not manager.working.view.overlay.derived

    def test_a_preamble_scoped_stage_is_handed_the_notices_before_the_request(self) -> None:
        """Scope `preamble`: the session context alone, not the request, nor later notices."""
        handed: list[list[str]] = []

        class Recorder:
            name = "recorder"
            scope = "preamble"

            async def propose(self, targets: Any, ctx: Any) -> Any:
                handed.append([node.id for node in targets])
                return await PreambleTreeTrimmer().propose(targets, ctx)

        events = session()
        events.append({"type": "user", "content": session_context(gemini_tree()), "notice": True})
        manager = compacted("openai", events, Recorder())  # type: ignore[arg-type]
        graph = manager.working.view
        (ids,) = handed
        (context,) = ids
        node = graph[context]
        assert isinstance(node, UserNode) and node.notice and node.seq == 1
        notices = [u for u in graph.units() if u.kind == "notice"]
        assert len(notices) == 2  # the later notice was not handed over

    def test_bad_options_are_refused(self) -> None:
        """Each option out of its range or of the wrong type is a `ConfigurationError`."""
        for options in (
            {"max_entries": 0},
            {"max_entries": "40"},
            {"min_tokens": -1},
            {"max_entries": True},
        ):
            with pytest.raises(ConfigurationError, match="PreambleTreeTrimmer"):
                PreambleTreeTrimmer(**options)  # type: ignore[arg-type]

    def test_registered_and_in_the_coding_policy(self) -> None:
        """Named `trim_preamble_trees`, and the coding policy's first stage."""
        assert "trim_preamble_trees" in available_processors()
        assert isinstance(create_processor("trim_preamble_trees"), PreambleTreeTrimmer)
        assert get_policy("coding").pipeline[0].processor == "trim_preamble_trees"


@pytest.mark.skipif(not GEMINI_TRAJECTORY.is_file(), reason="needs ../shared/traces")
def test_a_recorded_gemini_session_at_8k_sends_the_tree_cut() -> None:
    """Gemini CLI's own session context (about 2,000 tokens) is cut once the session compacts."""
    (imported,) = load_sessions(GEMINI_TRAJECTORY, strict=False)  # one stray response
    manager = ContextManager(format="gemini", budget=8_000, policy="coding")
    manager.ingest(imported.events)
    result = manager.render_sync()
    body = json.dumps(result.payload, ensure_ascii=False)
    assert validate(result.payload, "gemini") == []
    assert result.tokens <= 8_000
    assert "<session_context>" in body and "deeper entries of this tree omitted" in body
    assert "This is the Gemini CLI" in body
