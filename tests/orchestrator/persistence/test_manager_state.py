"""The manager's own state in its session file: the same keys, written at the same points.

Also the `StateKeeper` with the owners of the state, and a manager that uses nothing of
its store but the `SessionStore` protocol.

`state_writes_b7b30dd.json` was recorded from the scripted session below by the manager
of commit b7b30dd (its five mixins), before the manager was composed of collaborators:
every `put_states` call, labelled with the step that made it, and every compaction run's
`atomic` block. A value longer than 200 characters is kept as its digest. The example is
read from a copy in a folder of a fixed name (`example_copy`): a sub-agent result's node
id covers its transcript's path, and node ids are in the state. Since fe532b2 that path is
relative to the session file, which changed those ids: the `scanned` digests (and nothing
else) were recorded again then. The coding profile's two clearing stages (`clear_thinking`,
`clear_tool_inputs`) are in its guard state: the `guards` digests of the eight writes that
carry them (and nothing else) were recorded again with them. Since 70b5758 a masked
file's placeholder is worded differently, which changes that derived node's id and the
tokens the stages freed: the `scanned` and `guards` digests (and nothing else) were
recorded again then. Since the seventeenth session a compaction takes only what brings the
request to its target and the profiles compact to 0.7 of the budget: the session's
compactions free other amounts at other steps, so its triggers fire at other steps, and the
writes were recorded again (same keys, 103 writes instead of 102). Since the eighteenth
session the output stages spare the live error (`compaction.recency`): one write's
`guards` digest (render 112; nothing else) was recorded again. Since the twenty-third
session a run to the target frees what it needs and no more (`ProcessorContext.to_free`):
its compactions land nearer the target and come more often, and the writes were recorded
again (same keys, 114 writes instead of 103). Since the twenty-seventh session the brief
has a section for the newest test run: the summaries' text and tokens changed, and with
them the `calibration`, `guards`, `pending` and `scanned` digests; the writes were
recorded again (same steps, same keys, 114 writes). Since the thirty-first session source
code stays at light distillation under mild pressure (`CODE_LIGHT_PRESSURE`): from render
72 on, a read the distiller outlined before keeps its lines, one more proposal is applied,
and the `counters`, `guards`, `scanned`, `calibration` and `pending` digests of 35 writes
were recorded again (same steps, same keys, 114 writes). Since the thirty-third session
a session continued from another tool's compaction (the example is one: it opens with
Claude Code's summary) absorbs that summary at its first compaction instead of carrying
it whole: the compactions free more, 7 runs instead of 11 come, and the writes were
recorded again (99 writes instead of 114). Since the thirty-fourth session the coding
profile's first stage is `trim_preamble_trees`: its entry is in the guard state, and the
`guards` digests of the 7 writes that carry a run (and nothing else) were recorded again.
Since the forty-fourth session the brief carries the files the agent wrote, as they now
read (`processors/summarize/written.py`): the example's hand-made compaction writes a
larger brief, two more runs come after it (renders 102 and 104), and the writes were
recorded again (same keys, 107 writes instead of 99).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from context_graph.errors import StoreCorruptError
from context_graph.graph.context_graph import ContextGraph
from context_graph.importers import load_events
from context_graph.testing import WordCounter
from context_graph.tokens.usage import Usage
from orchestrator import ContextManager
from orchestrator.agent_tools.pins import Pins
from orchestrator.bus import EventBus
from orchestrator.compaction.compactor import Compactor
from orchestrator.compaction.guards import GuardState
from orchestrator.compaction.renderers import RendererCache
from orchestrator.compaction.screen import SecretScreen
from orchestrator.compaction.triggers import Firing
from orchestrator.counters import ProposalCounters
from orchestrator.ledger import CallLedger
from orchestrator.persistence.manager_state import StateKeeper
from orchestrator.persistence.protocol import Lease, Refreshed, RestoredSession, SessionStore
from orchestrator.persistence.sqlite.store import SQLiteStore
from orchestrator.policy import Policy, get_policy
from orchestrator.policy.resolved import resolve_options
from orchestrator.replay import model_call_points
from orchestrator.working.buffer import WorkingGraph
from tests.orchestrator.policy_keywords import make_manager, open_manager

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "context_graph" / "examples" / "example_session.jsonl"
GOLDEN = Path(__file__).with_name("data") / "state_writes_b7b30dd.json"


def _text(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= 200 else "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def example_copy() -> Path:
    """The bundled example with its sub-agents, copied to a folder of a fixed name."""
    folder = Path(tempfile.gettempdir()) / "context-graph-state-writes"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / EXAMPLE.name)
    shutil.copytree(EXAMPLE.with_suffix(""), folder / EXAMPLE.stem)
    return folder / EXAMPLE.name


def record_session(path: Path, patch: Callable[[object, str, object], None]) -> list[list[Any]]:
    """Run the scripted session on a session file at `path`; its state writes in order.

    Ingests the bundled example one event at a time, renders at every model call,
    reports usage after every third render, marks a boundary halfway and compacts by
    hand at three quarters, then closes. `patch(SQLiteStore, name, function)` swaps in
    the recording `put_states` and `atomic`.
    """
    writes: list[list[Any]] = []
    step = ["open"]
    put, atomic = SQLiteStore.put_states, SQLiteStore.atomic

    def put_states(self: SQLiteStore, values: Any) -> None:
        writes.append([step[0], {key: _text(value) for key, value in values.items()}])
        put(self, values)

    @contextlib.contextmanager
    def recorded_atomic(self: SQLiteStore, **options: Any) -> Iterator[None]:
        writes.append([step[0], "begin"])
        with atomic(self, **options):
            yield
        writes.append([step[0], "end"])

    patch(SQLiteStore, "put_states", put_states)
    patch(SQLiteStore, "atomic", recorded_atomic)
    events = list(load_events(example_copy()))
    points = model_call_points(events)
    manager = ContextManager.open(
        path,
        durable=False,
        format="anthropic",
        budget=9_000,
        clock=lambda: 1e9,
        policy=get_policy("coding").replace(redact_secrets=True),
    )
    renders = 0
    for fed in range(1, len(events) + 1):
        step[0] = f"ingest {fed}"
        manager.ingest([events[fed - 1]])
        if fed == len(events) // 2:
            step[0] = "boundary"
            manager.mark_boundary("half")
        if fed == 3 * len(events) // 4:
            step[0] = "compact"
            anyio.run(manager.compact)
        if fed in points:
            step[0] = f"render {fed}"
            result = manager.render_sync()
            renders += 1
            if renders % 3 == 0:
                step[0] = f"usage {fed}"
                manager.report_usage(result.tokens + 7)
    step[0] = "close"
    manager.close()
    return writes


class TestStateWrites:
    def test_a_scripted_session_writes_what_b7b30dd_wrote(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every state write of the scripted session has the keys, values and step of b7b30dd's."""
        writes = record_session(tmp_path / "session.db", monkeypatch.setattr)
        assert writes == json.loads(GOLDEN.read_text(encoding="utf-8"))


class RecordingStore:
    """A `SessionStore` in memory that keeps every `put_states` call (restores nothing)."""

    def __init__(self) -> None:
        self.writes: list[dict[str, JsonValue]] = []
        self.closed = False
        self.location = "memory://test"

    def restore(self, *, clock: Callable[[], float]) -> RestoredSession:
        raise AssertionError("the keeper never restores")

    def put_states(self, values: Any) -> None:
        self.writes.append(dict(values))

    def atomic(self, *, rebased: Any = None) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()

    def lease(self, *, holder: str | None = None, ttl: float = 60.0) -> Any:
        return contextlib.nullcontext(Lease("test", 1))

    def close(self) -> None:
        self.closed = True


class ProtocolOnlyStore:
    """Delegates the members of `SessionStore` to a real store, and has nothing else."""

    __slots__ = ("_inner",)

    def __init__(self, inner: SQLiteStore) -> None:
        self._inner = inner

    @property
    def location(self) -> str:
        return self._inner.location

    @property
    def closed(self) -> bool:
        return self._inner.closed

    def restore(self, *, clock: Callable[[], float]) -> RestoredSession:
        return self._inner.restore(clock=clock)

    def put_states(self, values: Any) -> None:
        self._inner.put_states(values)

    def atomic(self, *, rebased: Any = None) -> contextlib.AbstractContextManager[None]:
        return self._inner.atomic(rebased=rebased)

    def lease(
        self, *, holder: str | None = None, ttl: float = 60.0
    ) -> contextlib.AbstractContextManager[Lease]:
        return self._inner.lease(holder=holder, ttl=ttl)

    def refresh(self) -> Refreshed:
        return self._inner.refresh()

    def close(self) -> None:
        self._inner.close()


@dataclass
class Owners:
    """The owners of a manager's state, made as the manager makes them, and their keeper."""

    raw: ContextGraph
    keeper: StateKeeper
    compactor: Compactor
    counters: ProposalCounters
    renderers: RendererCache
    screen: SecretScreen
    ledger: CallLedger
    pins: Pins


def _owners(store: SessionStore | None) -> Owners:
    raw = ContextGraph(counter=WordCounter())
    raw.add_user("hello")
    raw.add_user("again")
    working = WorkingGraph(raw, clock=lambda: 1e9)
    bus = EventBus()
    keeper = StateKeeper(store)
    counters = ProposalCounters()
    renderers = RendererCache(refit_to=0.7, cache_breakpoints=False)
    renderers.get("anthropic")
    screen = SecretScreen(working, bus, None, counters)
    ledger = CallLedger(raw)
    pins = Pins()
    options = resolve_options(Policy(), counter=WordCounter())
    compactor = Compactor(
        working,
        bus,
        options,
        keeper,
        screen,
        counters,
        unsent=lambda: ledger.unsent,
        held=pins.held,
    )
    keeper.track([compactor, counters, renderers, screen, ledger, pins])
    return Owners(raw, keeper, compactor, counters, renderers, screen, ledger, pins)


def _busy(store: SessionStore | None = None) -> Owners:
    owners = _owners(store)
    firing = Firing(kind="boundary", name="boundary", pipeline="default", reason="done")
    owners.compactor.load(
        {"guards": GuardState(runs=4).model_dump(mode="json"), "pending": [firing.model_dump()]}
    )
    owners.counters.count(applied=3, rejected=1)
    owners.screen.load({"scanned": ["b", "a"]})
    owners.renderers.calibrator.observe(100, 120)
    owners.ledger.arrived(["n-late"])
    owners.ledger.record(Usage(prompt_tokens=120, completion_tokens=4))
    owners.pins.pin(["a"], until=3)
    return owners


#: Every key a manager's state is stored under, sorted (a file written by 44b3b6b has them
#: all: test_old_store.py).
STATE_KEYS = [
    "calibration",
    "counters",
    "guards",
    "pending",
    "pins",
    "renderers",
    "scanned",
    "sent",
    "triggers",
    "usage",
]


class TestStateKeeper:
    def test_what_it_writes_loads_back_into_fresh_owners(self) -> None:
        """`values` after `load(values)` is `values`: every key survives the round trip."""
        values = _busy().keeper.values()
        assert sorted(values) == STATE_KEYS
        fresh = _owners(None)
        fresh.keeper.load(values)
        assert fresh.keeper.values() == values
        assert fresh.counters.applied == 3 and fresh.screen.state()["scanned"] == ["a", "b"]
        assert fresh.renderers.calibrator.factor == pytest.approx(1.2)
        assert fresh.pins.held(2) == {"a"} and fresh.ledger.usage.calls == 1

    def test_a_fresh_session_hands_over_no_pins_and_no_usage(self) -> None:
        """`pins` and `usage` are written only once there was a pin, a call's usage."""
        assert {"pins", "usage"}.isdisjoint(_owners(None).keeper.values())

    def test_pins_once_written_stay_written_when_let_go(self) -> None:
        """Once there was a pin, `pins` is handed over also when every pin expired."""
        owners = _owners(None)
        owners.pins.pin(["a"], until=3)
        assert owners.pins.held(3) == frozenset()
        assert owners.keeper.values()["pins"] == {}

    def test_the_first_save_writes_every_key_and_later_ones_only_what_changed(self) -> None:
        """A save writes the keys whose value changed since the last one, nothing when none."""
        store = RecordingStore()
        owners = _busy(store)
        keeper = owners.keeper
        keeper.save()
        keeper.save()
        owners.counters.count(applied=1)
        keeper.save()
        assert [sorted(write) for write in store.writes] == [
            sorted(keeper.values()),
            ["counters"],
        ]
        assert store.writes[1] == {"counters": {"applied": 4, "rejected": 1}}

    def test_loaded_values_count_as_written(self) -> None:
        """After `load`, a save writes nothing until the state changes."""
        store = RecordingStore()
        values = _busy().keeper.values()
        keeper = _owners(store).keeper
        keeper.load(values)
        keeper.save()
        assert store.writes == []

    def test_a_value_of_the_wrong_shape_is_refused_naming_the_store(self) -> None:
        """A stored value that does not load raises `StoreCorruptError` with the location."""
        keeper = _owners(RecordingStore()).keeper
        with pytest.raises(StoreCorruptError, match="memory://test"):
            keeper.load({"counters": {"applied": "many"}})

    def test_a_bad_value_leaves_its_owner_as_it_was(self) -> None:
        """An owner whose value does not load keeps all of its own values."""
        owners = _busy()
        before = owners.compactor.state()
        with pytest.raises(StoreCorruptError, match="validation errors for Firing"):
            owners.keeper.load({"guards": {"runs": 9}, "pending": [{"kind": "nonsense"}]})
        assert owners.compactor.state() == before

    def test_a_bad_renderers_value_leaves_the_calibration_as_it_was(self) -> None:
        """The renderers' values are checked before the calibration is taken."""
        owners = _busy()
        bad = {"calibration": {"factor": 1.5, "observations": 9}, "renderers": {"telex": 1}}
        with pytest.raises(StoreCorruptError, match="unknown format 'telex'"):
            owners.keeper.load(bad)
        assert owners.renderers.state()["calibration"] == {"factor": 1.2, "observations": 1}

    @pytest.mark.parametrize(
        "bad",
        [
            {"counters": {"applied": 1, "rejected": 0}, "pins": {"a": "soon"}},
            {"triggers": {}, "scanned": ["z"], "sent": {"nodes": 99}},
            {"usage": {}, "pins": {"b": "later"}},
        ],
        ids=["last owner", "middle owner", "optional keys"],
    )
    def test_a_bad_value_of_one_owner_changes_no_owner(self, bad: dict[str, Any]) -> None:
        """Every owner's keys are read before any owner takes its own: a state that does
        not load leaves the whole manager as it was, not the owners before the bad one
        loaded and the rest not."""
        owners = _busy()
        before = owners.keeper.values()
        with pytest.raises(StoreCorruptError):
            owners.keeper.load(bad)
        assert owners.keeper.values() == before

    def test_two_owners_of_one_key_are_a_wiring_mistake(self) -> None:
        """A key handed over by two owners is refused, naming it, instead of one winning."""
        owners = _owners(None)
        owners.keeper.track([ProposalCounters()])
        with pytest.raises(RuntimeError, match="counters"):
            owners.keeper.values()

    def test_close_saves_then_closes_and_twice_is_harmless(self) -> None:
        """`close` writes what changed, closes the store, and does nothing the second time."""
        store = RecordingStore()
        keeper = _busy(store).keeper
        keeper.close()
        keeper.close()
        assert store.closed and len(store.writes) == 1


_NAMES = st.sampled_from(["a", "b", "c", "d"])
_STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("count"), st.integers(0, 5), st.integers(0, 5)),
        st.tuples(st.just("scan"), st.lists(_NAMES, max_size=3)),
        st.tuples(st.just("pin"), st.lists(_NAMES, max_size=3), st.integers(0, 6)),
        st.tuples(st.just("held"), st.integers(0, 6)),
        st.tuples(st.just("usage"), st.integers(0, 500), st.integers(0, 50)),
        st.tuples(st.just("observe"), st.integers(1, 500), st.integers(1, 900)),
        st.tuples(st.just("arrive"), st.integers(0, 2)),
        st.tuples(st.just("boundary"), _NAMES),
        st.tuples(st.just("check")),
        st.tuples(st.just("drops"), st.integers(0, 4)),
    ),
    max_size=12,
)


def _step(owners: Owners, step: tuple[Any, ...]) -> None:
    kind, *args = step
    if kind == "count":
        owners.counters.count(applied=args[0], rejected=args[1])
    elif kind == "scan":
        scanned = owners.screen.state()["scanned"]
        assert isinstance(scanned, list)
        owners.screen.load({"scanned": [*scanned, *args[0]]})
    elif kind == "pin":
        owners.pins.pin(args[0], until=args[1])
    elif kind == "held":
        owners.pins.held(args[0])
    elif kind == "usage":
        owners.ledger.record(Usage(prompt_tokens=args[0], completion_tokens=args[1]))
    elif kind == "observe":
        owners.renderers.calibrator.observe(args[0], args[1])
    elif kind == "arrive":
        # The newest pristine nodes: what was sent is a prefix of the record.
        ids = [node.id for node in owners.raw]
        owners.ledger.arrived(ids[len(ids) - args[0] :])
    elif kind == "boundary":
        owners.compactor.mark_boundary(args[0])
    elif kind == "check":
        owners.compactor.check(None)
    else:
        owners.renderers.get("anthropic").keep_drops(args[0])


class TestStateRoundTrip:
    @settings(max_examples=60, deadline=None)
    @given(steps=_STEPS)
    def test_any_state_loads_back_whole_and_counts_as_written(
        self, steps: list[tuple[Any, ...]]
    ) -> None:
        """Whatever the owners did, fresh owners loading their values hand over the same
        values, and a keeper that loaded them writes nothing."""
        owners = _owners(None)
        for step in steps:
            _step(owners, step)
        values = json.loads(json.dumps(owners.keeper.values()))
        store = RecordingStore()
        fresh = _owners(store)
        fresh.keeper.load(values)
        assert fresh.keeper.values() == values
        fresh.keeper.save()
        assert store.writes == []


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False)
    | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)
_KEYS = ("triggers", "guards", "pending", "counters", "calibration", "renderers", "scanned")
_KEYS += ("sent", "usage", "pins", "cache_marks")


class TestHostileState:
    @settings(max_examples=300, deadline=None)
    @given(
        hostile=st.dictionaries(st.sampled_from(_KEYS), _JSON, min_size=1, max_size=3),
        steps=_STEPS,
    )
    def test_any_value_loads_or_is_refused_changing_nothing(
        self, hostile: dict[str, Any], steps: list[tuple[Any, ...]]
    ) -> None:
        """Any JSON under any key either loads (and then saves back as a state of the
        owners' own shapes) or is refused as `StoreCorruptError`, with every owner as it was."""
        owners = _owners(None)
        for step in steps:
            _step(owners, step)
        before = owners.keeper.values()
        try:
            owners.keeper.load(hostile)
        except StoreCorruptError:
            assert owners.keeper.values() == before
            return
        loaded = json.loads(json.dumps(owners.keeper.values()))
        fresh = _owners(None)
        fresh.keeper.load(loaded)
        assert fresh.keeper.values() == loaded


class TestProtocolOnly:
    def test_the_manager_needs_nothing_of_its_store_but_the_protocol(self, tmp_path: Path) -> None:
        """A store with only `SessionStore`'s members keeps a session that reopens the same."""
        path = tmp_path / "session.db"
        options: dict[str, Any] = {"counter": WordCounter(), "budget": 400, "clock": lambda: 1e9}
        store = ProtocolOnlyStore(SQLiteStore.open(path, counter=WordCounter(), durable=False))
        manager = make_manager(store=store, **options)
        manager.add_system("You are careful.")
        manager.add_user("Run the tests.")
        manager.add_assistant("Running.", [{"id": "c1", "name": "bash"}])
        manager.add_tool_result("c1", " ".join(f"line{n}" for n in range(600)))
        manager.render_sync()
        anyio.run(manager.compact)
        audit = manager.working.audit()
        assert audit and manager.store is store
        manager.close()
        assert store.closed
        again = open_manager(path, durable=False, **options)
        assert again.working.audit() == audit
        assert again.stats().proposals_applied == manager.stats().proposals_applied
        assert again.render_sync().payload == manager.render_sync().payload
        again.close()
