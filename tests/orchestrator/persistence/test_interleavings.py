"""16 writers and compaction on shared sessions, in randomized interleavings.

Hypothesis draws the plan (a seed for each writer's operations over several small
sessions, how many sessions, the mix of operations); real workers run it at once, 12 in
threads and 4 in processes of their own, and the scheduler and the database decide the
order in which their writes land. An *interleaving* here is a point where the log
passes from one writer's turn to another's: each is an order the race decided. Every
session is then checked: no turn lost, written twice or out of its writer's order; it
reopens; every writer's view after `refresh()` is a fresh reader's.

PostgreSQL: each writer is a worker with a manager of its own per session; renders
compact (under the lease) and some writers call `compact()`. SQLite has one writer per
file (docs/deployment.md): the threads share the session's one manager, taking turns
(their renders and `compact()` compact it), while the processes try to open the files
and are refused; once the holder closes them, each process opens every session and
writes a turn of its own.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import itertools
import multiprocessing
import random
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from context_graph.testing import WordCounter
from orchestrator.persistence import open_store
from tests.orchestrator.persistence import interleaving_workers as workers
from tests.orchestrator.persistence.interleaving_workers import Op, Report

THREADS, PROCESSES = 12, 4
WRITERS = THREADS + PROCESSES
#: Interleavings each backend must reach (module docstring); plans run until then.
ENOUGH = 10_000
#: At most this many plans: about 15 reach `ENOUGH` on PostgreSQL, 7 on SQLite.
MAX_EXAMPLES = 40

_MIX = st.fixed_dictionaries(
    {
        "turn": st.integers(8, 12),
        "tool": st.integers(1, 3),
        "render": st.integers(0, 1),
        "refresh": st.integers(0, 2),
        "compact": st.integers(0, 1),
    }
)


@pytest.fixture(name="processes", scope="module")
def processes_fixture() -> Iterator[tuple[concurrent.futures.Executor, Any]]:
    """4 worker processes (spawned: they inherit no connection) and a barrier maker."""
    context = multiprocessing.get_context("spawn")
    with (
        context.Manager() as shared,
        concurrent.futures.ProcessPoolExecutor(PROCESSES, mp_context=context) as pool,
    ):
        # Started now, each with the library imported, so that a plan's writers start together.
        list(pool.map(_warm, range(PROCESSES)))
        yield pool, shared


def _warm(_: int) -> bool:
    return workers.BUDGET > 0


def _plans(rnd: random.Random, sessions: int, mix: dict[str, int], length: int) -> list[list[Op]]:
    """Each writer's operations: `length` of them, over the sessions at random."""
    kinds = [kind for kind, weight in mix.items() for _ in range(weight)]
    return [
        [Op(rnd.randrange(sessions), rnd.choice(kinds)) for _ in range(length)]
        for _ in range(WRITERS)
    ]


def _turns(location: str) -> list[str]:
    """The user turns of a session's log, in order, as a fresh reader reads them."""
    with contextlib.closing(open_store(location, counter=WordCounter(), read_only=True)) as store:
        raw = store.restore(clock=workers.CLOCK).raw
    return [str(node.text) for node in raw if node.kind == "user"]


def _check(location: str, index: int, reports: list[Report]) -> int:
    """One session after its writers: nothing lost, doubled or reordered; it reopens;
    every writer's last view is a fresh reader's. Returns its interleavings."""
    turns = _turns(location)
    landed = {f"w{n}": report.landed.get(index, []) for n, report in enumerate(reports)}
    assert sorted(turns) == sorted(t for texts in landed.values() for t in texts)
    for writer, texts in landed.items():
        assert [t for t in turns if t.split(":")[0] == writer] == texts
    fresh = workers.fresh_digest(location)
    assert all(r.views[index] == fresh for r in reports if index in r.views)
    reopened = workers.open_manager(location)
    try:
        assert workers.view_digest(reopened.raw, reopened.working) == fresh
    finally:
        reopened.close()
    writers = [t.split(":")[0] for t in turns]
    return sum(a != b for a, b in itertools.pairwise(writers))


def test_postgres_writers_in_any_interleaving(postgres: Any, processes: Any) -> None:
    """16 writers (12 threads, 4 processes) with renders and compaction on small shared
    PostgreSQL sessions: every session whole after at least 10,000 interleavings."""
    pool, shared = processes
    interleavings: list[int] = []

    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
    @given(seed=st.integers(0, 2**32 - 1), sessions=st.integers(8, 12), mix=_MIX)
    def run(seed: int, sessions: int, mix: dict[str, int]) -> None:
        if sum(interleavings) >= ENOUGH:
            return  # enough plans ran: the rest cost nothing
        locations = [postgres.location("il") for _ in range(sessions)]
        plans = _plans(random.Random(seed), sessions, mix, length=60)
        barrier = shared.Barrier(WRITERS)
        with concurrent.futures.ThreadPoolExecutor(THREADS) as threads:
            futures = [
                (threads if n < THREADS else pool).submit(
                    workers.run_plan, f"w{n}", locations, plan, barrier.wait
                )
                for n, plan in enumerate(plans)
            ]
            reports = [future.result(timeout=600) for future in futures]
        assert [f for r in reports for f in r.failures] == []
        interleavings.extend(_check(loc, i, reports) for i, loc in enumerate(locations))

    run()
    print(f"PostgreSQL: {sum(interleavings)} interleavings in {len(interleavings)} sessions")
    assert sum(interleavings) >= ENOUGH


def test_sqlite_writers_in_any_interleaving(tmp_path: Path, processes: Any) -> None:
    """12 writer threads taking turns on each SQLite session's one manager (renders and
    compaction among their steps), while 4 processes are refused the files, then each
    writes a turn: every session whole after at least 10,000 interleavings."""
    pool, _ = processes
    interleavings: list[int] = []
    counter = iter(range(1 << 30))

    @settings(max_examples=MAX_EXAMPLES, deadline=None, database=None)
    @given(seed=st.integers(0, 2**32 - 1), sessions=st.integers(8, 16), mix=_MIX)
    def run(seed: int, sessions: int, mix: dict[str, int]) -> None:
        if sum(interleavings) >= ENOUGH:
            return  # enough plans ran: the rest cost nothing
        folder = tmp_path / f"run{next(counter)}"
        folder.mkdir()
        locations = [str(folder / f"s{i}.db") for i in range(sessions)]
        plans = _plans(random.Random(seed), sessions, mix, length=180)
        reports = _sqlite_round(locations, plans, pool)
        for n in range(THREADS, WRITERS):
            # The holder let go: each process now opens every session and writes.
            late = pool.submit(workers.try_sqlite, f"w{n}", locations, sessions).result()
            assert late.refused == 0
            for index, texts in late.landed.items():
                reports[n].landed.setdefault(index, []).extend(texts)
        interleavings.extend(_check(loc, i, reports) for i, loc in enumerate(locations))

    run()
    print(f"SQLite: {sum(interleavings)} interleavings in {len(interleavings)} sessions")
    assert sum(interleavings) >= ENOUGH


def _sqlite_round(
    locations: list[str], plans: list[list[Op]], pool: concurrent.futures.Executor
) -> list[Report]:
    """The threads' plans on the sessions' one manager each (taking turns on a lock),
    and the processes' opens meanwhile, refused; then each view is a fresh reader's."""
    managers = [workers.open_manager(location) for location in locations]
    locks = [threading.Lock() for _ in locations]
    reports = [Report() for _ in range(WRITERS)]

    def write(n: int) -> None:
        counts = [0] * len(locations)
        for op in plans[n]:
            counts[op.session] += 1
            name = f"w{n}:s{op.session}:{counts[op.session]}"
            with locks[op.session]:
                workers.step(managers[op.session], op, name, reports[n])

    try:
        with concurrent.futures.ThreadPoolExecutor(THREADS) as threads:
            writing = [threads.submit(write, n) for n in range(THREADS)]
            refused = [
                pool.submit(workers.try_sqlite, f"w{n}", locations, 3)
                for n in range(THREADS, WRITERS)
            ]
            for n, future in enumerate(refused, start=THREADS):
                reports[n] = future.result(timeout=600)
                assert (reports[n].refused, reports[n].landed) == (3, {})
            for future in writing:
                future.result(timeout=600)
        assert [f for r in reports for f in r.failures] == []
        views = [workers.view_digest(m.raw, m.working) for m in managers]
    finally:
        for manager in managers:
            manager.close()
    assert views == [workers.fresh_digest(location) for location in locations]
    return reports
