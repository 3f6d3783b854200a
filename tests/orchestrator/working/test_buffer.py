from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from context_graph import (
    AgentEvent,
    AssistantTurn,
    Compaction,
    ContextGraph,
    FileRead,
    InvariantViolation,
    Note,
    SubagentResult,
    SystemPrompt,
    TextPart,
    ToolCall,
    ToolResult,
    UnknownNodeError,
    UserTurn,
)
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.render import FORMATS, Renderer
from context_graph.testing import WordCounter, graph_snapshot
from context_graph.tokens.counting import ProviderFormat
from context_graph.validate.request import validate
from orchestrator.working import AuditEntry, WorkingGraph, WorkingView
from processors import Abstract, Drop, Edit, Proposal, Replace, replacement_for


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("you are a careful coding agent")
    graph.add_user("fix the failing test in the parser module please")
    graph.add_assistant(
        "let me look at the code",
        tool_calls=[
            {"id": "c1", "name": "bash", "arguments": '{"cmd": "pytest"}'},
            {"id": "c2", "name": "read", "arguments": '{"path": "parser.py"}'},
        ],
    )
    graph.add_tool_result("c1", "FAILED test_parser.py one two three four five six seven")
    graph.add_file_read("parser.py", "def parse(text): return text.split() " * 3, call_id="c2")
    graph.add_user("any progress on that")
    graph.add_assistant("trying a fix", tool_calls=[{"id": "c3", "name": "bash"}])
    graph.add_tool_result("c3", "passed passed passed passed passed passed")
    graph.add_user("great thanks")
    return graph


@pytest.fixture(name="working")
def working_fixture(graph: ContextGraph) -> WorkingGraph:
    return WorkingGraph(graph, clock=lambda: 1_000.0)


def _count(working: WorkingGraph | WorkingView, nodes: Sequence[Node]) -> int:
    return sum(working.token_cache.count_node(node) for node in nodes)


def replace(working: WorkingGraph, node_id: str, text: str, **updates: Any) -> Proposal:
    """A proposal replacing one node by a copy with `text`, counted honestly."""
    view = working.snapshot()
    new = replacement_for(view[node_id], [TextPart(text=text)], **updates)
    return Proposal(
        processor="replacer",
        edits=(Replace(target=node_id, replacement=new),),
        tokens_before=_count(view, [view[node_id]]),
        tokens_after=_count(view, [new]),
        base_version=view.version,
    )


def drop(working: WorkingGraph, *heads: str) -> Proposal:
    """A proposal dropping the whole units headed by `heads`."""
    view = working.snapshot()
    targets = tuple(i for head in heads for i in view.unit_of(head).node_ids)
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=targets),),
        tokens_before=_count(view, [view[t] for t in targets]),
        base_version=view.version,
    )


def abstract(working: WorkingGraph, *heads: str, text: str = "summary", **meta: Any) -> Proposal:
    """A proposal abstracting the whole units headed by `heads` into one checked summary."""
    view = working.snapshot()
    targets = tuple(i for head in heads for i in view.unit_of(head).node_ids)
    summary = SummaryNode(
        id=f"summary-{'-'.join(heads)}",
        content=(TextPart(text=text),),
        abstracts=targets,
        meta={"checked": True, **meta},
    )
    return Proposal(
        processor="summarizer",
        edits=(Abstract(targets=targets, summary=summary),),
        tokens_before=_count(view, [view[t] for t in targets]),
        tokens_after=_count(view, [summary]),
        base_version=view.version,
    )


def _heads(graph: ContextGraph, kind: str) -> list[str]:
    return [u.head for u in graph.units() if u.kind == kind]


def _renders(source: Any) -> dict[ProviderFormat, Any]:
    return {fmt: Renderer(format=fmt).render(source).payload for fmt in FORMATS}


class TestProjection:
    def test_untouched_view_is_the_pristine_graph(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """With nothing applied, the view has the pristine units and renders the same."""
        assert working.units() == graph.units()
        assert all(a is b for a, b in zip(working.units(), graph.units(), strict=True))
        assert _renders(working) == _renders(graph)

    def test_replace_swaps_the_node_inside_its_unit(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replacement takes its target's place in the same unit."""
        result = graph.by_kind("tool_result")[0]
        entry = working.apply(replace(working, result, "FAILED"))
        (new,) = entry.added
        unit = working.unit_of(new)
        assert unit.node_ids == tuple(new if i == result else i for i in graph.unit_of(result))
        assert working[new].text == "FAILED"
        assert not working.is_current(result)

    def test_abstract_appears_once_where_its_first_unit_was(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A run of abstracted units becomes one summary unit at the first one's place."""
        first, second = _heads(graph, "assistant")
        middle = _heads(graph, "user")[1]
        working.apply(abstract(working, first, middle, second))
        kinds = [u.kind for u in working.units()]
        assert kinds == ["system", "user", "summary", "user"]
        summary = working.units()[2]
        assert summary.node_ids == (summary.head,)
        assert working[summary.head].abstracts == (
            *graph.unit_of(first),
            middle,
            *graph.unit_of(second),
        )

    def test_drop_leaves_the_unit_out(self, graph: ContextGraph, working: WorkingGraph) -> None:
        """A dropped unit is no longer in the view; the others keep their order."""
        first = _heads(graph, "assistant")[0]
        working.apply(drop(working, first))
        kept = [u.head for u in graph.units() if u.head != first]
        assert [u.head for u in working.units()] == kept

    def test_new_pristine_events_appear_in_the_view(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Events ingested after an apply show up at once, and the version moves."""
        working.apply(drop(working, _heads(graph, "assistant")[0]))
        version = working.version
        new = graph.add_user("one more thing")
        assert working.units()[-1].node_ids == (new,)
        assert working.version > version

    def test_late_result_of_a_dropped_unit_stands_alone(self, graph: ContextGraph) -> None:
        """A result arriving after its open call's unit was dropped is shown on its own."""
        assistant, _call = graph.add_assistant("checking", tool_calls=[{"id": "c9", "name": "ls"}])
        graph.add_user("still there")
        working = WorkingGraph(graph)
        working.apply(drop(working, assistant))
        late = graph.add_tool_result("c9", "a b c")
        assert (late,) in [u.node_ids for u in working.units()]
        for fmt, payload in _renders(working).items():
            assert validate(payload, fmt) == []

    def test_unchanged_units_keep_their_identity(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Units an apply did not touch are the very same objects (the renderer caches them)."""
        first, second = _heads(graph, "assistant")
        working.apply(replace(working, graph.by_kind("tool_result")[0], "FAILED"))
        before = working.units()
        working.apply(drop(working, second))
        after = {u.head: u for u in working.units()}
        assert all(after[u.head] is u for u in before if u.head in after)
        assert working.unit_of(working.current_ids()[2]).head == first

    def test_units_an_imported_compaction_covers_are_left_out(self, graph: ContextGraph) -> None:
        """A pristine compaction summary hides what it abstracts, as the renderer would."""
        graph.add(Compaction(content="earlier work summarized"))
        graph.add_user("continue")
        working = WorkingGraph(graph)
        assert [u.kind for u in working.units()] == ["system", "summary", "user"]
        assert _renders(working) == _renders(graph)


class TestViewQueries:
    def test_file_queries_follow_replacements(self, graph: ContextGraph) -> None:
        """`by_path` and `is_superseded` answer for the node that stands for a read now."""
        first = graph.by_kind("file")[0]
        graph.add_file_read("parser.py", "def parse(text): return []")
        working = WorkingGraph(graph)
        (new,) = working.apply(replace(working, first, "def parse")).added
        assert working.view.by_path("parser.py") == (new, graph.by_kind("file")[1])
        assert working.view.is_superseded(new)
        assert not working.view.is_superseded(graph.by_kind("file")[1])

    def test_a_snapshot_does_not_see_later_reads(self, graph: ContextGraph) -> None:
        """A read ingested after a snapshot neither lists in it nor supersedes in it."""
        first = graph.by_kind("file")[0]
        snapshot = WorkingGraph(graph).snapshot()
        graph.add_file_read("parser.py", "def parse(text): return []")
        assert snapshot.by_path("parser.py") == (first,)
        assert not snapshot.is_superseded(first)
        assert graph.is_superseded(first)

    def test_lookups_reach_every_node_but_units_only_current_ones(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Replaced nodes can still be looked up; only current ones are in units."""
        result = graph.by_kind("tool_result")[0]
        (new,) = working.apply(replace(working, result, "FAILED")).added
        view = working.view
        assert result in view and new in view
        assert view[result] is graph[result]
        assert not view.is_current(result) and view.is_current(new)
        with pytest.raises(UnknownNodeError):
            view.unit_of(result)
        assert view.transcript() == graph.transcript()
        assert view.tokens(new) == 1
        assert view.total_tokens == graph.total_tokens - view.tokens(result) + 1

    def test_call_of_maps_through_replacements(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replaced answer's call, and a replaced call's answer, are the current nodes."""
        call = graph.by_kind("tool_call")[0]
        result = graph.by_kind("tool_result")[0]
        (new,) = working.apply(replace(working, result, "FAILED")).added
        assert working.call_of(new) == graph[call]
        answer = working.answer_to(call)
        assert answer is not None and answer.id == new

    def test_lineage_edges_include_the_overlay(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """`derived_from` edges lead from a stand-in to its target and back."""
        result = graph.by_kind("tool_result")[0]
        call = graph.call_of(result)
        assert call is not None
        (new,) = working.apply(replace(working, result, "FAILED")).added
        view = working.view
        assert view.targets(new, "derived_from") == (result,)
        assert view.sources(result, "derived_from") == (new,)
        assert view.targets(new, "answers") == ()
        assert view.targets(result, "answers") == (call.id,)
        assert view.sources(call.id, "answers") == (result,)


class TestSnapshot:
    def test_snapshot_reads_the_state_it_was_taken_in(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Applies after a snapshot do not reach it: same units, version and lookups."""
        snapshot = working.snapshot()
        units, version, renders = snapshot.units(), snapshot.version, _renders(snapshot)
        result = graph.by_kind("tool_result")[0]
        working.apply(replace(working, result, "FAILED"))
        working.apply(drop(working, _heads(graph, "assistant")[1]))
        assert snapshot.units() == units
        assert snapshot.version == version
        assert snapshot.is_current(result)
        assert _renders(snapshot) == renders

    def test_snapshot_ignores_later_events(self, graph: ContextGraph) -> None:
        """Events ingested after a snapshot, late results included, are not in it."""
        assistant, call = graph.add_assistant("checking", tool_calls=[{"id": "c9", "name": "ls"}])
        working = WorkingGraph(graph)
        snapshot = working.snapshot()
        units, transcript, turns = snapshot.units(), snapshot.transcript(), snapshot.turns
        graph.add_tool_result("c9", "a b c")
        graph.add_user("next")
        assert snapshot.units() == units
        assert snapshot.transcript() == transcript
        assert snapshot.turns == turns
        assert snapshot.answer_to(call) is None
        assert working.answer_to(call) is not None
        assert snapshot.unit_of(assistant).node_ids == (assistant, call)

    def test_snapshot_is_a_frozen_view(self, working: WorkingGraph) -> None:
        """The snapshot says it is frozen, and freezing it again returns it."""
        snapshot = working.snapshot()
        assert snapshot.frozen
        assert snapshot.freeze() is snapshot
        assert not working.view.frozen


class TestApply:
    def test_audit_records_every_applied_proposal(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Each apply appends who, when, what left, what came, and what it saved."""
        result = graph.by_kind("tool_result")[0]
        proposal = replace(working, result, "FAILED")
        new = proposal.edits[0].replacement.id  # type: ignore[union-attr]
        entry = working.apply(proposal)
        assert working.audit() == (
            AuditEntry(
                processor="replacer",
                time=1_000.0,
                removed=(result,),
                added=(new,),
                tokens_saved=proposal.tokens_saved,
                note="",
                version=working.version,
            ),
        )
        assert entry is working.audit()[0]

    def test_version_moves_with_applies_and_ingests(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """The version changes with every apply and every pristine change."""
        seen = [working.version]
        working.apply(drop(working, _heads(graph, "assistant")[0]))
        seen.append(working.version)
        graph.add_user("more")
        seen.append(working.version)
        assert seen == sorted(set(seen))

    def test_the_pristine_record_never_changes(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Applied edits leave the pristine graph as it was; derived nodes live in the overlay."""
        before = graph_snapshot(graph)
        first, second = _heads(graph, "assistant")
        working.apply(replace(working, graph.by_kind("tool_result")[0], "FAILED"))
        working.apply(abstract(working, first))
        working.apply(drop(working, second))
        assert graph_snapshot(graph) == before
        assert graph.derived() == ()

    def test_a_rejected_proposal_changes_nothing(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A proposal that breaks a rule raises and leaves state, audit and version alone."""
        working.apply(drop(working, _heads(graph, "assistant")[1]))
        state = (working.view, working.version, working.audit(), _renders(working))
        bad = replace(working, graph.by_kind("tool_result")[0], "much longer " * 20)
        with pytest.raises(InvariantViolation, match="tokens_reduced"):
            working.apply(bad)
        assert (working.view, working.version, working.audit(), _renders(working)) == state

    def test_a_batch_applies_whole_or_not_at_all(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """If one proposal of a batch is rejected, none of the batch is applied."""
        first, second = _heads(graph, "assistant")
        good = drop(working, first)
        bad = drop(working, graph.by_kind("system")[0])
        with pytest.raises(InvariantViolation, match="pinned_untouched"):
            working.apply_batch([good, bad])
        assert working.audit() == ()
        entries = working.apply_batch([good, drop(working, second)])
        assert [e.version for e in entries] == [working.version - 1, working.version]

    def test_proposals_of_a_batch_see_the_ones_before(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A later proposal in a batch may edit what an earlier one added."""
        result = graph.by_kind("tool_result")[0]
        first = replace(working, result, "FAILED test one two")
        mid = first.edits[0].replacement  # type: ignore[union-attr]
        short = replacement_for(mid, [TextPart(text="FAILED")])
        second = Proposal(
            processor="replacer",
            edits=(Replace(target=mid.id, replacement=short),),
            tokens_before=_count(working, [mid]),
            tokens_after=_count(working, [short]),
        )
        working.apply_batch([first, second])
        assert working.roots(short.id) == (result,)

    def test_check_reports_without_applying(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """`check` lists problems and applies nothing."""
        assert working.check(drop(working, _heads(graph, "assistant")[0])) == []
        assert working.audit() == ()


class TestProvenance:
    def test_a_pristine_node_is_its_own_root(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A node never edited stands for itself."""
        user = _heads(graph, "user")[0]
        assert working.roots(user) == (user,)
        assert working.expand(user) == (graph[user],)

    def test_a_replacement_chain_leads_back_to_the_original(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replacement of a replacement still expands to the pristine node."""
        result = graph.by_kind("tool_result")[0]
        (mid,) = working.apply(replace(working, result, "FAILED one two")).added
        (last,) = working.apply(replace(working, mid, "FAILED")).added
        assert working[last].replaces == mid
        assert working.roots(last) == (result,)
        assert working.expand(last) == (graph[result],)

    def test_a_summary_of_a_summary_expands_to_every_original(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Re-summarizing keeps the lineage: expand returns all originals in order."""
        first, second = _heads(graph, "assistant")
        middle = _heads(graph, "user")[1]
        result = graph.by_kind("tool_result")[0]
        working.apply(replace(working, result, "FAILED"))
        (inner,) = working.apply(abstract(working, first, text="first")).added
        (outer,) = working.apply(abstract(working, inner, middle, second, text="all")).added
        originals = (*graph.unit_of(first), middle, *graph.unit_of(second))
        assert working.roots(outer) == originals
        assert working.expand(outer) == tuple(graph[i] for i in originals)

    def test_expanding_an_unknown_id_raises(self, working: WorkingGraph) -> None:
        """An id that is nowhere raises UnknownNodeError."""
        with pytest.raises(UnknownNodeError, match="nope"):
            working.expand("nope")


class TestRendering:
    @pytest.mark.parametrize("fmt", FORMATS)
    @pytest.mark.parametrize("edit", ["replace", "abstract", "drop"])
    def test_the_working_view_renders_valid_and_smaller(
        self, graph: ContextGraph, working: WorkingGraph, fmt: ProviderFormat, edit: str
    ) -> None:
        """After each kind of edit the render is provider-valid and smaller than the raw one."""
        first = _heads(graph, "assistant")[0]
        if edit == "replace":
            proposal = replace(working, graph.by_kind("file")[0], "def parse")
        elif edit == "abstract":
            proposal = abstract(working, first)
        else:
            proposal = drop(working, first)
        renderer = Renderer(format=fmt)
        raw = renderer.render(graph)
        working.apply(proposal)
        rendered = renderer.render(working)
        assert validate(rendered.payload, fmt) == []
        assert rendered.tokens < raw.tokens
        assert rendered.payload == Renderer(format=fmt).render(working).payload


# -- property tests --------------------------------------------------------------------------

WORDS = st.lists(
    st.sampled_from(["alpha", "beta", "gamma", "delta", "eps", "zeta"]), min_size=1, max_size=9
).map(" ".join)


@st.composite
def sessions(draw: st.DrawFn) -> tuple[list[AgentEvent], list[AgentEvent]]:
    """A valid session, and the late results of the calls it leaves open."""
    events: list[AgentEvent] = [SystemPrompt(content=draw(WORDS))]
    late: list[AgentEvent] = []
    for turn in range(draw(st.integers(1, 5))):
        events.append(UserTurn(content=draw(WORDS)))
        if draw(st.booleans()) and draw(st.booleans()):
            events.append(Note(content=draw(WORDS)))
        calls = [f"t{turn}c{i}" for i in range(draw(st.integers(0, 3)))]
        events.append(
            AssistantTurn(
                content=draw(WORDS), tool_calls=tuple(ToolCall(id=c, name="bash") for c in calls)
            )
        )
        for call in calls:
            kind = draw(st.sampled_from(["result", "file", "subagent", "open"]))
            answer: AgentEvent
            if kind == "file":
                answer = FileRead(path=f"{call}.py", content=draw(WORDS), call_id=call)
            elif kind == "subagent":
                answer = SubagentResult(content=draw(WORDS), call_id=call)
            else:
                answer = ToolResult(call_id=call, content=draw(WORDS))
            (late if kind == "open" else events).append(answer)
    return events, late


def _sum_roots(view: WorkingView, targets: Sequence[str]) -> tuple[str, ...]:
    roots = {r for t in targets for r in view.roots(t)}
    return tuple(sorted(roots, key=lambda r: view[r].seq or 0))


def _random_proposal(
    data: st.DataObject, working: WorkingGraph, serial: int
) -> tuple[Proposal, bool]:
    """A random proposal on the current view, and whether it is well formed."""
    view = working.snapshot()
    units = view.units()
    free = [u for u in units if not any(view[i].pinned for i in u.node_ids)]
    answers = [
        i for i in view.current_ids() if view[i].kind in ("tool_result", "file", "subagent_result")
    ]
    kinds = ["pinned"] + (["drop", "abstract", "unchecked"] if free else [])
    kinds += ["replace"] * 2 if answers else []
    kinds += ["split"] if any(len(u) > 1 for u in units) else []
    kinds += ["stale"] if view.overlay.left_at else []
    kind = data.draw(st.sampled_from(kinds))
    edit: Edit
    if kind == "replace":
        node = view[data.draw(st.sampled_from(answers))]
        words = node.text.split()
        edit = Replace(
            target=node.id,
            replacement=replacement_for(
                node, [TextPart(text=" ".join(words[: len(words) // 2]) or "x")]
            ),
        )
    elif kind in ("drop", "pinned"):
        pool = free if kind == "drop" else [u for u in units if u not in free]
        edit = Drop(targets=data.draw(st.sampled_from(pool)).node_ids)
    elif kind == "split":
        unit = data.draw(st.sampled_from([u for u in units if len(u) > 1]))
        edit = Drop(targets=unit.node_ids[1:])
    elif kind == "stale":
        edit = Drop(targets=(data.draw(st.sampled_from(sorted(view.overlay.left_at))),))
    else:
        start = data.draw(st.integers(0, len(units) - 1))
        stop = data.draw(st.integers(start + 1, len(units))) if kind == "abstract" else start + 1
        targets = tuple(i for u in units[start:stop] if u in free for i in u.node_ids)
        if not targets:
            targets = free[0].node_ids
        edit = Abstract(
            targets=targets,
            summary=SummaryNode(
                id=f"summary-{serial}",
                content=(TextPart(text="summary of the run"),),
                abstracts=targets,
                meta={"checked": True} if kind == "abstract" else {},
            ),
        )
    removed = (edit.target,) if isinstance(edit, Replace) else edit.targets
    added = [edit.replacement] if isinstance(edit, Replace) else []
    added += [edit.summary] if isinstance(edit, Abstract) else []
    proposal = Proposal(
        processor=kind,
        edits=(edit,),
        tokens_before=_count(view, [view[t] for t in removed]),
        tokens_after=_count(view, added),
        base_version=view.version,
    )
    return proposal, kind in ("replace", "drop", "abstract")


def _assert_renders_valid(working: WorkingGraph, renderers: dict[ProviderFormat, Renderer]) -> None:
    for fmt, renderer in renderers.items():
        payload = renderer.render(working).payload
        assert validate(payload, fmt) == [], fmt
        assert payload == Renderer(format=fmt).render(working).payload, fmt


def _step(working: WorkingGraph, proposal: Proposal, good: bool) -> None:
    """Check, then apply or see rejected; every promise is asserted around it."""
    graph = working.pristine
    snapshot = working.snapshot()
    seen = (snapshot.version, snapshot.units(), Renderer().render(snapshot).payload)
    pristine = graph_snapshot(graph)
    before = (working.view, working.version, working.audit(), working.total_tokens)
    problems = working.check(proposal)
    event(f"{proposal.processor}: {'rejected' if problems else 'applied'}")
    if good:
        assert {p.split(":")[0] for p in problems} <= {"tokens_reduced"}, problems
    else:
        assert problems
    if problems:
        with pytest.raises(InvariantViolation):
            working.apply(proposal)
        assert (working.view, working.version, working.audit(), working.total_tokens) == before
    else:
        view = working.view
        lineage = {
            new.id: _sum_roots(view, targets)
            for edit in proposal.edits
            for new, targets in (
                [(edit.replacement, (edit.target,))] if isinstance(edit, Replace) else []
            )
            + ([(edit.summary, edit.targets)] if isinstance(edit, Abstract) else [])
        }
        working.apply(proposal)
        assert working.total_tokens == before[3] - proposal.tokens_saved < before[3]
        for new_id, roots in lineage.items():
            assert working.roots(new_id) == roots
            assert all(a is graph[b] for a, b in zip(working.expand(new_id), roots, strict=True))
    assert graph_snapshot(graph) == pristine
    assert (snapshot.version, snapshot.units(), Renderer().render(snapshot).payload) == seen


class TestProperties:
    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(session=sessions(), data=st.data())
    def test_random_proposals_keep_every_promise(
        self, session: tuple[list[AgentEvent], list[AgentEvent]], data: st.DataObject
    ) -> None:
        """Accepted proposals keep renders valid and lineage whole; rejected ones change nothing."""
        events, late = session
        graph = ContextGraph(counter=WordCounter())
        graph.ingest(events)
        working = WorkingGraph(graph)
        renderers = {fmt: Renderer(format=fmt) for fmt in FORMATS}
        _assert_renders_valid(working, renderers)
        serial = 0
        for phase in ("before the late results", "after them"):
            for _ in range(data.draw(st.integers(0, 6), label=phase)):
                serial += 1
                _step(working, *_random_proposal(data, working, serial))
                _assert_renders_valid(working, renderers)
            graph.ingest([*late, UserTurn(content="go on")])
            late = []
            _assert_renders_valid(working, renderers)
        for entry in working.audit():
            for new_id in entry.added:
                assert all(node is graph[node.id] for node in working.expand(new_id))


class TestCallIds:
    def test_a_reused_call_id_keeps_its_provider_id_when_the_first_use_goes(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Dropping the first call with an id does not change the id sent for a later one."""
        graph.add_assistant("again", tool_calls=[{"id": "c1", "name": "bash"}])
        graph.add_tool_result("c1", "ok")
        graph.add_user("done")
        later = graph.by_kind("tool_call")[-1]
        renderer = Renderer(format="anthropic")
        before = {v: k for k, v in renderer.render(working).call_ids.items()}
        working.apply(drop(working, _heads(graph, "assistant")[0]))
        assert working.first_call_with_id("c1") == graph.first_call_with_id("c1")
        rendered = renderer.render(working)
        assert {v: k for k, v in rendered.call_ids.items()}[later] == before[later]
        assert validate(rendered.payload, "anthropic") == []
