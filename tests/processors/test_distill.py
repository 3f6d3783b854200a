from __future__ import annotations

import re
from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from context_graph import ConfigurationError, ContextGraph, ImagePart, TextPart
from context_graph.graph.nodes import FileNode, Node, SubagentResultNode, ToolResultNode
from context_graph.testing import WordCounter, graph_snapshot
from processors import ProcessorContext, Replace, run_processor
from processors.distill import (
    CODE_LIGHT_PRESSURE,
    DEFAULT_MIN_TOKENS,
    LEVELS,
    Distiller,
    distill_text,
    distilled_level,
    level_for_pressure,
)
from processors.registry import get_processor

HEADER = re.compile(
    r"^\[distilled [^,\]]+, (light|medium|heavy): [\d,]+ -> [\d,]+ tokens\]$", re.MULTILINE
)


def _log(lines: int = 120) -> str:
    out = []
    for i in range(lines):
        level = "ERROR" if i % 40 == 17 else "INFO"
        out.append(f"2024-05-20T10:00:{i % 60:02d}Z {level} worker-{i % 3} handled job {1000 + i}")
    return "\n".join(out)


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("please look at the worker logs")
    graph.add_assistant(
        tool_calls=[
            {"id": "c1", "name": "bash", "arguments": {"cmd": "cat worker.log"}},
            {"id": "c2", "name": "bash", "arguments": {"cmd": "echo hi"}},
        ]
    )
    graph.add_tool_result("c1", _log(), is_error=True)
    graph.add_tool_result("c2", "hi")
    return graph


def _results(graph: ContextGraph) -> list[Node]:
    return [graph[node_id] for node_id in graph.by_kind("tool_result")]


def _ctx(graph: ContextGraph, **fields: object) -> ProcessorContext:
    return ProcessorContext.for_graph(graph, **fields)


class TestOptions:
    def test_defaults(self) -> None:
        """Without options the level follows the budget and small nodes are left alone."""
        distiller = Distiller()
        assert distiller.level is None
        assert distiller.min_tokens == DEFAULT_MIN_TOKENS

    @pytest.mark.parametrize("level", ["extreme", "LIGHT", "", 2])
    def test_unknown_level_is_refused(self, level: object) -> None:
        """A level outside light / medium / heavy is a configuration error naming `level`."""
        with pytest.raises(ConfigurationError, match="`level`"):
            Distiller(level=level)  # type: ignore[arg-type]

    @pytest.mark.parametrize("min_tokens", [-1, 1.5, "100", True])
    def test_bad_min_tokens_is_refused(self, min_tokens: object) -> None:
        """`min_tokens` must be an int of at least 0."""
        with pytest.raises(ConfigurationError, match="`min_tokens`"):
            Distiller(min_tokens=min_tokens)  # type: ignore[arg-type]

    def test_options_are_keyword_only(self) -> None:
        """Options cannot be passed by position."""
        with pytest.raises(TypeError):
            Distiller("medium")  # type: ignore[call-arg]

    def test_registered_by_name(self) -> None:
        """The distiller is registered as `distill`."""
        assert get_processor("distill") is Distiller


class TestLevelForPressure:
    @pytest.mark.parametrize(
        ("tokens", "budget", "expected"),
        [
            (5_000, None, "light"),
            (900, 1_000, "light"),
            (1_000, 1_000, "light"),
            (1_001, 1_000, "medium"),
            (3_000, 1_000, "medium"),
            (3_001, 1_000, "heavy"),
            (10, 0, "heavy"),
        ],
    )
    def test_thresholds(self, tokens: int, budget: int | None, expected: str) -> None:
        """Tokens over budget: at most 1 is light, at most 3 medium, beyond heavy."""
        assert level_for_pressure(tokens, budget) == expected

    def test_distiller_reads_the_transcript_and_the_budget(self, graph: ContextGraph) -> None:
        """Without a fixed level, the graph's transcript tokens and ctx.budget pick it."""
        total = sum(graph.tokens(node_id) for node_id in graph.transcript())
        distiller = Distiller()
        assert distiller.level_for(_ctx(graph)) == "light"
        assert distiller.level_for(_ctx(graph, budget=total)) == "light"
        assert distiller.level_for(_ctx(graph, budget=total // 2)) == "medium"
        assert distiller.level_for(_ctx(graph, budget=total // 4)) == "heavy"

    def test_fixed_level_wins(self, graph: ContextGraph) -> None:
        """A fixed level ignores the budget."""
        assert Distiller(level="light").level_for(_ctx(graph, budget=1)) == "light"


def _code_and_log() -> tuple[ContextGraph, Node, Node]:
    """A graph with a Python file read (`cat -n` style) and a long log, and those two.

    Counted with the default tokenizer: light only drops a gutter's padding, which a
    word count does not see.
    """
    graph = ContextGraph()
    graph.add_user("fix the handler")
    body = (
        "def handler_{i}(event):\n"
        "    total = event.count + {i}\n"
        "    if total > limit_{i}:\n"
        "        raise ValueError('handler {i} over its limit')\n"
        "    return total\n"
    )
    lines = "\n".join(body.format(i=i) for i in range(30)).splitlines()
    numbered = "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, 1))
    graph.add_file_read("src/app/handlers.py", numbered)
    graph.add_assistant(tool_calls=[{"id": "c1", "name": "bash", "arguments": {"cmd": "make"}}])
    graph.add_tool_result("c1", _log())
    return graph, graph[graph.by_kind("file")[0]], _results(graph)[0]


def _total(graph: ContextGraph) -> int:
    return sum(graph.tokens(node_id) for node_id in graph.transcript())


class TestCodeUnderMildPressure:
    """Source code stays at light while the view is at most `CODE_LIGHT_PRESSURE` times
    its budget, where the pressure puts other outputs at medium: an edit copies the
    lines it replaces, which the medium outline drops."""

    async def _levels(
        self, distiller: Distiller, ratio: float
    ) -> tuple[dict[str, str | None], str]:
        graph, code, log = _code_and_log()
        ctx = _ctx(graph, budget=int(_total(graph) / ratio))
        proposal = await distiller.propose([code, log], ctx)
        levels = {}
        for edit in proposal.edits:
            assert isinstance(edit, Replace)
            levels[edit.target] = distilled_level(edit.replacement.text)
        return {"code": levels.get(code.id), "log": levels.get(log.id)}, proposal.note

    async def test_code_is_light_where_the_log_is_medium(self) -> None:
        levels, note = await self._levels(Distiller(min_tokens=0), 1.2)
        assert levels == {"code": "light", "log": "medium"}
        assert note.startswith("distilled 2 node(s) at medium (source code at light): ")

    async def test_over_the_bound_code_is_medium_too(self) -> None:
        levels, note = await self._levels(Distiller(min_tokens=0), CODE_LIGHT_PRESSURE + 0.1)
        assert levels == {"code": "medium", "log": "medium"}
        assert note.startswith("distilled 2 node(s) at medium: ")

    async def test_a_fixed_level_is_kept_for_code(self) -> None:
        levels, _ = await self._levels(Distiller(level="medium", min_tokens=0), 1.2)
        assert levels == {"code": "medium", "log": "medium"}

    async def test_code_already_at_medium_is_not_made_light_again(self) -> None:
        graph, code, _ = _code_and_log()
        medium = await Distiller(level="medium", min_tokens=0).propose([code], _ctx(graph))
        (edit,) = medium.edits
        assert isinstance(edit, Replace)
        graph.add_derived(edit.replacement)
        ctx = _ctx(graph, budget=int(_total(graph) / 1.2))
        again = await Distiller(min_tokens=0).propose([graph[edit.replacement.id]], ctx)
        assert not again.edits


class TestPropose:
    async def test_empty_targets_give_an_empty_proposal(self, graph: ContextGraph) -> None:
        """No targets, no edits; the proposal still names the processor and the version."""
        proposal = await Distiller().propose([], _ctx(graph))
        assert proposal.empty
        assert proposal.processor == "distill"
        assert proposal.base_version == graph.version

    async def test_replaces_a_long_result_keeping_its_pairing(self, graph: ContextGraph) -> None:
        """The replacement keeps call id, tool name and error flag, and says what was done."""
        original = _results(graph)[0]
        ctx = _ctx(graph)
        proposal = await Distiller(level="medium", min_tokens=10).propose([original], ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        new = edit.replacement
        assert isinstance(new, ToolResultNode)
        assert (new.tool_call_id, new.name, new.is_error) == ("c1", "bash", True)
        assert new.replaces == original.id == edit.target
        assert HEADER.match(new.text.split("\n")[0])
        assert new.text.startswith("[distilled log, medium: ")
        assert proposal.tokens_before == ctx.count(original)
        assert proposal.tokens_after == ctx.count(new)
        assert proposal.tokens_saved > 0
        assert "distilled 1 node(s) at medium" in proposal.note

    async def test_error_lines_survive(self, graph: ContextGraph) -> None:
        """Every ERROR line of the log is in what stands for it at every level."""
        original = _results(graph)[0]
        errors = [line for line in original.text.split("\n") if " ERROR " in line]
        assert len(errors) == 3
        for level in LEVELS:
            proposal = await Distiller(level=level, min_tokens=0).propose([original], _ctx(graph))
            shown = [e.replacement.text for e in proposal.edits if isinstance(e, Replace)]
            assert all(line in (shown or [original.text])[0] for line in errors)

    async def test_skips_what_it_must_not_touch(self, graph: ContextGraph) -> None:
        """Pinned nodes, non-answer nodes and nodes under `min_tokens` get no edit."""
        pinned = _results(graph)[0].model_copy(update={"pinned": True})
        others = [graph[node_id] for node_id in graph.transcript()[:3]]
        tiny = _results(graph)[1]
        proposal = await Distiller(level="heavy", min_tokens=5).propose(
            [pinned, *others, tiny], _ctx(graph)
        )
        assert proposal.empty
        assert proposal.note == "nothing to distill at heavy"

    async def test_min_tokens_is_a_lower_bound(self, graph: ContextGraph) -> None:
        """A node with exactly `min_tokens` tokens is distilled, one with fewer is not."""
        original = _results(graph)[0]
        size = _ctx(graph).count(original)
        ctx = _ctx(graph)
        assert not (await Distiller(level="heavy", min_tokens=size).propose([original], ctx)).empty
        assert (await Distiller(level="heavy", min_tokens=size + 1).propose([original], ctx)).empty

    async def test_never_proposes_growth(self) -> None:
        """A result the rules cannot shorten (with its header) is left alone."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {}}])
        graph.add_tool_result("c", "alpha beta gamma delta epsilon zeta")
        node = _results(graph)[0]
        for level in LEVELS:
            proposal = await Distiller(level=level, min_tokens=0).propose([node], _ctx(graph))
            assert proposal.empty

    async def test_the_graph_is_unchanged(self, graph: ContextGraph) -> None:
        """Proposing changes nothing in the graph or in the targets."""
        before = graph_snapshot(graph)
        targets = _results(graph)
        dumped = [node.model_dump() for node in targets]
        await run_processor(Distiller(level="heavy", min_tokens=0), targets, _ctx(graph))
        assert graph_snapshot(graph) == before
        assert [node.model_dump() for node in targets] == dumped

    async def test_deterministic(self, graph: ContextGraph) -> None:
        """The same input gives the same proposal, ids included."""
        targets = _results(graph)
        first = await Distiller(level="medium", min_tokens=0).propose(targets, _ctx(graph))
        second = await Distiller(level="medium", min_tokens=0).propose(targets, _ctx(graph))
        assert first == second

    async def test_media_parts_are_kept(self) -> None:
        """Images stay, in place; only the text is distilled; image-only nodes are skipped."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant(
            tool_calls=[
                {"id": "a", "name": "screenshot", "arguments": {}},
                {"id": "b", "name": "screenshot", "arguments": {}},
            ]
        )
        image = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
        graph.add_tool_result("a", [image, TextPart(text=_log())])
        graph.add_tool_result("b", [image])
        with_text, image_only = _results(graph)
        proposal = await Distiller(level="heavy", min_tokens=0).propose(
            [with_text, image_only], _ctx(graph)
        )
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert edit.target == with_text.id
        assert edit.replacement.content[0] == image
        assert isinstance(edit.replacement.content[1], TextPart)
        assert len(edit.replacement.content) == 2

    async def test_file_reads_use_their_path(self) -> None:
        """A file read's extension decides the content type, even when the code is broken."""
        graph = ContextGraph(counter=WordCounter())
        source = "\n".join(f"def handler_{i}(event:\n    return event + {i}" for i in range(40))
        graph.add_file_read("src/app/handlers.py", source)
        node = graph[graph.by_kind("file")[0]]
        proposal = await Distiller(level="heavy", min_tokens=0).propose([node], _ctx(graph))
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert isinstance(edit.replacement, FileNode)
        assert edit.replacement.path == "src/app/handlers.py"
        assert edit.replacement.text.startswith("[distilled python source, heavy: ")
        assert "def handler_0(event:" in edit.replacement.text

    async def test_subagent_results_are_distilled(self) -> None:
        """A sub-agent's long report is an answer node like any other."""
        graph = ContextGraph(counter=WordCounter())
        report = "\n".join(
            f"- checked src/module_{i}.py: function run_{i} returns {i * 7}" for i in range(60)
        )
        graph.add_subagent_result(f"# Report\n\n{report}")
        node = graph[graph.by_kind("subagent_result")[0]]
        proposal = await Distiller(level="medium", min_tokens=0).propose([node], _ctx(graph))
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert isinstance(edit.replacement, SubagentResultNode)
        assert "# Report" in edit.replacement.text

    async def test_heavier_levels_start_from_the_original(self, graph: ContextGraph) -> None:
        """Distilled again at a heavier level, a node is distilled from its original text."""
        original = _results(graph)[0]
        medium = await Distiller(level="medium", min_tokens=0).propose([original], _ctx(graph))
        (edit,) = medium.edits
        assert isinstance(edit, Replace)
        graph.add_derived(edit.replacement)
        ctx = _ctx(graph)
        direct = distill_text(original.text, "heavy", tool="bash", count=WordCounter().count)
        again = await Distiller(level="heavy", min_tokens=0).propose([edit.replacement], ctx)
        (second,) = again.edits
        assert isinstance(second, Replace)
        assert second.target == edit.replacement.id
        assert second.replacement.replaces == edit.replacement.id
        assert second.replacement.text == direct.text
        same = await Distiller(level="medium", min_tokens=0).propose([edit.replacement], ctx)
        assert same.empty

    async def test_lost_original_is_not_distilled_twice(self) -> None:
        """A distilled node whose original is gone is left as it is."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {}}])
        text = distill_text(_log(), "light", count=WordCounter().count).text
        graph.add_tool_result("c", text)
        node = _results(graph)[0]
        assert distilled_level(node.text) == "light"
        proposal = await Distiller(level="heavy", min_tokens=0).propose([node], _ctx(graph))
        assert proposal.empty


_LINES = st.lists(
    st.one_of(
        st.sampled_from(["", "  ", "ok", "ERROR failed to open src/app.py", "=" * 30]),
        st.text(st.characters(codec="utf-8"), max_size=60),
        st.builds(
            lambda n, word: f"{word} job {n} at /srv/{word}/run.py line {n % 500}",
            st.integers(0, 10**6),
            st.sampled_from(["INFO", "WARN", "ValueError", "done"]),
        ),
    ),
    max_size=80,
)


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_LINES, level=st.sampled_from(LEVELS))
    def test_header_first_and_deterministic(self, lines: Sequence[str], level: str) -> None:
        """Every distillate starts with its header line, and the same text gives the same one."""
        text = "\n".join(lines)
        first = distill_text(text, level, count=WordCounter().count)  # type: ignore[arg-type]
        second = distill_text(text, level, count=WordCounter().count)  # type: ignore[arg-type]
        assert first == second
        assert HEADER.match(first.text.split("\n")[0])
        assert distilled_level(first.text) == level

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(lines=_LINES, level=st.sampled_from(LEVELS))
    async def test_proposals_never_grow(self, lines: Sequence[str], level: str) -> None:
        """Every proposed replacement has fewer tokens than the node it replaces."""
        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {}}])
        graph.add_tool_result("c", "\n".join(lines) or "-")
        ctx = _ctx(graph)
        node = _results(graph)[0]
        proposal = await Distiller(level=level, min_tokens=0).propose([node], ctx)  # type: ignore[arg-type]
        for edit in proposal.edits:
            assert isinstance(edit, Replace)
            assert ctx.count(edit.replacement) < ctx.count(node)
        assert proposal.tokens_after <= proposal.tokens_before
