"""The `SessionStore` contract, run against every backend `open_store` reaches.

Each test names a guarantee of `orchestrator.persistence.protocol` and checks it through
the protocol's members and the restored graphs only, so a second backend (PostgreSQL,
issue 19) runs the same tests by adding a `Backend` to `BACKENDS`: a way to make fresh
locations, and two faults to inject. PostgreSQL's faults are the server's own: a trigger
that refuses the next log row as it is inserted, and a deferred constraint trigger that
refuses it at COMMIT, each armed for one row by a sequence (which no rollback undoes).
"""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph import AgentEvent, AssistantTurn, ToolCall, ToolResult, UserTurn
from context_graph.errors import (
    ConfigurationError,
    IngestError,
    InvariantViolation,
    StoreError,
)
from context_graph.graph.nodes import SummaryNode, TextPart
from context_graph.render import Renderer
from context_graph.testing import WordCounter, graph_snapshot
from orchestrator.persistence import (
    PostgresStore,
    RestoredSession,
    SessionStore,
    SQLiteStore,
    open_store,
)
from orchestrator.working.buffer import WorkingGraph
from processors.base import Abstract, Drop, Proposal


def _sqlite_fault(action: int, argument: str) -> Callable[[SessionStore], None]:
    """Make the store's next statement doing `action` on `argument` fail, once."""

    def inject(store: SessionStore) -> None:
        assert isinstance(store, SQLiteStore)
        armed = [True]

        def authorize(code: int, first: str | None, *_: str | None) -> int:
            if armed[0] and code == action and first == argument:
                armed[0] = False
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_OK

        store.connection.set_authorizer(authorize)

    return inject


_PG_FAULTS = """
CREATE SEQUENCE IF NOT EXISTS cg_fault_write;
CREATE SEQUENCE IF NOT EXISTS cg_fault_commit;
CREATE TABLE IF NOT EXISTS cg_fault (session text, kind text, tick bigint);
CREATE OR REPLACE FUNCTION cg_fault_fire() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE current_tick bigint := nextval('cg_fault_' || TG_ARGV[0]);
BEGIN
  IF EXISTS (SELECT 1 FROM cg_fault f JOIN cg_sessions s ON s.name = f.session
             WHERE s.id = NEW.session_id AND f.kind = TG_ARGV[0] AND f.tick = current_tick) THEN
    RAISE EXCEPTION 'injected % fault', TG_ARGV[0];
  END IF;
  RETURN NEW;
END $$;
CREATE OR REPLACE TRIGGER cg_fault_write BEFORE INSERT ON cg_log
  FOR EACH ROW EXECUTE FUNCTION cg_fault_fire('write');
DROP TRIGGER IF EXISTS cg_fault_commit ON cg_log;
CREATE CONSTRAINT TRIGGER cg_fault_commit AFTER INSERT ON cg_log
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION cg_fault_fire('commit');
"""


def _pg_fault(server: Any, kind: str) -> Callable[[SessionStore], None]:
    """Make the next log row the store inserts fail (`write`) or fail at COMMIT (`commit`)."""

    def inject(store: SessionStore) -> None:
        assert isinstance(store, PostgresStore)
        server.execute(_PG_FAULTS)
        server.execute(
            "INSERT INTO cg_fault SELECT %s, %s, CASE WHEN is_called THEN last_value + 1"
            f" ELSE last_value END FROM cg_fault_{kind}",
            (store.session, kind),
        )

    return inject


@dataclass(frozen=True)
class Backend:
    """How the contract reaches one backend."""

    name: str
    location: Callable[[Path], str]
    """A fresh location inside a test's own directory."""
    fail_next_write: Callable[[SessionStore], None]
    """Make the next entry's write fail before anything of it is kept."""
    fail_next_commit: Callable[[SessionStore], None]
    """Make the next write fail as it is kept, after memory moved on."""
    server: bool = False
    """The three above are bound to the session's PostgreSQL server (`postgres`)."""


BACKENDS = [
    Backend(
        "sqlite",
        lambda directory: str(directory / "session.db"),
        _sqlite_fault(sqlite3.SQLITE_INSERT, "journal"),
        _sqlite_fault(sqlite3.SQLITE_TRANSACTION, "COMMIT"),
    ),
    Backend("postgres", str, lambda _: None, lambda _: None, server=True),
]
Opener = Callable[..., SessionStore]


@pytest.fixture(name="backend", params=BACKENDS, ids=lambda backend: backend.name, scope="session")
def backend_fixture(request: pytest.FixtureRequest) -> Backend:
    backend: Backend = request.param
    if not backend.server:
        return backend
    server = request.getfixturevalue("postgres")
    return replace(
        backend,
        location=lambda _: server.location(),
        fail_next_write=_pg_fault(server, "write"),
        fail_next_commit=_pg_fault(server, "commit"),
    )


@pytest.fixture(name="reopen")
def reopen_fixture(backend: Backend, tmp_path: Path) -> Iterator[Opener]:
    """Opens the test's one location (read-only if asked); closes every store at the end."""
    location = backend.location(tmp_path)
    opened: list[SessionStore] = []

    def reopen(*, read_only: bool = False) -> SessionStore:
        store = open_store(location, counter=WordCounter(), read_only=read_only, durable=False)
        opened.append(store)
        return store

    yield reopen
    for store in opened:
        store.close()


def _clock() -> Callable[[], float]:
    ticks = iter(range(1_000_000))
    return lambda: 1_700_000_000.0 + next(ticks) * 0.25


def _turn(index: int) -> list[AgentEvent]:
    call = ToolCall(id=f"c{index}", name="bash", arguments={"cmd": f"make test{index}"})
    return [
        UserTurn(content=f"run test {index}"),
        AssistantTurn(content=f"running test {index}", tool_calls=(call,)),
        ToolResult(call_id=f"c{index}", content=f"test {index} output " * 12),
    ]


def _drop(working: WorkingGraph, index: int = 0) -> Proposal | None:
    """A proposal dropping the `index`-th assistant unit of the view, if there is one."""
    view = working.snapshot()
    units = [unit for unit in view.units() if unit.kind == "assistant"]
    if len(units) <= index:
        return None
    targets = units[index].node_ids
    tokens = sum(view.tokens(node_id) for node_id in targets)
    return Proposal(
        processor="dropper",
        edits=(Drop(targets=targets),),
        tokens_before=tokens,
        base_version=view.version,
    )


def _observed(session: RestoredSession) -> tuple[Any, ...]:
    """Everything a restore must give back: record, view, versions, audit, a request."""
    working = session.working
    return (
        graph_snapshot(session.raw),
        working.version,
        working.current_ids(),
        working.audit(),
        Renderer(format="anthropic").render(working).payload,
    )


def _recorded(reopen: Opener) -> tuple[SessionStore, RestoredSession]:
    """A writable store whose session holds three turns and one applied drop."""
    store = reopen()
    session = store.restore(clock=_clock())
    for index in range(3):
        session.raw.ingest(_turn(index))
    proposal = _drop(session.working)
    assert proposal is not None
    session.working.apply(proposal)
    return store, session


class TestRestore:
    def test_a_new_location_restores_an_empty_session(self, reopen: Opener) -> None:
        """A store that holds nothing yet restores empty graphs and no state."""
        store = reopen()
        session = store.restore(clock=_clock())
        assert (len(session.raw), session.working.audit(), session.state) == (0, (), {})
        assert session.entries == 0
        assert not store.closed

    def test_a_session_restores_exactly(self, reopen: Opener) -> None:
        """Batches, single and batched applies and state come back as they were."""
        store, live = _recorded(reopen)
        first, second = _drop(live.working, 0), _drop(live.working, 1)
        assert first is not None and second is not None
        live.working.apply_batch((first, second))
        live.raw.ingest([{"type": "user", "content": "a turn given as a dict"}])
        store.put_states({"triggers": {"armed": True}, "counters": [1, 2]})
        store.put_states({"counters": [3]})
        store.close()
        restored = reopen().restore(clock=_clock())
        assert _observed(restored) == _observed(live)
        assert restored.state == {"triggers": {"armed": True}, "counters": [3]}
        assert restored.entries == 6  # three turns, two applies, one more batch

    def test_new_proposals_take_the_new_clock_and_replayed_ones_keep_theirs(
        self, reopen: Opener
    ) -> None:
        """The clock given to `restore` stamps what is applied after it, nothing before."""
        store, live = _recorded(reopen)
        store.close()
        restored = reopen().restore(clock=lambda: 42.0)
        assert restored.working.audit() == live.working.audit()
        proposal = _drop(restored.working)
        assert proposal is not None
        assert restored.working.apply(proposal).time == 42.0

    def test_a_writable_store_hands_its_session_out_once(self, reopen: Opener) -> None:
        """A second restore of a writable store is refused, naming the store."""
        store = reopen()
        store.restore(clock=_clock())
        with pytest.raises(StoreError, match="already") as refused:
            store.restore(clock=_clock())
        assert store.location in str(refused.value)

    def test_a_read_only_store_hands_out_plain_copies(self, reopen: Opener) -> None:
        """Copies from a read-only store change freely, reach nothing, and state is refused."""
        writer, live = _recorded(reopen)
        reader = reopen(read_only=True)
        copy = reader.restore(clock=_clock())
        assert _observed(copy) == _observed(live)
        copy.raw.ingest(_turn(9))
        with pytest.raises(StoreError, match="read-only"):
            reader.put_states({"k": 1})
        assert _observed(reader.restore(clock=_clock())) == _observed(live)
        writer.close()


class TestOneStepPerChange:
    def test_a_batch_the_journal_cannot_read_back_changes_nothing(self, reopen: Opener) -> None:
        """An event nested past the decoder's limit is refused by index; the store goes on."""
        store, live = _recorded(reopen)
        before = _observed(live)
        deep: Any = "leaf"
        for _ in range(230):
            deep = {"k": deep}
        with pytest.raises(IngestError) as refused:
            live.raw.ingest([UserTurn(content="ok"), UserTurn(content="deep", meta={"d": deep})])
        assert refused.value.location.index == 1
        assert _observed(live) == before
        live.raw.ingest(_turn(5))
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)

    def test_a_proposal_the_journal_cannot_read_back_changes_nothing(self, reopen: Opener) -> None:
        """A proposal the checker passes but the journal could not decode is refused whole."""
        store, live = _recorded(reopen)
        view = live.working.snapshot()
        targets = next(u for u in view.units() if u.kind == "assistant").node_ids
        deep: Any = 1
        for _ in range(230):
            deep = [deep]
        summary = SummaryNode(
            id="summary-deep",
            content=(TextPart(text="short"),),
            abstracts=targets,
            meta={"checked": True, "d": deep},
        )
        proposal = Proposal(
            processor="deep",
            edits=(Abstract(targets=targets, summary=summary),),
            tokens_before=sum(view.tokens(t) for t in targets),
            tokens_after=live.working.token_cache.count_node(summary),
            base_version=view.version,
        )
        assert live.working.check(proposal) == []
        before = _observed(live)
        with pytest.raises(InvariantViolation, match="journal_readable"):
            live.working.apply(proposal)
        assert _observed(live) == before
        live.raw.ingest(_turn(5))
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)

    def test_what_memory_refuses_is_never_written(self, reopen: Opener) -> None:
        """A malformed batch and a rejected proposal leave no entry behind."""
        store, live = _recorded(reopen)
        proposal = _drop(live.working)
        assert proposal is not None
        lying = proposal.model_copy(update={"tokens_before": proposal.tokens_before + 1})
        with pytest.raises(InvariantViolation):
            live.working.apply(lying)
        with pytest.raises(IngestError):
            live.raw.ingest([ToolResult(call_id="never-called", content="x")])
        store.close()
        restored = reopen().restore(clock=_clock())
        assert restored.entries == 4
        assert _observed(restored) == _observed(live)

    def test_a_failed_write_leaves_memory_as_it_was_and_the_store_usable(
        self, reopen: Opener, backend: Backend
    ) -> None:
        """A write that fails before anything is kept changes nothing; later ones land."""
        store, live = _recorded(reopen)
        before = _observed(live)
        backend.fail_next_write(store)
        with pytest.raises(StoreError):
            live.raw.ingest(_turn(7))
        assert _observed(live) == before
        proposal = _drop(live.working)
        assert proposal is not None
        backend.fail_next_write(store)
        with pytest.raises(StoreError):
            live.working.apply(proposal)
        assert _observed(live) == before
        live.working.apply(proposal)
        live.raw.ingest(_turn(8))
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)

    def test_a_failed_commit_refuses_every_later_write_first(
        self, reopen: Opener, backend: Backend
    ) -> None:
        """Once memory is ahead of the store, ingests, applies and state are refused first."""
        store, live = _recorded(reopen)
        kept = _observed(live)
        backend.fail_next_commit(store)
        with pytest.raises(StoreError):
            live.raw.ingest(_turn(7))
        ahead = _observed(live)
        proposal = _drop(live.working)
        assert proposal is not None
        with pytest.raises(StoreError, match="ahead"):
            live.raw.ingest(_turn(8))
        with pytest.raises(StoreError, match="ahead"):
            live.working.apply(proposal)
        with pytest.raises(StoreError, match="ahead"):
            store.put_states({"k": 1})
        assert _observed(live) == ahead
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == kept


class TestOrder:
    def test_concurrent_ingests_and_applies_restore_as_they_happened(self, reopen: Opener) -> None:
        """Threads ingesting while another applies: the journal replays to the same state."""
        store = reopen()
        live = store.restore(clock=_clock())
        live.raw.ingest(_turn(0))

        def ingest(first: int) -> None:
            for index in range(first, first + 15):
                live.raw.ingest(_turn(index))

        def apply() -> None:
            for _ in range(15):
                proposal = _drop(live.working)
                if proposal is not None:
                    live.working.apply(proposal)

        threads = [threading.Thread(target=ingest, args=(1 + 100 * i,)) for i in range(3)]
        threads.append(threading.Thread(target=apply))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert live.working.audit()
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)


class TestRefusals:
    def test_a_closed_store_refuses_every_write_before_anything_changes(
        self, reopen: Opener
    ) -> None:
        """After close, an ingest (even an empty one), an apply and state are all refused."""
        store, live = _recorded(reopen)
        proposal = _drop(live.working)
        assert proposal is not None
        store.close()
        store.close()  # closing twice is allowed
        assert store.closed
        before = _observed(live)
        for write in (
            lambda: live.raw.ingest(_turn(7)),
            lambda: live.raw.ingest([]),
            lambda: live.working.apply(proposal),
            lambda: store.put_states({"k": 1}),
        ):
            with pytest.raises(StoreError, match="closed") as refused:
                write()
            assert store.location in str(refused.value)
        assert _observed(live) == before

    def test_edits_of_the_record_without_entries_are_refused(self, reopen: Opener) -> None:
        """`add_derived` and `add_edge` on a stored record would be lost, so they raise."""
        _, live = _recorded(reopen)
        first, second, *_ = live.raw.transcript()
        with pytest.raises(StoreError, match="not journaled"):
            live.raw.add_edge(second, first, "supersedes")
        copy = live.raw[first].model_copy(update={"id": "copy", "seq": None})
        with pytest.raises(StoreError, match="not journaled"):
            live.raw.add_derived(copy)
        assert "copy" not in live.raw

    @pytest.mark.parametrize(("key", "value"), [("", 1), ("x", object()), ("x", float("nan"))])
    def test_state_that_is_not_json_is_refused(self, reopen: Opener, key: str, value: Any) -> None:
        """A state key or value the store cannot hold is a `ConfigurationError`; none is kept."""
        store = reopen()
        store.restore(clock=_clock())
        with pytest.raises(ConfigurationError):
            store.put_states({"fine": 1, key: value})
        store.close()
        assert reopen().restore(clock=_clock()).state == {}


class TestRefresh:
    def test_a_stores_own_writes_are_not_brought_in_again(self, reopen: Opener) -> None:
        """After its own ingests, applies and state, `refresh` replays nothing."""
        store, live = _recorded(reopen)
        store.put_states({"k": 1})
        before = _observed(live)
        assert store.refresh().entries == 0
        assert _observed(live) == before

    def test_a_closed_store_refuses_to_refresh(self, reopen: Opener) -> None:
        """`refresh` after `close` raises `StoreError` naming the store."""
        store, _ = _recorded(reopen)
        store.close()
        with pytest.raises(StoreError, match="closed") as refused:
            store.refresh()
        assert store.location in str(refused.value)


class TestAtomic:
    def test_a_block_lands_whole_when_it_ends(self, reopen: Opener) -> None:
        """Inside `atomic` nothing is seen by a reader; at its end all of it is."""
        store, live = _recorded(reopen)
        outside = _observed(live)
        with store.atomic():
            live.raw.ingest(_turn(5))
            with store.atomic():  # a nested block joins the outer one
                proposal = _drop(live.working)
                assert proposal is not None
                live.working.apply(proposal)
                store.put_states({"run": 1})
            reader = reopen(read_only=True)
            during = reader.restore(clock=_clock())
            assert (_observed(during), during.state) == (outside, {})
        after = reader.restore(clock=_clock())
        assert (_observed(after), after.state) == (_observed(live), {"run": 1})

    def test_a_block_ended_by_an_exception_keeps_what_memory_holds(self, reopen: Opener) -> None:
        """The exception goes on, and what was applied before it is kept with the rest."""
        store, live = _recorded(reopen)
        with pytest.raises(KeyError), store.atomic():
            live.raw.ingest(_turn(5))
            raise KeyError("a stage failed")
        store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)

    def test_close_keeps_what_an_open_block_wrote(self, reopen: Opener) -> None:
        """Closing inside a block keeps its writes, and the block's end writes nothing more."""
        store, live = _recorded(reopen)
        with store.atomic():
            live.raw.ingest(_turn(5))
            store.close()
        assert _observed(reopen().restore(clock=_clock())) == _observed(live)


_STEPS = st.lists(
    st.sampled_from(["turn", "drop", "drop_two", "state", "atomic", "reopen"]), max_size=14
)


@settings(max_examples=25, deadline=None)
@given(steps=_STEPS)
def test_any_session_restores_to_what_memory_holds(backend: Backend, steps: list[str]) -> None:
    """Any mix of batches, applies, state, atomic blocks and reopenings restores exactly."""
    with tempfile.TemporaryDirectory() as directory:
        location = backend.location(Path(directory))

        def reopen() -> tuple[SessionStore, RestoredSession]:
            store = open_store(location, counter=WordCounter(), durable=False)
            return store, store.restore(clock=_clock())

        store, live = reopen()
        state: dict[str, Any] = {}
        try:
            for number, step in enumerate(steps):
                if step == "turn":
                    live.raw.ingest(_turn(number))
                elif step in ("drop", "drop_two"):
                    count = 1 if step == "drop" else 2
                    batch = [p for i in range(count) if (p := _drop(live.working, i))]
                    if len(batch) == count:
                        live.working.apply_batch(batch)
                elif step == "state":
                    state[f"k{number % 3}"] = number
                    store.put_states(state)
                elif step == "atomic":
                    with store.atomic():
                        live.raw.ingest(_turn(number))
                        store.put_states({"run": number})
                    state["run"] = number
                else:
                    expected = _observed(live)
                    store.close()
                    store, live = reopen()
                    assert (_observed(live), live.state) == (expected, state)
            expected = _observed(live)
        finally:
            store.close()
        store, restored = reopen()
        store.close()
        assert (_observed(restored), restored.state) == (expected, state)
