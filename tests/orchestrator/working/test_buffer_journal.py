"""`WorkingGraph(journal=...)`: each apply is held by the journal, its swap written in it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

from context_graph import ContextGraph, InvariantViolation
from context_graph.errors import StoreError
from context_graph.testing import WordCounter
from orchestrator.working.buffer import ApplyJournal, AuditEntry, WorkingGraph
from processors.base import Drop, Proposal


class _Recording:
    """A journal that records what the working graph does with it, and fails where told."""

    def __init__(self, fail: str = "") -> None:
        self.fail = fail
        self.calls: list[tuple[object, ...]] = []
        self.working: WorkingGraph | None = None

    def _version(self) -> int:
        assert self.working is not None
        return self.working.version

    @contextlib.contextmanager
    def applying(self) -> Iterator[None]:
        self.calls.append(("applying", self._version()))
        if self.fail == "applying":
            raise StoreError("journal", "closed")
        try:
            yield
        except BaseException as exc:
            self.calls.append(("applying raised", type(exc).__name__))
            raise
        self.calls.append(("applied", self._version()))

    @contextlib.contextmanager
    def swapping(
        self, proposals: tuple[Proposal, ...], audit: tuple[AuditEntry, ...]
    ) -> Iterator[None]:
        self.calls.append(("swapping", proposals, audit, self._version()))
        if self.fail == "swapping":
            raise InvariantViolation("journal_readable: cannot be kept")
        yield
        self.calls.append(("swapped", self._version()))


def _working(fail: str = "") -> tuple[WorkingGraph, _Recording]:
    graph = ContextGraph(counter=WordCounter())
    graph.add_user("run the tests")
    graph.add_assistant("running", tool_calls=[{"id": "c1", "name": "bash"}])
    graph.add_tool_result("c1", "passed " * 30)
    graph.add_user("thanks")
    journal = _Recording(fail)
    checked: ApplyJournal = journal
    working = WorkingGraph(graph, clock=lambda: 5.0, journal=checked)
    journal.working = working
    return working, journal


def _drop(working: WorkingGraph) -> Proposal:
    view = working.snapshot()
    unit = next(u for u in view.units() if u.kind == "assistant")
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=unit.node_ids),),
        tokens_before=sum(view.tokens(t) for t in unit.node_ids),
        base_version=view.version,
    )


class TestApplyJournal:
    def test_the_swap_is_written_inside_the_held_apply(self) -> None:
        """`applying` holds the whole apply; `swapping` gets the batch right before the swap."""
        working, journal = _working()
        before = working.version
        proposal = _drop(working)
        entry = working.apply(proposal)
        assert journal.calls == [
            ("applying", before),
            ("swapping", (proposal,), (entry,), before),
            ("swapped", entry.version),
            ("applied", entry.version),
        ]

    def test_a_refusal_comes_before_any_check(self) -> None:
        """A journal that refuses the apply is heard before a broken proposal is checked."""
        working, _ = _working(fail="applying")
        broken = _drop(working).model_copy(update={"tokens_before": 1})
        with pytest.raises(StoreError, match="closed"):
            working.apply(broken)
        assert working.audit() == ()

    def test_a_swap_the_journal_cannot_write_changes_nothing(self) -> None:
        """When the batch cannot be written, the working state stays as it was."""
        working, _ = _working(fail="swapping")
        version, ids = working.version, working.current_ids()
        with pytest.raises(InvariantViolation, match="journal_readable"):
            working.apply(_drop(working))
        assert (working.version, working.current_ids(), working.audit()) == (version, ids, ())

    def test_a_rejected_proposal_never_reaches_the_swap(self) -> None:
        """A proposal that breaks a rule raises inside `applying`, before `swapping`."""
        working, journal = _working()
        with pytest.raises(InvariantViolation):
            working.apply(_drop(working).model_copy(update={"tokens_before": 1}))
        assert [call[0] for call in journal.calls] == ["applying", "applying raised"]

    def test_an_empty_batch_is_held_but_not_written(self) -> None:
        """Applying no proposal enters `applying` and writes no entry."""
        working, journal = _working()
        assert working.apply_batch(()) == ()
        assert [call[0] for call in journal.calls] == ["applying", "applied"]
