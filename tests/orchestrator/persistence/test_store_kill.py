"""Killed with SIGKILL anywhere in a real session, a reopened session renders what one never was.

Issue 15's kill -9 test. A recorded session is replayed event by event into
`ContextManager.open`, under a quarter of its size so that compaction runs, rendering at
every model call. A forked child does that and kills itself with SIGKILL at a moment a
seeded RNG picks among every moment the uninterrupted run went through: each SQL
statement on the session file (sqlite's trace callback runs before the statement: inside
an ingest's transaction, before a compaction run's one commit, between state writes)
and each bus signal (after an ingest committed but before its state was written, between
two proposals of a run, after a request was assembled but before its state was
written). The parent reopens the file, counts the events its journal holds, feeds the
rest and renders at the same model calls: every request must be byte for byte the one
the uninterrupted run made.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import random
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from context_graph.graph.context_graph import ContextGraph
from context_graph.graph.events import AgentEvent
from context_graph.graph.nodes import Node
from context_graph.importers import load_events
from orchestrator import ContextManager
from orchestrator.persistence import SQLiteStore
from orchestrator.policy import Policy
from orchestrator.replay import model_call_points
from orchestrator.working.buffer import AuditEntry
from tests.orchestrator.policy_keywords import open_manager

ROOT = Path(__file__).resolve().parents[3]
TRACES = ROOT.parent / "shared" / "traces"
# A mini-swe-agent run and a Claude Code session: at a quarter of their size both
# compact several times during renders and the renderer leaves units out.
KILL_TRACES = {
    "mini_swe_agent": (
        "mini_swe_agent_deepseek/deepseek_chat_test_1-100/django__django-12453/"
        "django__django-12453.traj.json",
        "openai",
    ),
    "claude_code": (
        "claude_code/moredip_session-share/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl",
        "anthropic",
    ),
}
KILLS = 10  # per trace: 20 in all
SEED = 15
# Moments every trace is killed at once (the other kills land anywhere): inside an
# ingest's transaction before its commit, after an ingest committed but before its
# state was written, before the commit of the state an ingest left, between two
# proposals of a compaction run, before the run's one commit, and after a request was
# assembled but before its state was written.
MUST = (
    "ingest commit events",
    "ingest node_added",
    "ingest commit state",
    "render proposal_applied",
    "render commit proposals",
    "render render_done",
)

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@dataclass(frozen=True)
class Session:
    """A trace to replay: its events, the manager's options and the model calls."""

    events: list[AgentEvent]
    options: dict[str, Any]
    points: frozenset[int]
    """How many events had been fed at each model call."""
    record: list[Node]
    """The pristine record of the whole trace."""
    nodes_after: list[int]
    """How many pristine nodes the first `i` events make, for each `i`."""


@dataclass(frozen=True)
class Uninterrupted:
    """What the session never killed did."""

    requests: dict[int, str]
    """The request (its JSON text) rendered with that many events fed."""
    moments: list[str]
    """A label per moment, in order (`"ingest commit events"`, `"render render_done"`)."""
    audit: tuple[AuditEntry, ...]
    """The audit log at the end."""


class Moments:
    """Labels the moments a kill can land at, and kills the process at one of them.

    A moment is each SQL statement on the session file and each bus signal, labelled
    with the driver's phase (`ingest` or `render`); a commit is labelled with what its
    transaction journals (`commit events`, `commit proposals`, `commit state`).

    Args:
        kill_at: The moment (from 1) to kill the process at; `None`: never.
        report: Told `kill <label>` right before the kill.
    """

    def __init__(
        self, kill_at: int | None = None, report: Callable[[str], None] | None = None
    ) -> None:
        self.kill_at = kill_at
        self.report = report
        self.phase = "open"
        self.labels: list[str] = []
        self._journals = "state"

    def attach(self, manager: ContextManager) -> None:
        """Observe `manager`'s session file and bus."""
        store = manager.store
        assert isinstance(store, SQLiteStore)
        # The trace callback is the one way to land between two SQL statements.
        store.connection.set_trace_callback(self._statement)
        for name in manager.bus.signal_names:
            manager.bus.connect(name, functools.partial(self._signal, name))

    def _statement(self, sql: str) -> None:
        what = sql.split(None, 1)[0].lower()
        if what == "begin":
            self._journals = "state"
        elif sql.startswith("INSERT INTO journal"):
            self._journals = sql.split("VALUES ('", 1)[1].split("'", 1)[0]
            what = f"journal {self._journals}"
        elif sql.startswith("INSERT INTO state"):
            what = "state"
        elif what == "commit":
            what = f"commit {self._journals}"
        self._moment(what)

    def _signal(self, name: str, sender: object, **payload: object) -> None:
        self._moment(name)

    def _moment(self, what: str) -> None:
        label = f"{self.phase} {what}"
        self.labels.append(label)
        if len(self.labels) == self.kill_at:
            if self.report is not None:
                self.report(f"kill {label}")
            os.kill(os.getpid(), signal.SIGKILL)


def _request(manager: ContextManager) -> str:
    return json.dumps(manager.render_sync().payload)


def _digest(request: str) -> str:
    return hashlib.sha256(request.encode()).hexdigest()


def _feed(
    manager: ContextManager,
    session: Session,
    start: int,
    moments: Moments,
    on_request: Callable[[int, str], None],
) -> None:
    """Feed the events after the first `start` one by one, rendering at each model call."""
    for fed in range(start + 1, len(session.events) + 1):
        moments.phase = "ingest"
        manager.ingest([session.events[fed - 1]])
        if fed in session.points:
            moments.phase = "render"
            on_request(fed, _request(manager))


def _pristine(graph: ContextGraph) -> list[Node]:
    derived = set(graph.derived())
    return [node for node in graph if node.id not in derived]


def _journaled_events(path: Path) -> int:
    """How many events the session file holds (its journal's `events` entries)."""
    with SQLiteStore.open(path, read_only=True) as store:
        return sum(len(entry.events) for entry in store.journal() if entry.kind == "events")


def _run_killed(path: Path, session: Session, kill_at: int) -> tuple[int, list[str]]:
    """Replay `session` into `path` in a forked child that kills itself at moment `kill_at`.

    Returns:
        The child's exit status and the lines it reported: `request <fed> <sha256>`
        for each request it got back, then `kill <label>`.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_end)
            out = os.fdopen(write_end, "w", buffering=1)
            moments = Moments(kill_at, lambda line: out.write(f"{line}\n"))
            manager = open_manager(path, durable=False, **session.options)
            moments.attach(manager)
            _feed(
                manager,
                session,
                0,
                moments,
                lambda fed, request: out.write(f"request {fed} {_digest(request)}\n"),
            )
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as lines:
        reported = lines.read().splitlines()
    _, status = os.waitpid(pid, 0)
    return status, reported


def _session(name: str) -> Session:
    trace, fmt = KILL_TRACES[name]
    if not (TRACES / trace).exists():
        pytest.skip("shared traces not present")
    events = list(load_events(TRACES / trace))
    probe = ContextManager(format=fmt, policy=Policy(pipeline=[]))
    nodes_after = [0]
    for event in events:
        probe.ingest([event])
        nodes_after.append(len(probe.raw))
    options = {
        "profile": "coding",
        "format": fmt,
        "budget": probe.render_sync().tokens // 4,
        "clock": lambda: 1e9,
    }
    points = frozenset(model_call_points(events))
    return Session(events, options, points, list(probe.raw), nodes_after)


def _uninterrupted(path: Path, session: Session) -> Uninterrupted:
    requests: dict[int, str] = {}
    moments = Moments()
    manager = open_manager(path, durable=False, **session.options)
    moments.attach(manager)
    _feed(manager, session, 0, moments, requests.__setitem__)
    manager.close()
    assert manager.stats().proposals_applied > 0, "the budget makes compaction run"
    return Uninterrupted(requests, moments.labels, manager.working.audit())


def _kill_points(moments: Sequence[str], rng: random.Random) -> list[int]:
    """Kill moments (from 1): one at each `MUST` label, the rest anywhere."""
    chosen = []
    for label in MUST:
        where = [i for i, found in enumerate(moments, start=1) if found == label]
        assert where, f"the uninterrupted run never reached `{label}`"
        chosen.append(rng.choice(where))
    chosen += [rng.randint(1, len(moments)) for _ in range(KILLS - len(MUST))]
    return chosen


@pytest.fixture(scope="module", name="replayed")
def fixture_replayed(
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], tuple[Session, Uninterrupted]]:
    """A trace's session and its uninterrupted run, made once per module."""
    done: dict[str, tuple[Session, Uninterrupted]] = {}

    def replayed(name: str) -> tuple[Session, Uninterrupted]:
        if name not in done:
            session = _session(name)
            path = tmp_path_factory.mktemp(name) / "uninterrupted.db"
            done[name] = (session, _uninterrupted(path, session))
        return done[name]

    return replayed


class TestKilledSession:
    @pytest.mark.parametrize("name", list(KILL_TRACES))
    def test_every_request_after_a_kill_is_the_uninterrupted_one(
        self,
        tmp_path: Path,
        replayed: Callable[[str], tuple[Session, Uninterrupted]],
        name: str,
    ) -> None:
        """Killed at 10 seeded moments, each reopened session renders the same requests."""
        session, reference = replayed(name)
        rng = random.Random(f"{SEED}-{name}")
        wrong = []
        for attempt, kill_at in enumerate(_kill_points(reference.moments, rng)):
            label = reference.moments[kill_at - 1]
            where = f"kill {attempt} at moment {kill_at} ({label})"
            path = tmp_path / f"killed-{attempt}.db"
            status, reported = _run_killed(path, session, kill_at)
            assert os.WIFSIGNALED(status), f"{where}: the child was not killed"
            assert os.WTERMSIG(status) == signal.SIGKILL, where
            assert reported[-1] == f"kill {label}", f"{where}: the child went another way"
            got = {int(fed): digest for _, fed, digest in map(str.split, reported[:-1])}
            assert got == {fed: _digest(reference.requests[fed]) for fed in got}, where

            fed = _journaled_events(path)
            # An ingest's commit is traced before it runs: the ones before the kill landed.
            assert fed == reference.moments[: kill_at - 1].count("ingest commit events"), where
            manager = open_manager(path, durable=False, **session.options)
            # The event cut off is in whole or not at all: the first `fed` events' nodes.
            assert _pristine(manager.raw) == session.record[: session.nodes_after[fed]], where
            after: dict[int, str] = {}
            if fed in session.points and fed not in got:
                after[fed] = _request(manager)  # the request the child never got back
            _feed(manager, session, fed, Moments(), after.__setitem__)
            manager.close()
            if manager.working.audit() != reference.audit:
                wrong.append(f"{where}, {fed} events in: the audit log differs at the end")
            assert set(after) == {point for point in session.points if point >= fed} - set(got)
            differ = [point for point in sorted(after) if after[point] != reference.requests[point]]
            if differ:
                wrong.append(f"{where}, {fed} events in: the requests at {differ} differ")
        assert not wrong, "\n".join(wrong)


def _state_after_kill(path: Path, session: Session, kill_at: int) -> dict[str, JsonValue]:
    status, _ = _run_killed(path, session, kill_at)
    assert os.WIFSIGNALED(status), f"moment {kill_at}: the child was not killed"
    with SQLiteStore.open(path, read_only=True) as store:
        return store.state()


class TestKilledStateWrite:
    def test_a_kill_while_the_state_is_written_keeps_it_old_or_new_whole(
        self, tmp_path: Path, replayed: Callable[[str], tuple[Session, Uninterrupted]]
    ) -> None:
        """Killed at any statement of the state write after a trigger fired: old or new state."""
        session, reference = replayed("mini_swe_agent")
        moments = reference.moments
        # The first ingest after which a budget level fired: its trigger state and the
        # firing it left pending are written once the ingest has committed.
        fired = moments.index("ingest trigger_fired") + 1
        end = fired
        while moments[end].startswith("ingest ") and "events" not in moments[end]:
            end += 1
        old = _state_after_kill(tmp_path / "old.db", session, fired)
        new = _state_after_kill(tmp_path / "new.db", session, end + 1)
        assert old != new and new["pending"], "the write changes the state, a firing included"
        for kill_at in range(fired + 1, end + 1):
            state = _state_after_kill(tmp_path / f"killed-{kill_at}.db", session, kill_at)
            assert state in (old, new), f"killed at {moments[kill_at - 1]} (moment {kill_at})"
