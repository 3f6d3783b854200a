"""`ContextGraph(journal=...)`: each batch is ingested inside the journal, as one step."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import NoReturn

import pytest

from context_graph import AgentEvent, ContextGraph, IngestError, ToolResult, UserTurn
from context_graph.errors import StoreError
from context_graph.graph.journal import IngestJournal
from context_graph.testing import WordCounter, graph_snapshot


class _Recording:
    """A journal that records what the graph does with it, and fails where told."""

    def __init__(self, graph: list[ContextGraph], fail: str = "") -> None:
        self.graph = graph
        self.fail = fail
        self.calls: list[tuple[str, object]] = []

    @contextlib.contextmanager
    def ingesting(self, batch: Sequence[AgentEvent]) -> Iterator[None]:
        self.calls.append(("enter", (tuple(batch), len(self.graph[0]))))
        if self.fail == "enter":
            raise StoreError("journal", "cannot write")
        try:
            yield
        except BaseException as exc:
            self.calls.append(("undo", type(exc).__name__))
            raise
        self.calls.append(("keep", len(self.graph[0])))
        if self.fail == "keep":
            raise StoreError("journal", "the commit failed")

    def refuse(self, edit: str) -> NoReturn:
        self.calls.append(("refuse", edit))
        raise StoreError("journal", f"{edit} has no entry")


def _journaled(fail: str = "") -> tuple[ContextGraph, _Recording]:
    holder: list[ContextGraph] = []
    journal = _Recording(holder, fail)
    checked: IngestJournal = journal
    holder.append(ContextGraph(counter=WordCounter(), journal=checked))
    return holder[0], journal


class TestIngestJournal:
    def test_each_batch_is_added_inside_the_journal(self) -> None:
        """The journal is entered with the validated batch before a node exists, kept after."""
        graph, journal = _journaled()
        graph.ingest([{"type": "user", "content": "one two"}])
        graph.ingest([])
        first = (UserTurn(content="one two"),)
        assert journal.calls == [
            ("enter", (first, 0)),
            ("keep", 1),
            ("enter", ((), 1)),
            ("keep", 1),
        ]

    def test_a_refusal_on_entering_changes_nothing(self) -> None:
        """A journal that refuses the batch leaves the graph as it was."""
        graph, _ = _journaled(fail="enter")
        before = graph_snapshot(graph)
        with pytest.raises(StoreError, match="cannot write"):
            graph.add_user("refused")
        assert graph_snapshot(graph) == before
        assert len(graph) == 0

    def test_a_batch_the_graph_refuses_is_undone_in_the_journal(self) -> None:
        """An inconsistent batch raises inside the block, so the journal undoes its write."""
        graph, journal = _journaled()
        with pytest.raises(IngestError):
            graph.ingest([ToolResult(call_id="never-called", content="x")])
        assert [name for name, _ in journal.calls] == ["enter", "undo"]
        assert len(graph) == 0

    def test_malformed_dicts_are_refused_before_the_journal(self) -> None:
        """Events that do not validate never reach the journal."""
        graph, journal = _journaled()
        with pytest.raises(IngestError, match="message 1"):
            graph.ingest([{"type": "user", "content": "hi"}, {"type": "robot"}])
        assert journal.calls == []

    def test_a_failure_to_keep_the_write_is_raised(self) -> None:
        """When the journal cannot keep a write after the ingest, the caller hears of it."""
        graph, _ = _journaled(fail="keep")
        with pytest.raises(StoreError, match="commit failed"):
            graph.add_user("in memory, not in the journal")

    def test_edits_without_an_entry_are_refused_first(self) -> None:
        """`add_derived` and `add_edge` ask the journal, which refuses; nothing is added."""
        graph, journal = _journaled()
        first, second = graph.add_user("one"), graph.add_user("two")
        with pytest.raises(StoreError, match="add_edge has no entry"):
            graph.add_edge(second, first, "supersedes")
        copy = graph[first].model_copy(update={"id": "copy", "seq": None})
        with pytest.raises(StoreError, match="add_derived has no entry"):
            graph.add_derived(copy)
        assert "copy" not in graph and graph.derived() == ()
        assert [c for c in journal.calls if c[0] == "refuse"] == [
            ("refuse", "add_edge"),
            ("refuse", "add_derived"),
        ]

    def test_a_graph_without_a_journal_takes_every_edit(self) -> None:
        """Without a journal, derived nodes and explicit edges are added as before."""
        graph = ContextGraph(counter=WordCounter())
        first, second = graph.add_user("one"), graph.add_user("two")
        graph.add_edge(second, first, "supersedes")
        graph.add_derived(graph[first].model_copy(update={"id": "copy", "seq": None}))
        assert graph.targets(second, "supersedes") == (first,)
        assert graph.derived() == ("copy",)
