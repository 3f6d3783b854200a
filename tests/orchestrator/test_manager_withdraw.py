"""`ContextManager.withdraw`: withdrawn nodes leave the working view, its summaries included."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from context_graph import GraphError, IngestError, InvariantViolation, TextPart
from context_graph.graph.nodes import SummaryNode
from context_graph.testing import WordCounter
from context_graph.validate import validate
from orchestrator import ContextManager
from orchestrator.policy import Policy
from orchestrator.withdrawal import WITHDRAW_PROCESSOR
from processors import Abstract, Drop, Proposal
from tests.orchestrator.policy_keywords import make_manager

FORMATS = ("openai", "anthropic", "gemini", "responses")
LONG = " ".join(f"word{i}" for i in range(40))


def _manager(**options: Any) -> tuple[ContextManager, list[str]]:
    """A manager with a system prompt and four user turns; the turns' ids."""
    manager = make_manager(counter=WordCounter(), **options)
    manager.add_system("be careful")
    return manager, [manager.add_user(f"turn-{n}-mark {LONG}") for n in range(4)]


def _summarize(manager: ContextManager, ids: Sequence[str], text: str) -> str:
    """Abstract `ids` into a summary reading `text`, through the invariant checker."""
    view = manager.working.snapshot()
    node = SummaryNode(
        id=f"summary-{len(ids)}",
        content=(TextPart(text=text),),
        abstracts=tuple(ids),
        meta={"checked": True},
    )
    count = view.token_cache.count_node
    manager.working.apply(
        Proposal(
            processor="summarize",
            edits=(Abstract(targets=tuple(ids), summary=node),),
            tokens_before=sum(count(view[i]) for i in ids),
            tokens_after=count(node),
            base_version=view.version,
        )
    )
    return node.id


def _drop(manager: ContextManager, node_id: str) -> None:
    view = manager.working.snapshot()
    manager.working.apply(
        Proposal(
            processor="drop",
            edits=(Drop(targets=(node_id,)),),
            tokens_before=view.tokens(node_id),
            tokens_after=0,
            base_version=view.version,
        )
    )


def _renders(manager: ContextManager) -> list[str]:
    """The manager's request in every format, as JSON text (each checked valid)."""
    texts = []
    for fmt in FORMATS:
        payload = manager.render_sync(format=fmt).payload
        assert validate(payload, fmt) == [], fmt
        texts.append(json.dumps(payload))
    return texts


class TestSummaries:
    def test_a_summary_standing_for_others_is_undone(self) -> None:
        """The summary leaves with its withdrawn source; the others come back as recorded."""
        manager, turns = _manager()
        summary = _summarize(manager, turns[:3], "summary quoting turn-1-mark")
        manager.withdraw([turns[1]])
        audit = manager.working.audit()
        assert (audit[-1].processor, audit[-1].removed) == (WITHDRAW_PROCESSOR, (summary,))
        current = manager.working.current_ids()
        assert summary not in current and turns[1] not in current
        assert {turns[0], turns[2], turns[3]} <= set(current)
        assert all("turn-1-mark" not in text for text in _renders(manager))

    def test_a_summary_of_withdrawn_nodes_only_leaves_with_them(self) -> None:
        """Nothing is undone when every node the summary stands for goes."""
        manager, turns = _manager()
        summary = _summarize(manager, turns[1:3], "summary quoting turn-1-mark")
        applied = len(manager.working.audit())
        manager.withdraw(turns[1:3])
        assert len(manager.working.audit()) == applied
        assert summary not in manager.working.current_ids()
        assert all("turn-1-mark" not in text for text in _renders(manager))

    def test_a_refused_withdrawal_undoes_nothing(self) -> None:
        """An unknown id is refused before any summary is undone."""
        manager, turns = _manager()
        summary = _summarize(manager, turns[:3], "summary")
        audit = manager.working.audit()
        with pytest.raises(IngestError, match="no node has id `nope`"):
            manager.withdraw([turns[1], "nope"])
        assert manager.working.audit() == audit
        assert summary in manager.working.current_ids()
        assert manager.raw.withdrawn() == ()

    def test_a_summary_that_cannot_be_undone_refuses_the_withdrawal(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When the checker refuses the restore, the error names both and nothing goes."""
        manager, turns = _manager()
        summary = _summarize(manager, turns[:3], "summary")

        def refuse(proposal: Proposal, **_: Any) -> Any:
            raise InvariantViolation("refused for the test")

        monkeypatch.setattr(manager.working, "apply", refuse)
        with pytest.raises(GraphError, match=f"`{turns[1]}`.*`{summary}`.*nothing was withdrawn"):
            manager.withdraw([turns[1]])
        assert manager.raw.withdrawn() == ()
        assert manager.stats().proposals_rejected == 1


class TestView:
    def test_the_projection_equals_a_fresh_one(self) -> None:
        """After withdrawals over compacted and plain nodes, the kept view is the fresh one."""
        manager, turns = _manager()
        manager.add_assistant("calling", tool_calls=[{"id": "c1", "name": "ls"}])
        result = manager.add_tool_result("c1", "listing-mark")
        manager.render_sync()
        _drop(manager, turns[0])
        manager.withdraw([turns[0], result])
        view = manager.working.view
        assert view.units() == view.fresh_copy().units()
        assert manager.working.answer_to(manager.raw.unanswered_calls()[0]) is None
        assert all("listing-mark" not in text for text in _renders(manager))

    def test_context_expand_never_brings_a_withdrawn_node_back(self) -> None:
        """A dropped node that was then withdrawn is refused to the model by name."""
        manager, turns = _manager(agent_tools=True)
        _drop(manager, turns[1])
        manager.withdraw([turns[1]])
        text = manager.handle_tool_call_sync("context_expand", {"id": turns[1]})
        assert "was withdrawn" in text
        assert turns[1] not in manager.working.current_ids()

    def test_context_expand_of_an_undone_summary_brings_nothing_withdrawn(self) -> None:
        """The id of a summary a withdrawal undid names no withdrawn content."""
        manager, turns = _manager(agent_tools=True)
        summary = _summarize(manager, turns[:3], "summary quoting turn-1-mark")
        manager.withdraw([turns[1]])
        manager.handle_tool_call_sync("context_expand", {"id": summary})
        assert turns[1] not in manager.working.current_ids()
        assert all("turn-1-mark" not in text for text in _renders(manager))


class TestStore:
    def test_a_withdrawal_survives_a_restart(self, tmp_path: Path) -> None:
        """The reopened session has the same withdrawn nodes and the same request."""
        path = tmp_path / "session.db"
        manager = ContextManager.open(
            path, format="responses", counter=WordCounter(), policy=Policy()
        )
        manager.add_system("rules")
        turns = [manager.add_user(f"turn-{n}-mark {LONG}") for n in range(3)]
        manager.add_assistant("calling", tool_calls=[{"id": "c1", "name": "ls"}])
        result = manager.add_tool_result("c1", "listing-mark")
        _summarize(manager, turns[:2], "summary quoting turn-0-mark")
        manager.withdraw([turns[0], result])
        before = manager.render_sync().payload
        manager.close()
        reopened = ContextManager.open(
            path, format="responses", counter=WordCounter(), policy=Policy()
        )
        try:
            assert reopened.raw.withdrawn() == (turns[0], result)
            assert reopened.render_sync().payload == before
            assert "turn-0-mark" not in json.dumps(before)
        finally:
            reopened.close()
