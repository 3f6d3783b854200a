"""Faults against a real PostgreSQL server: killed workers, a restarted server, dropped
connections, and up to eight workers appending to one session.

Workers are forked children of the test process (the library is imported once), each
writing batches in a loop with `append_batches`: on a conflict it refreshes and
retries; on any other store error it reopens the store and resumes after the batches
the log holds, so a batch whose commit outcome it never learned is neither lost nor
written twice. Every check reads the log back whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_graph import UserTurn
from context_graph.errors import StoreConflictError, StoreError, StoreUnavailableError
from context_graph.graph.context_graph import ContextGraph
from context_graph.render import Renderer
from context_graph.testing import WordCounter
from orchestrator.persistence import PostgresStore, RestoredSession
from orchestrator.working.buffer import WorkingGraph

_CLOCK = lambda: 1_700_000_000.0  # noqa: E731  (a fixed clock for the audit log)
_BATCH = 3  # events per batch: a half-written entry would show as a short batch


def _batch(worker: int, number: int, size: int = _BATCH) -> list[UserTurn]:
    return [UserTurn(content=f"w{worker} b{number} e{part}") for part in range(size)]


def _texts(worker: int, count: int, size: int = _BATCH) -> list[list[str]]:
    return [[f"w{worker} b{n} e{part}" for part in range(size)] for n in range(count)]


def _open(location: str) -> tuple[PostgresStore, RestoredSession]:
    store = PostgresStore.open(location, counter=WordCounter(), durable=False, timeout=2.0)
    return store, store.restore(clock=_CLOCK)


def _mine(session: RestoredSession, worker: int, size: int) -> int:
    """How many of `worker`'s batches the session holds."""
    prefix = f"w{worker} b"
    return sum(1 for node in session.raw if node.text.startswith(prefix)) // size


def _payload_digest(working: WorkingGraph) -> str:
    payload = Renderer(format="openai").render(working).payload
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def append_batches(
    location: str,
    worker: int,
    count: int,
    *,
    renders: list[tuple[int, str]] | None = None,
    ready: Callable[[], None] | None = None,
    deadline: float = 120.0,
    size: int = _BATCH,
) -> int:
    """Append `worker`'s batches until the log holds `count` of them; how many reopenings."""
    end = time.monotonic() + deadline
    store: PostgresStore | None = None
    reopened = -1
    try:
        while time.monotonic() < end:
            if store is None:
                try:
                    store, session = _open(location)
                except StoreUnavailableError:
                    time.sleep(0.05)
                    continue
                reopened += 1
                done = _mine(session, worker, size)
            if done >= count:
                return reopened
            try:
                session.raw.ingest(_batch(worker, done, size))
                done += 1
                if ready is not None:
                    ready, signal_ready = None, ready
                    signal_ready()  # once: the first batch of this run is in
                if renders is not None and done % 25 == 0:
                    renders.append((store.head, _payload_digest(session.working)))
            except StoreConflictError:
                with contextlib.suppress(StoreError):
                    store.refresh()
            except StoreError:
                store.close()
                store = None
    finally:
        if store is not None:
            store.close()
    pytest.fail(f"worker {worker} did not finish its {count} batches in {deadline}s")


def _log_texts(location: str) -> list[list[str]]:
    """Each entry of the log, as the texts of its events."""
    store, _ = _open(location)
    with contextlib.closing(store):
        return [
            ["".join(part.text for part in event.content) for event in entry.events]  # type: ignore[union-attr]
            for entry in store.journal()
        ]


def _fork(body: Callable[[], None]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            body()
        except BaseException:
            code = 1
        os._exit(code)
    return pid


def _wait(pid: int) -> int:
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


class TestKilledWorker:
    def test_fifty_kills_mid_append_leave_a_prefix_of_whole_entries(self, postgres: Any) -> None:
        """SIGKILL at 50 random moments: the log is every batch up to one, each whole.

        Each child says when its first batch is in, so every round adds to the log
        and the kill lands among the appends that follow.
        """
        location = postgres.location("kill")
        rng = random.Random(19)
        for _ in range(50):
            reader, writer = os.pipe()

            def signal_ready(fd: int = writer) -> None:
                os.write(fd, b"r")

            pid = _fork(lambda: append_batches(location, 0, 10_000, ready=signal_ready))
            os.close(writer)
            assert os.read(reader, 1) == b"r"
            os.close(reader)
            time.sleep(rng.uniform(0.0, 0.04))
            os.kill(pid, signal.SIGKILL)
            assert _wait(pid) == -signal.SIGKILL
        entries = _log_texts(location)
        assert len(entries) >= 50
        assert entries == _texts(0, len(entries))


class TestServerRestart:
    def test_a_stopped_server_is_a_typed_error_and_the_worker_resumes(self, postgres: Any) -> None:
        """Stopped mid-run: appends fail with `StoreUnavailableError`, nothing half-written."""
        location = postgres.location("restart")
        store, session = _open(location)
        with contextlib.closing(store):
            session.raw.ingest(_batch(0, 0))
            before = len(session.raw)
            postgres.stop()
            try:
                with pytest.raises(StoreUnavailableError, match="cannot be reached"):
                    session.raw.ingest(_batch(0, 1))
                assert len(session.raw) == before
            finally:
                postgres.start()
            session.raw.ingest(_batch(0, 1))  # the same store goes on once the server is back
        assert _log_texts(location) == _texts(0, 2)

    def test_a_worker_writing_through_a_restart_loses_and_repeats_nothing(
        self, postgres: Any
    ) -> None:
        """A worker appending while the server restarts twice ends with every batch once."""
        location = postgres.location("restart-loop")
        _open(location)[0].close()
        pid = _fork(lambda: append_batches(location, 0, 150))
        for _ in range(2):
            time.sleep(0.3)
            postgres.stop()
            time.sleep(0.3)
            postgres.start()
        assert _wait(pid) == 0
        assert _log_texts(location) == _texts(0, 150)


class TestDroppedConnections:
    def test_a_connection_dropped_in_the_pool_is_replaced_unseen(self, postgres: Any) -> None:
        """Backends terminated between two calls: the next append and read just work."""
        location = postgres.location("pooled")
        store, session = _open(location)
        with contextlib.closing(store):
            session.raw.ingest(_batch(0, 0))
            assert postgres.terminate_workers() >= 1
            session.raw.ingest(_batch(0, 1))
            assert postgres.terminate_workers() >= 1
            assert store.refresh().entries == 0
        assert _log_texts(location) == _texts(0, 2)

    def test_connections_dropped_under_a_worker_lose_and_repeat_nothing(
        self, postgres: Any
    ) -> None:
        """`pg_terminate_backend` under a writing worker, ten times: every batch once."""
        location = postgres.location("dropped")
        _open(location)[0].close()
        pid = _fork(lambda: append_batches(location, 0, 200))
        dropped = 0
        for _ in range(10):
            time.sleep(0.05)
            dropped += postgres.terminate_workers()
        assert _wait(pid) == 0
        assert dropped > 0
        assert _log_texts(location) == _texts(0, 200)


@pytest.fixture(name="results")
def results_fixture(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path


class TestManyWorkers:
    @pytest.mark.parametrize("workers", [2, 8])
    def test_a_thousand_appends_from_many_workers(
        self, postgres: Any, results: Path, workers: int
    ) -> None:
        """1,000 appends in all: none lost, doubled or reordered; every render is the log's."""
        location = postgres.location(f"many{workers}")
        _open(location)[0].close()
        each = 1000 // workers

        def work(worker: int) -> None:
            renders: list[tuple[int, str]] = []
            append_batches(location, worker, each, renders=renders, deadline=300, size=1)
            (results / f"{worker}.json").write_text(json.dumps(renders))

        pids = [_fork(lambda w=w: work(w)) for w in range(workers)]  # type: ignore[misc]
        assert [_wait(pid) for pid in pids] == [0] * workers
        entries = _log_texts(location)
        assert len(entries) == each * workers
        for worker in range(workers):
            mine = [texts for texts in entries if texts[0].startswith(f"w{worker} ")]
            assert mine == _texts(worker, each, size=1)
        seen = {
            worker: json.loads((results / f"{worker}.json").read_text())
            for worker in range(workers)
        }
        expected = _renders_of_the_log(entries, {head for got in seen.values() for head, _ in got})
        assert len(expected) > workers
        for worker, got in seen.items():
            for head, digest in got:
                assert expected[head] == digest, (worker, head)


def _renders_of_the_log(entries: list[list[str]], heads: set[int]) -> dict[int, str]:
    """The request one process fed the log renders after each of `heads` entries."""
    raw = ContextGraph(counter=WordCounter())
    working = WorkingGraph(raw, clock=_CLOCK)
    digests = {}
    for seq, texts in enumerate(entries, start=1):
        raw.ingest([UserTurn(content=text) for text in texts])
        if seq in heads:
            digests[seq] = _payload_digest(working)
    return digests


def test_threads_of_one_process_share_one_store(postgres: Any) -> None:
    """Several threads appending through one store need no refresh: its lock orders them."""
    location = postgres.location("threads")
    store, session = _open(location)
    with contextlib.closing(store):
        threads = [
            threading.Thread(
                target=lambda w=w: [session.raw.ingest(_batch(w, n)) for n in range(20)]  # type: ignore[misc]
            )
            for w in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(_log_texts(location)) == 80
