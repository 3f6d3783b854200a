"""The session store survives any accepted input: what is applied is what can be read back."""

from __future__ import annotations

import json
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import (
    AssistantTurn,
    IngestError,
    InvariantViolation,
    ToolCall,
    ToolResult,
    UserTurn,
)
from context_graph.errors import StoreError
from context_graph.graph.content import TextPart
from context_graph.graph.json_limits import MAX_DEPTH, check_json_value
from context_graph.graph.nodes import Node, SummaryNode
from context_graph.testing import ScriptedSummarizer, WordCounter, graph_snapshot
from orchestrator import ContextManager
from orchestrator.persistence import SQLiteStore
from orchestrator.policy import Policy
from processors.base import Abstract, Drop, Proposal
from processors.summarize import HistorySummarizer
from tests.orchestrator.policy_keywords import make_manager, open_manager


@pytest.fixture(name="path")
def path_fixture(tmp_path: Path) -> Path:
    return tmp_path / "session.db"


def _nested(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _session(manager: ContextManager | Any) -> None:
    """A short coding session whose history a summary can take."""
    manager.add_system("be brief")
    manager.add_user("Fix the failing test in parser.py please")
    for i in range(6):
        call = ToolCall(id=f"c{i}", name="bash", arguments={"cmd": f"pytest -k case{i}"})
        manager.ingest([AssistantTurn(content=f"step {i}: run the tests", tool_calls=(call,))])
        manager.ingest([ToolResult(call_id=f"c{i}", content=f"case{i} failed: boom " * 30)])
    manager.add_user("now also fix the docs")


def _view(manager: ContextManager) -> tuple[Any, ...]:
    return (
        graph_snapshot(manager.raw),
        manager.working.version,
        manager.working.audit(),
        manager.working.view.transcript(),
    )


class TestEventsThatCannotBeReadBack:
    @pytest.mark.parametrize(
        ("meta", "problem"),
        [
            ({"a": _nested(230)}, "recursion limit"),
            ({"n": 10**4400}, "number out of range"),
            ({"s": "lone \ud800"}, "does not encode"),
        ],
        ids=["nested-230", "int-4400-digits", "lone-surrogate"],
    )
    def test_refused_before_ingest_and_the_file_still_opens(
        self, path: Path, meta: dict[str, Any], problem: str
    ) -> None:
        """An event the journal could not decode is refused with its index; memory and file keep."""
        manager = ContextManager.open(path, durable=False, counter=WordCounter(), policy=Policy())
        manager.add_user("first")
        before = _view(manager)
        with pytest.raises(IngestError, match=problem) as caught:
            manager.ingest([UserTurn(content="ok"), UserTurn(content="deep", meta=meta)])
        assert caught.value.location.index == 1
        assert _view(manager) == before
        manager.add_user("later")
        manager.close()
        again = ContextManager.open(path, durable=False, counter=WordCounter(), policy=Policy())
        assert [node.text for node in again.raw] == ["first", "later"]
        again.close()


class TestCandidatesThatCannotBeEncoded:
    def _manager(self, path: Path | None) -> ContextManager:
        summarizer = ScriptedSummarizer(["The agent ran the tests \ud800 six times."] * 3)
        options: dict[str, Any] = {
            "pipeline": [HistorySummarizer()],
            "summarizer": summarizer,
            "counter": WordCounter(),
            "clock": lambda: 1e9,
        }
        if path is None:
            return make_manager(**options)
        return open_manager(path, durable=False, **options)

    @pytest.mark.parametrize("stored", [False, True], ids=["in-memory", "stored"])
    def test_summary_with_a_lone_surrogate_is_rejected(self, path: Path, stored: bool) -> None:
        """A summary holding a lone surrogate is refused: nothing applied, the request is UTF-8."""
        manager = self._manager(path if stored else None)
        _session(manager)
        before = _view(manager)
        reasons: list[str] = []
        manager.bus.connect(
            "proposal_rejected", lambda sender, **kw: reasons.append(str(kw["reason"]))
        )
        run = anyio.run(manager.compact)
        assert (run.applied, run.rejected) == (0, 1)
        assert any("text_encodable" in reason for reason in reasons)
        assert _view(manager) == before
        payload = manager.render_sync().payload
        json.dumps(payload, ensure_ascii=False).encode("utf-8")  # raises on a surrogate
        if stored:
            manager.add_user("still journaled")
            after = _view(manager)
            manager.close()
            again = self._manager(path)
            assert _view(again) == after
            again.close()

    def test_store_refuses_a_proposal_it_could_not_read_back(self, path: Path) -> None:
        """A proposal the checker passes but the journal could not decode changes nothing."""
        with SQLiteStore.open(path, counter=WordCounter(), durable=False) as store:
            session = store.restore()
            _session(session.raw)
            working = session.working
            view = working.snapshot()
            unit = next(u for u in view.units() if u.kind == "assistant")
            targets = unit.node_ids
            summary = _summary(targets, meta={"checked": True, "x": _nested(230)})
            proposal = Proposal(
                processor="deep",
                edits=(Abstract(targets=targets, summary=summary),),
                tokens_before=sum(view.tokens(t) for t in targets),
                tokens_after=working.token_cache.count_node(summary),
                base_version=view.version,
            )
            assert working.check(proposal) == []
            before = (working.version, working.audit(), working.current_ids())
            with pytest.raises(InvariantViolation, match=r"journal_readable.*recursion limit"):
                working.apply(proposal)
            assert (working.version, working.audit(), working.current_ids()) == before
            assert store.failed is None
            session.raw.add_user("the journal goes on")
        with SQLiteStore.open(path, counter=WordCounter(), read_only=True) as store:
            restored = store.restore()
            assert restored.working.current_ids() == session.working.current_ids()


def _summary(targets: tuple[str, ...], meta: dict[str, Any]) -> Node:
    return SummaryNode(
        id="summary-deep",
        content=(TextPart(text="short"),),
        abstracts=targets,
        meta=meta,
    )


def _fail_once(store: SQLiteStore, action: int, argument: str) -> None:
    """Make the store's next statement doing `action` on `argument` fail, once.

    SQLite asks the connection's authorizer as it prepares each statement; a denied one
    raises `sqlite3.DatabaseError` ("not authorized"), as a full disk would raise its own.
    """
    armed = [True]

    def authorize(code: int, first: str | None, *_: str | None) -> int:
        if armed[0] and code == action and first == argument:
            armed[0] = False
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    store.connection.set_authorizer(authorize)


_INSERT_ENTRY = (sqlite3.SQLITE_INSERT, "journal")
_COMMIT = (sqlite3.SQLITE_TRANSACTION, "COMMIT")


class TestFailedWrites:
    def _store(self, path: Path, fails: tuple[int, str]) -> tuple[SQLiteStore, Any]:
        store = SQLiteStore.open(path, counter=WordCounter(), durable=False)
        session = store.restore()
        _session(session.raw)
        _fail_once(store, *fails)
        return store, session

    def test_failed_insert_leaves_memory_as_it_was_and_the_store_usable(self, path: Path) -> None:
        """A write that fails before commit changes nothing; the next writes are journaled."""
        store, session = self._store(path, _INSERT_ENTRY)
        before = graph_snapshot(session.raw)
        with pytest.raises(StoreError, match="not authorized"):
            session.raw.add_user("lost")
        assert graph_snapshot(session.raw) == before
        proposal = _drop_first(session.working)
        session.working.apply(proposal)
        _fail_once(store, *_INSERT_ENTRY)
        version, audit = session.working.version, session.working.audit()
        with pytest.raises(StoreError, match="not authorized"):
            session.working.apply(_drop_first(session.working))
        assert (session.working.version, session.working.audit()) == (version, audit)
        assert store.failed is None
        session.raw.add_user("kept")
        store.close()
        with SQLiteStore.open(path, counter=WordCounter(), read_only=True) as reader:
            restored = reader.restore()
            assert graph_snapshot(restored.raw) == graph_snapshot(session.raw)
            assert restored.working.audit() == session.working.audit()

    def test_failed_commit_marks_the_store_failed_and_nothing_is_written_past_it(
        self, path: Path
    ) -> None:
        """A commit that fails after memory moved on stops the journal, naming the failure."""
        store, session = self._store(path, _COMMIT)
        with pytest.raises(StoreError, match="not authorized"):
            session.raw.add_user("in memory only")
        assert store.failed is not None and "not authorized" in store.failed
        with pytest.raises(StoreError, match=r"could not be written.*not authorized"):
            session.raw.add_user("refused")
        with pytest.raises(StoreError, match="ahead of the file"):
            store.put_state("k", 1)
        store.close()
        with SQLiteStore.open(path, counter=WordCounter()) as reopened:
            texts = [node.text for node in reopened.restore().raw]
            assert "in memory only" not in texts and "refused" not in texts

    def test_failed_run_write_marks_the_store_failed(self, path: Path) -> None:
        """A compaction run whose one transaction fails leaves the file before the run."""
        manager = ContextManager.open(
            path,
            durable=False,
            counter=WordCounter(),
            policy=Policy(
                pipeline=[HistorySummarizer()],
                summarizer=ScriptedSummarizer(["The agent ran the tests six times."]),
            ),
        )
        _session(manager)
        store = manager.store
        assert isinstance(store, SQLiteStore)
        _fail_once(store, *_INSERT_ENTRY)
        with pytest.raises(StoreError, match="not authorized"):
            anyio.run(manager.compact)
        with pytest.raises(StoreError, match="ahead of the file"):
            manager.add_user("refused")
        store.close()
        again = ContextManager.open(path, durable=False, counter=WordCounter(), policy=Policy())
        assert again.working.audit() == ()
        again.close()


def _drop_first(working: Any) -> Proposal:
    view = working.snapshot()
    unit = next(u for u in view.units() if u.kind == "assistant")
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=unit.node_ids),),
        tokens_before=sum(view.tokens(t) for t in unit.node_ids),
        base_version=view.version,
    )


# -- anything accepted restores --------------------------------------------------------------

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**3999), max_value=10**3999),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
)
_SHALLOW = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
_DEEP = st.builds(_nested, st.integers(0, MAX_DEPTH), _SCALARS)
_META = st.dictionaries(st.text(max_size=8), st.one_of(_SHALLOW, _DEEP), max_size=3)
_TEXT = st.text(min_size=1, max_size=40)


def _accepted(meta: dict[str, Any]) -> bool:
    try:
        check_json_value(meta, path="meta")
    except IngestError:
        return False
    return True


@settings(max_examples=40, deadline=None)
@given(
    turns=st.lists(st.tuples(_TEXT, _META.filter(_accepted)), min_size=1, max_size=5),
    big=st.integers(min_value=10**3990, max_value=10**3999),
)
def test_anything_ingest_accepts_restores_after_close(
    turns: list[tuple[str, dict[str, Any]]], big: int
) -> None:
    """Events within the JSON bounds (deep meta, any Unicode, big ints) restore exactly."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "session.db"
        manager = ContextManager.open(path, durable=False, counter=WordCounter(), policy=Policy())
        manager.add_user("start", meta={"usage": {"tokens": big}})
        for text, meta in turns:
            manager.ingest([AssistantTurn(content=text, meta=meta), UserTurn(content=text)])
        nodes = [node.model_dump() for node in manager.raw]
        snapshot = graph_snapshot(manager.raw)
        manager.close()
        again = ContextManager.open(path, durable=False, counter=WordCounter(), policy=Policy())
        assert graph_snapshot(again.raw) == snapshot
        assert [node.model_dump() for node in again.raw] == nodes
        again.close()
