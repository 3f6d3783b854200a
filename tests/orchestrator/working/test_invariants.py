from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import Compaction, ContextGraph, InvariantViolation, TextPart
from context_graph.graph.nodes import FileNode, Node, SummaryNode, ToolResultNode, UserNode
from context_graph.render import FORMATS, Renderer
from context_graph.testing import WordCounter
from context_graph.validate.request import validate
from orchestrator.working.buffer import WorkingGraph
from orchestrator.working.invariants import RULES, check_proposal, enforce
from orchestrator.working.rules import changes_of, pairs_kept
from processors import Abstract, Drop, Edit, Proposal, Replace, replacement_for


@pytest.fixture(name="graph")
def graph_fixture() -> ContextGraph:
    graph = ContextGraph(counter=WordCounter())
    graph.add_system("you are a careful coding agent")
    graph.add_user("fix the failing test in the parser module please")
    graph.add_assistant(
        "let me look",
        tool_calls=[
            {"id": "c1", "name": "bash", "arguments": '{"cmd": "pytest -x"}'},
            {"id": "c2", "name": "read", "arguments": '{"path": "parser.py"}'},
        ],
    )
    graph.add_tool_result("c1", "FAILED test_parser.py one two three four five six seven")
    graph.add_file_read("parser.py", "def parse(text): return text.split() " * 3, call_id="c2")
    graph.add_note("the parser must stay pure python")
    graph.add_user("any progress on that")
    graph.add_assistant("trying a fix", tool_calls=[{"id": "c3", "name": "bash"}])
    graph.add_tool_result("c3", "passed passed passed passed passed passed")
    graph.add_user("great thanks")
    return graph


@pytest.fixture(name="working")
def working_fixture(graph: ContextGraph) -> WorkingGraph:
    return WorkingGraph(graph)


def _targets(edit: Edit) -> tuple[str, ...]:
    return (edit.target,) if isinstance(edit, Replace) else edit.targets


def _added(edit: Edit) -> list[Node]:
    if isinstance(edit, Replace):
        return [edit.replacement]
    return [edit.summary] if isinstance(edit, Abstract) else []


def honest(working: WorkingGraph, *edits: Edit, **fields: Any) -> Proposal:
    """A proposal of `edits` whose token numbers are counted right (unless overridden)."""
    view = working.snapshot()
    count = view.token_cache.count_node
    removed = [t for edit in edits for t in _targets(edit) if t in view]
    numbers = {
        "tokens_before": sum(count(view[t]) for t in removed),
        "tokens_after": sum(count(n) for edit in edits for n in _added(edit)),
        "base_version": view.version,
    }
    return Proposal(processor="test", edits=edits, **{**numbers, **fields})


def summary(targets: tuple[str, ...], *, text: str = "summary", **fields: Any) -> SummaryNode:
    """A short summary abstracting `targets`, checked unless `meta` says otherwise."""
    values = {"id": f"summary-{len(targets)}-{text}", "meta": {"checked": True}, **fields}
    return SummaryNode(content=(TextPart(text=text),), abstracts=targets, **values)


def _unit(graph: ContextGraph, kind: str, index: int = 0) -> tuple[str, ...]:
    return [u for u in graph.units() if u.kind == kind][index].node_ids


def _state(working: WorkingGraph) -> tuple[object, ...]:
    renders = tuple(Renderer(format=f).render(working).payload for f in FORMATS)
    return (working.view, working.version, working.audit(), working.units(), renders)


def assert_rejected(working: WorkingGraph, proposal: Proposal, rule: str) -> list[str]:
    """The proposal breaks exactly `rule`; applying it raises and changes nothing."""
    before = _state(working)
    problems = working.check(proposal)
    assert problems, "the proposal was accepted"
    assert {p.split(":")[0] for p in problems} == {rule}, problems
    for problem in problems:
        assert re.search(r"`[^`]+`", problem), problem  # names the node
        assert "; fix: " in problem, problem
    with pytest.raises(InvariantViolation) as caught:
        working.apply(proposal)
    assert f"- {rule}: " in str(caught.value)
    assert _state(working) == before
    return problems


class TestTargetsCurrent:
    def test_a_target_replaced_since_the_snapshot_is_stale(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A processor that read an old snapshot cannot replace what was replaced since."""
        result = graph.by_kind("tool_result")[0]
        late = honest(working, Replace(target=result, replacement=_short(graph[result], "A")))
        working.apply(honest(working, Replace(target=result, replacement=_short(graph[result]))))
        (problem,) = assert_rejected(working, late, "targets_current")
        assert f"node `{result}` was replaced by" in problem
        assert f"after the proposal's base version {late.base_version}" in problem

    def test_a_dropped_target_is_stale(self, graph: ContextGraph, working: WorkingGraph) -> None:
        """A target dropped since the snapshot is reported as dropped."""
        unit = _unit(graph, "assistant", 1)
        late = honest(working, Drop(targets=unit))
        working.apply(honest(working, Drop(targets=unit)))
        problems = assert_rejected(working, late, "targets_current")
        assert all("dropped at version" in p for p in problems)

    def test_an_unknown_target_is_rejected(self, working: WorkingGraph) -> None:
        """A target that is nowhere is named as such."""
        proposal = honest(working, Drop(targets=("ghost",)), tokens_before=1)
        (problem,) = assert_rejected(working, proposal, "targets_current")
        assert "node `ghost` is in neither" in problem

    def test_a_target_hidden_by_an_imported_compaction_is_rejected(
        self, graph: ContextGraph
    ) -> None:
        """Nodes that a pristine compaction summary covers are not targets."""
        first = _unit(graph, "user")
        graph.add(Compaction(content="all of it"))
        working = WorkingGraph(graph)
        proposal = honest(working, Drop(targets=first))
        (problem,) = assert_rejected(working, proposal, "targets_current")
        assert "imported compaction" in problem

    def test_a_base_version_from_the_future_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A base version newer than the working graph's comes from another graph."""
        proposal = honest(working, Drop(targets=_unit(graph, "assistant", 1)))
        future = proposal.model_copy(update={"base_version": working.version + 5})
        (problem,) = assert_rejected(working, future, "targets_current")
        assert f"proposal from `test` has base_version {working.version + 5}" in problem

    def test_an_edit_without_targets_is_rejected(self, working: WorkingGraph) -> None:
        """A Drop of nothing is reported (it also saves nothing)."""
        problems = working.check(honest(working, Drop(targets=())))
        assert any(p.startswith("targets_current: edit 0 (drop) has no targets") for p in problems)

    def test_an_old_snapshot_applies_when_its_targets_are_current(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Changes elsewhere since the snapshot do not make a proposal stale."""
        proposal = honest(working, Drop(targets=_unit(graph, "assistant", 1)))
        working.apply(honest(working, Drop(targets=_unit(graph, "assistant", 0))))
        graph.add_user("and one more")
        working.apply(proposal)
        assert len(working.audit()) == 2


class TestWholeUnits:
    def test_dropping_part_of_a_unit_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Dropping a tool result without its call would split the unit."""
        unit = _unit(graph, "assistant")
        result = graph.by_kind("tool_result")[0]
        proposal = honest(working, Drop(targets=(result,)))
        (problem,) = assert_rejected(working, proposal, "whole_units")
        assert f"is in unit `{unit[0]}`, but edit 0 (drop) leaves out" in problem

    def test_a_unit_that_grew_since_the_snapshot_is_not_covered(self, graph: ContextGraph) -> None:
        """A drop read before a late result arrived no longer covers the whole unit."""
        graph.add_assistant("one more look", tool_calls=[{"id": "c9", "name": "ls"}])
        working = WorkingGraph(graph)
        proposal = honest(working, Drop(targets=_unit(graph, "assistant", 2)))
        late = graph.add_tool_result("c9", "a b")
        (problem,) = assert_rejected(working, proposal, "whole_units")
        assert f"`{late}`" in problem

    def test_abstracting_around_a_unit_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """An Abstract must cover a run of consecutive units."""
        targets = (*_unit(graph, "assistant", 0), *_unit(graph, "assistant", 1))
        proposal = honest(working, Abstract(targets=targets, summary=summary(targets)))
        (problem,) = assert_rejected(working, proposal, "whole_units")
        assert f"unit `{_unit(graph, 'user', 1)[0]}` but not that unit" in problem

    def test_abstract_targets_out_of_order_are_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """An Abstract lists its targets in view order."""
        targets = (*_unit(graph, "user", 1), *_unit(graph, "assistant", 0))
        proposal = honest(working, Abstract(targets=targets, summary=summary(targets)))
        (problem,) = assert_rejected(working, proposal, "whole_units")
        assert "out of view order" in problem

    def test_a_run_may_skip_system_and_note_units(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Units that render into the system prompt (a pinned note) may sit inside a run."""
        targets = (*_unit(graph, "assistant", 0), *_unit(graph, "user", 1))
        working.apply(honest(working, Abstract(targets=targets, summary=summary(targets))))
        assert [u.kind for u in working.units()][2:4] == ["summary", "note"]

    def test_a_replacement_of_another_kind_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A file read replaced by a plain tool result would change its unit's shape."""
        read = graph[graph.by_kind("file")[0]]
        assert isinstance(read, FileNode)
        other = ToolResultNode(
            id="swap", content=(TextPart(text="x"),), replaces=read.id, tool_call_id="c2"
        )
        proposal = honest(working, Replace(target=read.id, replacement=other))
        (problem,) = assert_rejected(working, proposal, "whole_units")
        assert f"its target `{read.id}` is a file" in problem


class TestCallsPaired:
    def test_a_result_that_changes_its_call_id_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replaced result keeps answering the same call id."""
        result = graph[graph.by_kind("tool_result")[0]]
        new = _short(result, tool_call_id="other")
        proposal = honest(working, Replace(target=result.id, replacement=new))
        (problem,) = assert_rejected(working, proposal, "calls_paired")
        assert "changes tool_call_id" in problem

    def test_a_call_replacement_must_keep_its_seq(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """The provider call id is derived from the call's seq, so a replacement keeps it."""
        call = graph[graph.by_kind("tool_call")[0]]
        assert replacement_for(call, (), arguments="{}").seq == call.seq
        bare = replacement_for(call, (), arguments="{}", seq=None)
        proposal = honest(working, Replace(target=call.id, replacement=bare))
        (problem,) = assert_rejected(working, proposal, "calls_paired")
        assert "changes seq" in problem
        kept = replacement_for(call, (), arguments="{}", seq=call.seq)
        working.apply(honest(working, Replace(target=call.id, replacement=kept)))
        for fmt in FORMATS:
            assert validate(Renderer(format=fmt).render(working).payload, fmt) == []
        assert working.answer_to(kept.id) == graph.answer_to(call.id)

    def test_a_call_replacement_must_keep_its_name(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replaced call keeps its tool name."""
        call = graph[graph.by_kind("tool_call")[0]]
        renamed = replacement_for(call, (), arguments="{}", seq=call.seq, name="sh")
        proposal = honest(working, Replace(target=call.id, replacement=renamed))
        assert_rejected(working, proposal, "calls_paired")

    def test_the_state_after_keeps_every_pair(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """After an accepted proposal every call still has its answer in its unit."""
        call = graph.by_kind("tool_call")[0]
        result = graph.by_kind("tool_result")[0]
        working.apply(honest(working, Replace(target=result, replacement=_short(graph[result]))))
        answer = working.answer_to(call)
        assert answer is not None
        assert working.call_of(answer.id) == graph[call]
        assert working.unit_of(answer.id) is working.unit_of(call)


class TestPinnedUntouched:
    def test_dropping_the_system_prompt_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """The pinned system prompt is never dropped."""
        proposal = honest(working, Drop(targets=_unit(graph, "system")))
        (problem,) = assert_rejected(working, proposal, "pinned_untouched")
        assert "is pinned" in problem

    def test_replacing_a_pinned_note_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A pinned note is never rewritten."""
        note = graph[graph.by_kind("note")[0]]
        proposal = honest(working, Replace(target=note.id, replacement=_short(note)))
        assert_rejected(working, proposal, "pinned_untouched")

    def test_a_protected_node_is_rejected(self, graph: ContextGraph, working: WorkingGraph) -> None:
        """Nodes the caller protects are treated like pinned ones."""
        unit = _unit(graph, "assistant", 1)
        proposal = honest(working, Drop(targets=unit))
        problems = check_proposal(proposal, working.view, protected={unit[0]})
        assert problems == [
            f"pinned_untouched: node `{unit[0]}` is protected by the caller but edit 0 (drop) "
            "targets it; fix: leave it out of the proposal: it is never compacted or dropped"
        ]
        with pytest.raises(InvariantViolation, match="protected"):
            working.apply(proposal, protected={unit[0]})
        assert working.audit() == ()


class TestTokensReduced:
    def test_a_growing_replacement_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replacement longer than its target saves nothing."""
        result = graph[graph.by_kind("tool_result")[1]]
        longer = _short(result, text="passed " * 40)
        proposal = honest(working, Replace(target=result.id, replacement=longer))
        (problem,) = assert_rejected(working, proposal, "tokens_reduced")
        assert f"`{result.id}`" in problem

    @pytest.mark.parametrize("field", ["tokens_before", "tokens_after"])
    def test_wrong_token_claims_are_rejected(
        self, graph: ContextGraph, working: WorkingGraph, field: str
    ) -> None:
        """The counts a proposal claims must match the graph's counter."""
        result = graph[graph.by_kind("tool_result")[0]]
        edit = Replace(target=result.id, replacement=_short(result))
        right = honest(working, edit)
        wrong = honest(working, edit, **{field: getattr(right, field) + 1})
        (problem,) = assert_rejected(working, wrong, "tokens_reduced")
        assert f"claims {field}={getattr(right, field) + 1}" in problem

    def test_an_empty_proposal_is_rejected(self, working: WorkingGraph) -> None:
        """A proposal with no edits is not applied."""
        before = working.version
        with pytest.raises(InvariantViolation, match="tokens_reduced: proposal from `test`"):
            working.apply(Proposal(processor="test"))
        assert working.version == before


class TestLineageConsistent:
    def test_a_new_id_that_is_taken_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A new node cannot reuse an existing id."""
        result = graph[graph.by_kind("tool_result")[0]]
        taken = graph.by_kind("user")[0]
        clash = _short(result).model_copy(update={"id": taken})
        proposal = honest(working, Replace(target=result.id, replacement=clash))
        (problem,) = assert_rejected(working, proposal, "lineage_consistent")
        assert f"new node `{taken}` takes an id" in problem

    def test_a_replacement_must_name_its_target(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """`replacement.replaces` is the target."""
        first, second = (graph[i] for i in graph.by_kind("tool_result"))
        wrong = _short(first).model_copy(update={"replaces": second.id})
        proposal = honest(working, Replace(target=first.id, replacement=wrong))
        assert_rejected(working, proposal, "lineage_consistent")

    def test_a_summary_must_abstract_exactly_its_targets(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """`summary.abstracts` equals the Abstract's targets."""
        targets = _unit(graph, "assistant", 1)
        proposal = honest(working, Abstract(targets=targets, summary=summary(targets[:2])))
        assert_rejected(working, proposal, "lineage_consistent")

    def test_a_node_targeted_twice_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """One proposal edits a node at most once."""
        unit = _unit(graph, "assistant", 1)
        proposal = honest(working, Drop(targets=(*unit, unit[0])))
        problems = assert_rejected(working, proposal, "lineage_consistent")
        assert problems == [
            f"lineage_consistent: node `{unit[0]}` is targeted 2 times; fix: replace, "
            "abstract or drop a node at most once per proposal"
        ]


class TestSummariesChecked:
    @pytest.mark.parametrize("meta", [{}, {"checked": "yes"}, {"checked": False}])
    def test_an_unchecked_summary_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph, meta: dict[str, Any]
    ) -> None:
        """Only a summary marked `checked` by the summarizer path is applied."""
        targets = _unit(graph, "assistant", 1)
        proposal = honest(working, Abstract(targets=targets, summary=summary(targets, meta=meta)))
        (problem,) = assert_rejected(working, proposal, "summaries_checked")
        assert "meta['checked'] == True" in problem

    def test_an_abstract_into_a_non_summary_is_rejected(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """An Abstract stands a summary in for its targets, not another kind."""
        targets = _unit(graph, "assistant", 1)
        node = UserNode(id="u-new", content=(TextPart(text="gist"),), abstracts=targets)
        proposal = honest(working, Abstract(targets=targets, summary=node))
        (problem,) = assert_rejected(working, proposal, "summaries_checked")
        assert "abstracts nodes but is a user" in problem

    def test_rewriting_a_summary_needs_the_mark_too(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """A replacement of a summary is a new summary and must be checked as well."""
        targets = _unit(graph, "assistant", 1)
        first = summary(targets, text="a long summary of the work")
        working.apply(honest(working, Abstract(targets=targets, summary=first)))
        shorter = replacement_for(first, [TextPart(text="short")], meta={})
        proposal = honest(working, Replace(target=first.id, replacement=shorter))
        assert_rejected(working, proposal, "summaries_checked")


class TestEnforce:
    def test_returns_the_state_after_and_leaves_the_input_alone(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """`enforce` is pure: the given view is unchanged, the result has the edit."""
        view = working.view
        units = view.units()
        unit = _unit(graph, "assistant", 1)
        after = enforce(honest(working, Drop(targets=unit)), view)
        assert view.units() == units
        assert not after.is_current(unit[0])
        assert after.version == view.version + 1

    def test_every_broken_rule_is_listed(self, graph: ContextGraph, working: WorkingGraph) -> None:
        """A proposal that breaks several rules is rejected with all of them named."""
        system = _unit(graph, "system")
        result = graph.by_kind("tool_result")[0]
        proposal = honest(working, Drop(targets=(*system, result)), tokens_after=3)
        with pytest.raises(InvariantViolation) as caught:
            working.apply(proposal)
        named = set(re.findall(r"^- (\w+):", str(caught.value), re.MULTILINE))
        assert named == {"whole_units", "pinned_untouched", "tokens_reduced"}
        assert str(caught.value).startswith("proposal from `test` rejected:\n")

    def test_a_snapshot_can_be_checked_without_changing_it(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """Checking against a frozen view leaves it frozen and as it was."""
        snapshot = working.snapshot()
        unit = _unit(graph, "assistant", 1)
        after = enforce(honest(working, Drop(targets=unit)), snapshot)
        assert after.frozen and after.version == snapshot.version + 1
        assert snapshot.is_current(unit[0]) and not after.is_current(unit[0])

    def test_the_result_is_checked_for_split_pairs(
        self, graph: ContextGraph, working: WorkingGraph
    ) -> None:
        """The check on the state after catches a pair split however the edits did it."""
        result = graph.by_kind("tool_result")[0]
        call = graph.call_of(result)
        assert call is not None
        proposal = honest(working, Drop(targets=(result,)))
        after = working.view.with_proposal(proposal)  # unchecked, on purpose
        problems = list(pairs_kept(changes_of(proposal), working.view, after))
        assert problems == [
            f"calls_paired: call `{call.id}` would stand current as `{call.id}` and its "
            f"answer `{result}` dropped as `{result}`; fix: edit a call and its answer "
            "together (drop or abstract their whole unit)"
        ]

    def test_rules_are_documented(self) -> None:
        """Every rule has a one-line description."""
        assert list(RULES) == [
            "targets_current",
            "whole_units",
            "calls_paired",
            "pinned_untouched",
            "tokens_reduced",
            "lineage_consistent",
            "summaries_checked",
            "safety_replaces_only",
            "text_encodable",
            "restores_checked",
        ]

    def test_the_rules_table_is_read_only(self) -> None:
        """The public table of rules cannot be changed by a caller."""
        with pytest.raises(TypeError):
            RULES["targets_current"] = "anything goes"  # type: ignore[index]
        assert RULES["targets_current"].startswith("every target is in the current view")


def _short(node: Node, text: str = "short", **updates: Any) -> Node:
    return replacement_for(node, [TextPart(text=text)], **updates)


class TestSafetyEdits:
    def _session(self) -> tuple[ContextGraph, WorkingGraph]:
        from context_graph.testing import WordCounter

        graph = ContextGraph(counter=WordCounter())
        graph.add_system("deploy with key AKIAQ7X2M4KD9PLR3NZT please")
        graph.add_user("the password is pw")
        graph.add_assistant(tool_calls=[{"id": "c", "name": "bash", "arguments": {"cmd": "env"}}])
        graph.add_tool_result("c", "DB_PASSWORD=hunter2hunter2hunter2")
        return graph, WorkingGraph(graph)

    def test_redaction_may_touch_pinned_nodes_and_grow(self) -> None:
        """A safety proposal edits the pinned system prompt and is applied."""
        import anyio

        from processors import ProcessorContext, SecretRedactor

        graph, working = self._session()
        ctx = ProcessorContext(graph=working.snapshot(), tokens=working.token_cache)
        targets = [graph[i] for i in graph.transcript()]
        proposal = anyio.run(SecretRedactor().propose, targets, ctx)
        assert proposal.purpose == "safety"
        assert any(graph[e.target].pinned for e in proposal.edits)  # type: ignore[union-attr]
        working.apply(proposal)
        system = working[working.units()[0].node_ids[0]]
        assert "AKIA" not in system.text

    def test_safety_proposals_may_only_replace(self) -> None:
        """A safety proposal that drops a unit is refused under safety_replaces_only."""
        from processors import Drop, Proposal

        graph, working = self._session()
        unit = graph.units()[1]
        proposal = Proposal(
            processor="sloppy",
            edits=(Drop(targets=unit.node_ids),),
            tokens_before=sum(graph.tokens(i) for i in unit.node_ids),
            purpose="safety",
        )
        problems = working.check(proposal)
        assert any(p.startswith("safety_replaces_only") for p in problems)

    def test_compaction_still_may_not_touch_pinned_nodes(self) -> None:
        """Without the safety purpose, editing the pinned system prompt is refused."""
        from context_graph import TextPart
        from processors import Proposal, Replace, replacement_for

        graph, working = self._session()
        system = graph[graph.transcript()[0]]
        new = replacement_for(system, [TextPart(text="deploy")])
        proposal = Proposal(
            processor="compactor",
            edits=(Replace(target=system.id, replacement=new),),
            tokens_before=graph.tokens(system.id),
            tokens_after=working.token_cache.count_node(new),
        )
        assert any(p.startswith("pinned_untouched") for p in working.check(proposal))


def _walked(proposal: Proposal) -> list[str]:
    """`text_encodable` as a walk of every value of every new node (the walk it skips)."""
    from orchestrator.working.rules import _unencodable

    found: list[str] = []
    for edit in proposal.edits:
        node = edit.replacement if isinstance(edit, Replace) else None
        if node is None:
            continue
        stack: list[tuple[object, str]] = [(node.model_dump(), "")]
        while stack:
            value, where = stack.pop()
            if isinstance(value, dict):
                stack.extend((v, f"{where}.{k}".lstrip(".")) for k, v in value.items())
            elif isinstance(value, list | tuple):
                stack.extend((v, f"{where}.{i}") for i, v in enumerate(value))
            elif isinstance(value, str) and (why := _unencodable(value)) is not None:
                found.append(f"`{node.id}` {why} in `{where}`")
                break
    return found


class TestTextEncodable:
    def test_an_encodable_node_is_not_walked(
        self, graph: ContextGraph, working: WorkingGraph, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A new node whose strings all encode is cleared in one pass: no value is walked."""
        from orchestrator.working import rules

        result = graph.by_kind("tool_result")[0]
        new = _short(graph[result], "short " * 20, meta={"note": "kept", "lines": [1, "two"]})
        proposal = honest(working, Replace(target=result, replacement=new))
        calls: list[str] = []
        unencodable = rules._unencodable

        def counting(text: str) -> str | None:
            calls.append(text)
            return unencodable(text)

        monkeypatch.setattr(rules, "_unencodable", counting)
        assert list(rules.text_encodable(proposal, changes_of(proposal))) == []
        assert calls == [proposal.note]

    @settings(max_examples=60, deadline=None)
    @given(
        text=st.text(st.characters(codec=None, blacklist_categories=()), max_size=8),
        meta=st.dictionaries(
            st.text(max_size=3),
            st.one_of(st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010))),
            max_size=3,
        ),
    )
    def test_finds_what_the_walk_finds(self, text: str, meta: dict[str, str]) -> None:
        """Whatever the text and meta (lone surrogates too), the rule says what the walk says."""
        from orchestrator.working.rules import text_encodable

        graph = ContextGraph(counter=WordCounter())
        graph.add_assistant("look", tool_calls=[{"id": "c1", "name": "bash"}])
        result = graph.add_tool_result("c1", "the output of the command")
        new = graph[result].model_copy(
            update={
                "id": f"{result}~new",
                "replaces": result,
                "meta": meta,
                "content": (TextPart(text=text),),
            }
        )
        proposal = Proposal(processor="p", edits=(Replace(target=result, replacement=new),))
        found = list(text_encodable(proposal, changes_of(proposal)))
        assert [f.split("new node ", 1)[1].rsplit("; fix:", 1)[0] for f in found] == _walked(
            proposal
        )
