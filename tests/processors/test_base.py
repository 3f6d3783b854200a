from __future__ import annotations

from collections.abc import Sequence

import pytest

from context_graph import ConfigurationError, ContextGraph, ProcessorError, TextPart
from context_graph.graph.nodes import Node, ToolResultNode
from context_graph.testing import WordCounter
from processors import (
    Drop,
    GraphView,
    ProcessorContext,
    Proposal,
    Replace,
    available_processors,
    create_processor,
    get_processor,
    register_processor,
    replacement_for,
    run_processor,
    unregister_processor,
)
from processors.registry import ENTRY_POINT_GROUP, ProcessorRegistry


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("look")
    graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {"cmd": "ls"}}])
    graph.add_tool_result("c", "one two three four", is_error=True)
    return graph


def _result(graph: ContextGraph) -> Node:
    return graph[graph.by_kind("tool_result")[0]]


class Shortener:
    """A sync processor: replaces each target by its first word."""

    name = "shortener"

    def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        edits = []
        before = after = 0
        for node in targets:
            new = replacement_for(node, [TextPart(text=node.text.split()[0])])
            edits.append(Replace(target=node.id, replacement=new))
            before += ctx.count(node)
            after += ctx.count(new)
        return Proposal(
            processor=self.name, edits=tuple(edits), tokens_before=before, tokens_after=after
        )


class AsyncDropper:
    """An async processor: drops every target."""

    name = "dropper"

    async def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
        return Proposal(processor=self.name, edits=(Drop(targets=tuple(n.id for n in targets)),))


class TestRunProcessor:
    async def test_sync_processor_runs_inline(self, graph: ContextGraph) -> None:
        """A sync processor's proposal comes back with the tokens it saves."""
        ctx = ProcessorContext.for_graph(graph)
        proposal = await run_processor(Shortener(), [_result(graph)], ctx)
        (edit,) = proposal.edits
        assert isinstance(edit, Replace)
        assert edit.replacement.text == "one"
        assert proposal.tokens_saved == 3

    async def test_async_processor_is_awaited(self, graph: ContextGraph) -> None:
        """An async processor is awaited the same way."""
        ctx = ProcessorContext.for_graph(graph)
        proposal = await run_processor(AsyncDropper(), [_result(graph)], ctx)
        assert proposal.edits == (Drop(targets=(_result(graph).id,)),)

    async def test_failures_are_processor_errors_from_the_cause(self, graph: ContextGraph) -> None:
        """A processor that raises is reported as a ProcessorError naming it."""

        class Broken:
            name = "broken"

            def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> Proposal:
                raise RuntimeError("boom")

        with pytest.raises(ProcessorError, match=r"'broken'.*boom") as info:
            await run_processor(Broken(), [], ProcessorContext.for_graph(graph))
        assert isinstance(info.value.__cause__, RuntimeError)
        assert info.value.processor == "broken"

    async def test_wrong_return_type_is_refused(self, graph: ContextGraph) -> None:
        """Returning something that is not a Proposal is a ProcessorError."""

        class Sloppy:
            name = "sloppy"

            def propose(self, targets: Sequence[Node], ctx: ProcessorContext) -> object:
                return {"edits": []}

        with pytest.raises(ProcessorError, match="expected a Proposal"):
            await run_processor(Sloppy(), [], ProcessorContext.for_graph(graph))  # type: ignore[arg-type]

    async def test_processors_never_change_the_graph(self, graph: ContextGraph) -> None:
        """Running a processor leaves the graph exactly as it was."""
        from context_graph.testing import graph_snapshot

        before = graph_snapshot(graph)
        await run_processor(Shortener(), [_result(graph)], ProcessorContext.for_graph(graph))
        assert graph_snapshot(graph) == before


class TestReplacement:
    def test_replacement_keeps_pairing_fields_and_links_back(self, graph: ContextGraph) -> None:
        """A replacement keeps the call id, tool name and error flag, and `replaces` its source."""
        original = _result(graph)
        new = replacement_for(original, [TextPart(text="[cleared]")])
        assert isinstance(new, ToolResultNode)
        assert (new.tool_call_id, new.name, new.is_error) == ("c", "bash", True)
        assert new.replaces == original.id
        assert new.seq is None
        assert new.id != original.id

    def test_replacement_ids_are_deterministic(self, graph: ContextGraph) -> None:
        """The same edit gives the same id; different content gives another."""
        original = _result(graph)
        a = replacement_for(original, [TextPart(text="x")])
        b = replacement_for(original, [TextPart(text="x")])
        c = replacement_for(original, [TextPart(text="y")])
        assert a.id == b.id != c.id

    def test_replacement_can_be_added_as_derived(self, graph: ContextGraph) -> None:
        """The replacement is a valid derived node of the graph."""
        new = replacement_for(_result(graph), [TextPart(text="x")])
        graph.add_derived(new)
        assert graph.targets(new.id, "derived_from") == (_result(graph).id,)


class TestReplaceEach:
    def test_counts_skips_and_notes(self, graph: ContextGraph) -> None:
        """Copies that are None or not shorter are skipped; counts and note are exact."""
        from processors import replace_each

        ctx = ProcessorContext.for_graph(graph)
        result, user = _result(graph), graph[graph.by_kind("user")[0]]
        shorter = replacement_for(result, [TextPart(text="one")])
        longer = replacement_for(user, [TextPart(text="look look look")])
        proposal = replace_each(
            "p",
            ctx,
            [(result, shorter), (user, longer), (user, None)],
            note=lambda n, before, after: f"{n}:{before}->{after}",
        )
        assert proposal.edits == (Replace(target=result.id, replacement=shorter),)
        assert (proposal.tokens_before, proposal.tokens_after) == (4, 1)
        assert proposal.note == "1:4->1"
        assert proposal.base_version == graph.version

    def test_safety_edits_may_grow(self, graph: ContextGraph) -> None:
        """With shrink_only off, a longer copy is kept and the purpose is carried."""
        from processors import replace_each

        user = graph[graph.by_kind("user")[0]]
        longer = replacement_for(user, [TextPart(text="look look")])
        proposal = replace_each(
            "p",
            ProcessorContext.for_graph(graph),
            [(user, longer)],
            note=lambda *_: "",
            shrink_only=False,
            purpose="safety",
        )
        assert proposal.tokens_saved == -1
        assert proposal.purpose == "safety"


class TestGraphView:
    def test_view_reads_but_cannot_write(self, graph: ContextGraph) -> None:
        """The view answers queries and has no method that changes anything."""
        view = GraphView(graph)
        result = _result(graph)
        assert view[result.id] == result
        assert view.call_of(result.id) is not None
        assert view.unit_of(result.id) == graph.unit_of(result.id)
        writers = [n for n in dir(view) if n.startswith(("add", "ingest", "remove"))]
        assert writers == []
        assert not hasattr(view, "ingest")
        with pytest.raises(AttributeError):
            view.extra = 1  # type: ignore[attr-defined]


class TestGraphViewTotals:
    def test_total_tokens_is_the_transcripts(self, graph: ContextGraph) -> None:
        """The view's total is the sum of its transcript nodes' tokens."""
        view = GraphView(graph)
        assert view.total_tokens == sum(graph.tokens(i) for i in graph.transcript()) > 0


class TestRegistry:
    def test_register_get_and_create(self) -> None:
        """A registered class is found by name and constructed with options."""
        register_processor(Shortener)
        try:
            assert get_processor("shortener") is Shortener
            assert "shortener" in available_processors()
            assert isinstance(create_processor("shortener"), Shortener)
        finally:
            unregister_processor("shortener")
        assert "shortener" not in available_processors()

    def test_unknown_name_lists_what_exists(self) -> None:
        """Asking for a name nobody registered says which names exist."""
        with pytest.raises(ConfigurationError, match=r"no processor named 'nope'.*truncate"):
            get_processor("nope")

    def test_name_clash_is_refused(self) -> None:
        """A second class cannot silently take a registered name."""
        register_processor(Shortener)
        try:
            with pytest.raises(ConfigurationError, match="taken"):
                register_processor(AsyncDropper, name="shortener")
            register_processor(AsyncDropper, name="shortener", replace=True)
            assert get_processor("shortener") is AsyncDropper
        finally:
            unregister_processor("shortener")

    def test_non_processor_is_refused(self) -> None:
        """A class without `propose` cannot be registered."""
        with pytest.raises(ConfigurationError, match="not a processor"):
            register_processor(int)

    def test_a_registry_of_its_own_shares_no_names(self) -> None:
        """A `ProcessorRegistry` built apart knows only what was registered in it."""
        own = ProcessorRegistry(find_entry_points=lambda group: [])
        own.register(Shortener, name="only_here")
        assert own.names() == ("only_here",)
        assert "only_here" not in available_processors()


class TestEntryPoints:
    def test_processor_from_an_entry_point_is_found_by_name(self) -> None:
        """A package's `context_graph.processors` entry point makes its class available."""
        from importlib.metadata import EntryPoint

        point = EntryPoint(
            name="plugin_shortener", value=f"{__name__}:Shortener", group=ENTRY_POINT_GROUP
        )
        asked: list[str] = []

        def find(group: str) -> list[EntryPoint]:
            asked.append(group)
            return [point]

        own = ProcessorRegistry(find_entry_points=find)
        assert own.get("plugin_shortener") is Shortener
        assert own.names() == ("plugin_shortener",)
        assert asked == [ENTRY_POINT_GROUP]  # read once, at the first lookup

    def test_a_class_registered_in_code_wins_over_an_entry_point(self) -> None:
        """An entry point does not replace a class already registered under its name."""
        from importlib.metadata import EntryPoint

        point = EntryPoint(name="mine", value=f"{__name__}:Shortener", group=ENTRY_POINT_GROUP)
        own = ProcessorRegistry(find_entry_points=lambda group: [point])
        own.register(AsyncDropper, name="mine")
        assert own.get("mine") is AsyncDropper

    def test_broken_entry_point_is_a_configuration_error(self) -> None:
        """An entry point that cannot load says which one and why."""
        from importlib.metadata import EntryPoint

        point = EntryPoint(name="broken", value="no_such_module:Thing", group="g")
        own = ProcessorRegistry(find_entry_points=lambda group: [point])
        with pytest.raises(ConfigurationError, match="'broken'"):
            own.get("anything")
