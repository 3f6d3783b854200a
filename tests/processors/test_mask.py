from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph, ImagePart, TextPart
from context_graph.graph.nodes import AnswerNode, FileNode
from context_graph.importers import load_sessions
from context_graph.testing import WordCounter, graph_snapshot, strict_trace, trace_files
from processors.base import ProcessorContext, Proposal, Replace, replacement_for
from processors.mask import MASKABLE_KINDS, ObservationMasker
from processors.registry import get_processor

TRACES = Path(__file__).resolve().parents[2].parent / "shared" / "traces"
TRACE_FILES = trace_files(TRACES)


def _words(n: int, word: str = "word") -> str:
    """`n` words, ten to a line."""
    lines = [" ".join([word] * 10) for _ in range(n // 10)]
    if n % 10:
        lines.append(" ".join([word] * (n % 10)))
    return "\n".join(lines)


def _turn(graph: ContextGraph, call_id: str, name: str, output: Any, **fields: Any) -> str:
    """An assistant turn with one call, and its result; return the result's id."""
    graph.add_assistant(tool_calls=[{"id": call_id, "name": name, "arguments": "{}"}])
    return graph.add_tool_result(call_id, output, **fields)


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    """Four user turns: a bash run, a file read, a re-read of that file, a small result."""
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("fix the tests")
    _turn(graph, "c1", "bash", "<returncode>1</returncode>\n" + _words(300))
    graph.add_user("now look at the module")
    graph.add_assistant(tool_calls=[{"id": "c2", "name": "read", "arguments": "{}"}])
    graph.add_file_read("src/app.py", _words(200, "code"), call_id="c2")
    graph.add_user("read it again")
    graph.add_assistant(tool_calls=[{"id": "c3", "name": "read", "arguments": "{}"}])
    graph.add_file_read("src/app.py", _words(210, "code"), call_id="c3")
    graph.add_user("and run ls")
    _turn(graph, "c4", "bash", _words(150, "file"))
    return graph


def _ctx(graph: ContextGraph) -> ProcessorContext:
    return ProcessorContext.for_graph(graph)


async def _propose(graph: ContextGraph, **options: Any) -> Proposal:
    return await ObservationMasker(**options).propose(list(graph), _ctx(graph))


def _replaces(proposal: Proposal) -> list[Replace]:
    edits = [e for e in proposal.edits if isinstance(e, Replace)]
    assert len(edits) == len(proposal.edits)
    return edits


def _masked_ids(proposal: Proposal) -> set[str]:
    return {e.target for e in _replaces(proposal)}


def _expected_old(graph: ContextGraph, keep_turns: int, min_tokens: int) -> set[str]:
    """Answer nodes at least `keep_turns` user turns old and big enough, worked out directly."""
    return {
        n.id
        for n in graph
        if n.kind in MASKABLE_KINDS
        and not n.pinned
        and graph.turns - n.turn >= keep_turns
        and graph.tokens(n.id) >= min_tokens
    }


class TestObservationMaskerOptions:
    @pytest.mark.parametrize(
        ("options", "option"),
        [
            ({"keep_turns": 0}, "keep_turns"),
            ({"keep_turns": -2}, "keep_turns"),
            ({"keep_turns": 1.5}, "keep_turns"),
            ({"keep_turns": True}, "keep_turns"),
            ({"keep_turns": "3"}, "keep_turns"),
            ({"mask_consumed": "yes"}, "mask_consumed"),
            ({"mask_superseded": 1}, "mask_superseded"),
            ({"min_tokens": -1}, "min_tokens"),
            ({"min_tokens": None}, "min_tokens"),
            ({"kinds": ("user",)}, "kinds"),
            ({"kinds": ()}, "kinds"),
            ({"kinds": "tool_result"}, "kinds"),
            ({"exclude_tools": "bash"}, "exclude_tools"),
            ({"exclude_tools": [1]}, "exclude_tools"),
        ],
    )
    def test_bad_options_are_refused_by_name(self, options: dict[str, Any], option: str) -> None:
        """A bad option raises ConfigurationError naming the option."""
        with pytest.raises(ConfigurationError, match=option):
            ObservationMasker(**options)

    def test_options_are_keyword_only(self) -> None:
        """Options cannot be passed by position."""
        with pytest.raises(TypeError):
            ObservationMasker(3)  # type: ignore[call-arg]

    def test_registered_by_name(self) -> None:
        """The masker is found in the registry as `mask`."""
        assert get_processor("mask") is ObservationMasker

    def test_age_can_be_turned_off(self) -> None:
        """`keep_turns=None` is accepted and means no aging."""
        assert ObservationMasker(keep_turns=None).keep_turns is None


class TestObservationMasker:
    async def test_old_results_are_masked(self, graph: ContextGraph) -> None:
        """Exactly the results at least `keep_turns` user turns old are masked (plus superseded)."""
        proposal = await _propose(graph, keep_turns=2, min_tokens=10, mask_superseded=False)
        assert _masked_ids(proposal) == _expected_old(graph, keep_turns=2, min_tokens=10)
        assert proposal.processor == "mask"
        assert proposal.base_version == graph.version

    async def test_nothing_is_masked_inside_the_window(self, graph: ContextGraph) -> None:
        """With a window as long as the session nothing is old, so nothing is masked."""
        proposal = await _propose(graph, keep_turns=graph.turns + 1, mask_superseded=False)
        assert proposal.empty
        assert proposal.tokens_saved == 0
        assert proposal.note == "nothing to mask"

    async def test_replacement_answers_the_same_call(self, graph: ContextGraph) -> None:
        """A placeholder is a node of the same kind answering the same call id, linked back."""
        proposal = await _propose(graph, keep_turns=1, min_tokens=10)
        assert proposal.edits
        for edit in _replaces(proposal):
            original = graph[edit.target]
            new = edit.replacement
            assert isinstance(original, AnswerNode) and isinstance(new, AnswerNode)
            assert (new.kind, new.tool_call_id, new.name) == (
                original.kind,
                original.tool_call_id,
                original.name,
            )
            assert new.replaces == original.id
            assert new.turn == original.turn
            if isinstance(original, FileNode):
                assert isinstance(new, FileNode) and new.path == original.path
            graph.add_derived(new)
            assert graph.targets(new.id, "derived_from") == (original.id,)

    async def test_placeholder_gist(self, graph: ContextGraph) -> None:
        """The placeholder names the tool, size and exit code, and no id; meta says why.

        Without `context_expand` the model has no way to restore it: no hint points there.
        """
        proposal = await _propose(graph, keep_turns=3, min_tokens=10, mask_superseded=False)
        (edit,) = _replaces(proposal)
        original = graph[edit.target]
        lines = original.text.count("\n") + 1
        tokens = len(original.text.split())
        assert edit.replacement.text == (
            f"[output of bash masked: {lines} lines, {tokens} tokens, exit 1]"
        )
        masked: dict[str, Any] = {"reason": "old", "tokens": tokens}
        assert edit.replacement.meta == {**original.meta, "masked": masked}

    async def test_placeholder_names_the_id_when_the_tool_is_offered(
        self, graph: ContextGraph
    ) -> None:
        """With `expand_hints` set, the placeholder says which id to pass `context_expand`."""
        ctx = ProcessorContext.for_graph(graph, expand_hints=True)
        masker = ObservationMasker(keep_turns=3, min_tokens=10, mask_superseded=False)
        (edit,) = _replaces(await masker.propose(list(graph), ctx))
        original = graph[edit.target]
        lines = original.text.count("\n") + 1
        tokens = len(original.text.split())
        assert edit.replacement.text == (
            f"[output of bash masked: {lines} lines, {tokens} tokens, exit 1"
            f" — call context_expand with id {original.id} to restore]"
        )

    async def test_tokens_are_counted_on_both_sides(self, graph: ContextGraph) -> None:
        """`tokens_before` / `tokens_after` are the content tokens of the removed / added nodes."""
        ctx = _ctx(graph)
        proposal = await ObservationMasker(keep_turns=1, min_tokens=10).propose(list(graph), ctx)
        edits = _replaces(proposal)
        assert proposal.tokens_before == sum(graph.tokens(e.target) for e in edits)
        # A file node's path is part of its content tokens.
        assert proposal.tokens_after == sum(
            len(e.replacement.text.split()) + len(getattr(e.replacement, "path", "").split())
            for e in edits
        )
        assert proposal.tokens_saved > 0
        for edit in edits:
            assert ctx.count(edit.replacement) < ctx.count(graph[edit.target])

    async def test_superseded_file_is_masked_even_when_young(self, graph: ContextGraph) -> None:
        """A file read covered by a later read is masked and says so; the later read is kept."""
        first, _ = graph.by_path("src/app.py")
        assert graph.is_superseded(first)
        proposal = await _propose(graph, keep_turns=None, min_tokens=10)
        (edit,) = _replaces(proposal)
        assert edit.target == first
        assert "superseded by a later read" in edit.replacement.text
        assert edit.replacement.text.startswith("[file src/app.py masked: ")
        off = await _propose(graph, keep_turns=None, min_tokens=10, mask_superseded=False)
        assert off.empty

    async def test_consumed_results_only_when_asked(self, graph: ContextGraph) -> None:
        """`mask_consumed` masks results a later assistant turn followed; the last one stays."""
        assert (await _propose(graph, keep_turns=None, mask_superseded=False)).empty
        proposal = await _propose(
            graph, keep_turns=None, mask_superseded=False, mask_consumed=True, min_tokens=10
        )
        transcript = graph.transcript()
        last_assistant = max(i for i, n in enumerate(transcript) if graph[n].kind == "assistant")
        expected = {
            n
            for i, n in enumerate(transcript)
            if graph[n].kind in MASKABLE_KINDS and i < last_assistant
        }
        assert _masked_ids(proposal) == expected
        assert graph.by_kind("tool_result")[-1] not in _masked_ids(proposal)

    async def test_small_outputs_are_left_alone(self, graph: ContextGraph) -> None:
        """Outputs under `min_tokens` are not masked."""
        proposal = await _propose(graph, keep_turns=1, min_tokens=10_000)
        assert proposal.empty

    async def test_never_masks_when_placeholder_is_not_shorter(self) -> None:
        """A one-word result is not replaced by a longer placeholder, whatever min_tokens says."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        _turn(graph, "c", "bash", "ok")
        graph.add_user("next")
        assert (await _propose(graph, keep_turns=1, min_tokens=0)).empty

    async def test_pinned_nodes_are_never_touched(self) -> None:
        """A pinned result stays, however old and big it is."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        pinned = _turn(graph, "c", "bash", _words(500), pinned=True)
        graph.add_user("next")
        graph.add_user("and next")
        assert graph[pinned].pinned
        assert (await _propose(graph, keep_turns=1, min_tokens=0)).empty

    async def test_excluded_tools_and_kinds(self, graph: ContextGraph) -> None:
        """`exclude_tools` and `kinds` narrow what is masked."""
        everything = _masked_ids(await _propose(graph, keep_turns=1, min_tokens=10))
        no_bash = _masked_ids(
            await _propose(graph, keep_turns=1, min_tokens=10, exclude_tools={"bash"})
        )
        files = _masked_ids(await _propose(graph, keep_turns=1, min_tokens=10, kinds={"file"}))
        bash_ids = {n.id for n in graph if getattr(n, "name", None) == "bash"}
        assert no_bash == everything - bash_ids
        assert files == {i for i in everything if graph[i].kind == "file"}

    async def test_other_kinds_and_empty_targets(self, graph: ContextGraph) -> None:
        """User, assistant and call nodes are ignored; no targets gives an empty proposal."""
        ctx = _ctx(graph)
        others = [n for n in graph if n.kind not in MASKABLE_KINDS]
        assert (await ObservationMasker(keep_turns=1).propose(others, ctx)).empty
        assert (await ObservationMasker(keep_turns=1).propose([], ctx)).empty

    async def test_duplicate_targets_give_one_edit(self, graph: ContextGraph) -> None:
        """A target listed twice is masked once."""
        result = graph[graph.by_kind("tool_result")[0]]
        proposal = await ObservationMasker(keep_turns=1, min_tokens=10).propose(
            [result, result], _ctx(graph)
        )
        assert [e.target for e in _replaces(proposal)] == [result.id]

    async def test_inputs_and_graph_unchanged_and_deterministic(self, graph: ContextGraph) -> None:
        """Proposing changes nothing, and the same input gives the same proposal."""
        before = graph_snapshot(graph)
        nodes = list(graph)
        dumps = [n.model_dump() for n in nodes]
        first = await _propose(graph, keep_turns=1, min_tokens=10)
        second = await _propose(graph, keep_turns=1, min_tokens=10)
        assert first == second
        assert graph_snapshot(graph) == before
        assert [n.model_dump() for n in nodes] == dumps

    async def test_derived_copy_of_a_superseded_read_is_masked(self, graph: ContextGraph) -> None:
        """A replacement of a superseded read is judged by the read it stands for."""
        first = graph[graph.by_path("src/app.py")[0]]
        shorter = replacement_for(first, [TextPart(text=_words(100, "code"))])
        graph.add_derived(shorter)
        proposal = await ObservationMasker(keep_turns=None, min_tokens=10).propose(
            [shorter], _ctx(graph)
        )
        (edit,) = _replaces(proposal)
        assert edit.target == shorter.id
        assert edit.replacement.replaces == shorter.id
        assert "superseded" in edit.replacement.text


class TestPlaceholderGist:
    async def _mask_one(self, output: Any, **fields: Any) -> str:
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        _turn(graph, "c", fields.pop("name", "bash"), output, **fields)
        graph.add_user("next")
        proposal = await _propose(graph, keep_turns=1, min_tokens=0)
        (edit,) = _replaces(proposal)
        return edit.replacement.text

    @pytest.mark.parametrize(
        ("output", "meta", "code"),
        [
            (_words(100) + "\n[Command finished with exit code 2]", {}, 2),
            ("<returncode>-1</returncode>\n<output>\n" + _words(100) + "\n</output>", {}, -1),
            (_words(100), {"returncode": 0}, 0),
            (_words(100) + "\nExit code 127", {}, 127),
        ],
    )
    async def test_exit_code(self, output: str, meta: dict[str, Any], code: int) -> None:
        """The exit code comes from metadata, `<returncode>` tags or the shell's last line."""
        text = await self._mask_one(output, meta=meta)
        assert f", exit {code}," in text or text.endswith(f", exit {code}]")

    async def test_traceback_gives_the_exception_line(self) -> None:
        """A traceback is summed up by the exception that ends it, not its header."""
        output = (
            _words(50)
            + '\nTraceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
            + '    raise KeyError("user_id")\nmyapp.errors.MissingUser: user 42 not found\n'
            + _words(50)
        )
        text = await self._mask_one(output)
        assert "first error: myapp.errors.MissingUser: user 42 not found" in text

    async def test_code_that_names_an_error_is_not_an_error(self) -> None:
        """`raise ValueError(...)` in a listing is source, not a failure."""
        output = _words(80) + '\n   12\t        raise ValueError("bad")\n' + _words(80)
        assert "first error" not in await self._mask_one(output)

    async def test_error_flag_without_error_line_uses_the_first_line(self) -> None:
        """When the tool flagged an error, its first non-empty line is the gist."""
        text = await self._mask_one(
            "\n\n  permission denied on /srv  \n" + _words(100), is_error=True
        )
        assert text.endswith("first error: permission denied on /srv]")

    async def test_long_unicode_error_line_is_cut_cleanly(self) -> None:
        """A long error line of multi-byte text is cut to one short line, not mid-character."""
        line = "ERROR: " + "données invalides 🚫 " * 40
        text = await self._mask_one(_words(50) + "\n" + line + "\n" + _words(50))
        gist = re.search(r"first error: (.*)\]$", text)
        assert gist is not None
        assert len(gist.group(1)) <= 120
        assert gist.group(1).endswith("…")
        assert line.startswith(gist.group(1)[:-1].rstrip())
        text.encode("utf-8")

    async def test_images_are_counted(self) -> None:
        """A result made of an image says so; its image tokens make masking worth it."""
        graph = ContextGraph()
        graph.add_user("look")
        image = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
        _turn(graph, "c", "screenshot", [image])
        graph.add_user("next")
        (edit,) = _replaces(await _propose(graph, keep_turns=1))
        assert "1 image" in edit.replacement.text
        assert not any(isinstance(p, ImagePart) for p in edit.replacement.content)

    async def test_huge_output(self) -> None:
        """A 200,000-line output becomes a one-line placeholder."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_user("go")
        _turn(graph, "c", "bash", "\n".join(f"line {i} ok" for i in range(200_000)))
        graph.add_user("next")
        (edit,) = _replaces(await _propose(graph, keep_turns=1))
        assert "200,000 lines, 600,000 tokens" in edit.replacement.text
        assert "\n" not in edit.replacement.text


_OUTPUTS = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@st.composite
def _sessions(draw: st.DrawFn) -> ContextGraph:
    """A random session: user turns, tool results of random size, some pinned, file re-reads."""
    graph = ContextGraph(counter=WordCounter())
    for turn in range(draw(st.integers(1, 5))):
        graph.add_user(f"turn {turn}")
        for call in range(draw(st.integers(0, 3))):
            call_id = f"c{turn}-{call}"
            graph.add_assistant(tool_calls=[{"id": call_id, "name": "tool", "arguments": "{}"}])
            body = draw(_OUTPUTS) + " " + _words(draw(st.integers(0, 60)))
            if draw(st.booleans()):
                graph.add_file_read(f"f{draw(st.integers(0, 2))}.py", body, call_id=call_id)
            else:
                graph.add_tool_result(call_id, body, pinned=draw(st.booleans()))
    return graph


class TestObservationMaskerProperties:
    @settings(max_examples=60, deadline=None)
    @given(
        graph=_sessions(),
        keep_turns=st.one_of(st.none(), st.integers(1, 4)),
        consumed=st.booleans(),
        min_tokens=st.integers(0, 40),
    )
    async def test_invariants(
        self, graph: ContextGraph, keep_turns: int | None, consumed: bool, min_tokens: int
    ) -> None:
        """Every edit replaces an unpinned observation by a shorter one answering the same call."""
        ctx = _ctx(graph)
        masker = ObservationMasker(
            keep_turns=keep_turns, mask_consumed=consumed, min_tokens=min_tokens
        )
        before = graph_snapshot(graph)
        proposal = await masker.propose(list(graph), ctx)
        assert graph_snapshot(graph) == before
        _check_edits(graph, ctx, proposal, min_tokens)


def _check_edits(
    graph: ContextGraph, ctx: ProcessorContext, proposal: Proposal, min_tokens: int
) -> None:
    targets = [e.target for e in _replaces(proposal)]
    assert len(targets) == len(set(targets))
    for edit in _replaces(proposal):
        original, new = graph[edit.target], edit.replacement
        assert original.kind in MASKABLE_KINDS and not original.pinned
        assert new.kind == original.kind and new.call_id == original.call_id
        assert new.replaces == original.id
        assert min_tokens <= ctx.count(original)
        assert ctx.count(new) < ctx.count(original)
        call = graph.call_of(original.id)
        assert call is None or call.tool_call_id == new.call_id
    if proposal.edits:
        assert proposal.tokens_saved > 0


@pytest.mark.slow
@pytest.mark.skipif(not TRACE_FILES, reason="shared traces not present")
@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda p: str(p.relative_to(TRACES)))
@pytest.mark.ingests_traces
async def test_masker_on_shared_traces(path: Path) -> None:
    """On real sessions: the old or superseded are masked, shorter, same calls, pins untouched."""
    for session in load_sessions(path, strict=strict_trace(path)):
        graph = ContextGraph()
        graph.ingest(session.events)
        ctx = _ctx(graph)
        before = graph_snapshot(graph)
        default = await ObservationMasker().propose(list(graph), ctx)
        assert _masked_ids(default) == _due_by_default(graph)
        eager = ObservationMasker(mask_consumed=True, keep_turns=1)
        for masker, proposal in ((ObservationMasker(), default), (eager, None)):
            proposal = proposal or await masker.propose(list(graph), ctx)
            _check_edits(graph, ctx, proposal, masker.min_tokens)
            for edit in _replaces(proposal):
                assert edit.target not in edit.replacement.text  # no tool to pass it to
        assert graph_snapshot(graph) == before
        for edit in _replaces(default):
            graph.add_derived(edit.replacement)  # each one is a valid derived node


def _due_by_default(graph: ContextGraph) -> set[str]:
    """What the default masker must mask, worked out from the graph directly."""
    due = _expected_old(graph, keep_turns=3, min_tokens=100)
    due |= {
        n.id
        for n in graph
        if isinstance(n, FileNode)
        and not n.pinned
        and graph.is_superseded(n.id)
        and graph.tokens(n.id) >= 100
    }
    return due


class TestFailedCallPlaceholder:
    """A failed call's placeholder names the entities of its output."""

    async def test_error_placeholder_names_the_traceback_entities(self) -> None:
        from context_graph import ContextGraph
        from processors import ObservationMasker, ProcessorContext

        graph = ContextGraph()
        graph.add_user("Fix it.")
        graph.add_assistant("Running.", [{"id": "c1", "name": "bash"}])
        trace = "\n".join(
            [
                "Traceback (most recent call last):",
                '  File "/testbed/src/parser_core.py", line 1412, in parse_row',
                "    value = table[key]",
                *(f"  noise line {n} of the captured output" for n in range(60)),
                "KeyError: 'order_total'",
            ]
        )
        result = graph.add_tool_result("c1", trace, is_error=True)
        for turn in range(4):
            graph.add_user(f"next {turn}")
        ctx = ProcessorContext.for_graph(graph)
        proposal = await ObservationMasker(keep_turns=2).propose([graph[result]], ctx)
        text = proposal.edits[0].replacement.text  # type: ignore[union-attr]
        for entity in ("/testbed/src/parser_core.py", "1412", "parse_row", "KeyError"):
            assert entity in text
        assert proposal.tokens_after < proposal.tokens_before
