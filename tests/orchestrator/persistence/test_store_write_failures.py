"""After a failed write, `close()` gives the file back: reopening resumes from the file.

A write can fail at any statement (disk full, a quota, an I/O error). Whatever failed,
`close()` closes the connection and releases the writer lock (raising, after that, the
state it could not save), and the file reopens in the same process holding exactly
what was committed before the failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from context_graph.errors import StoreError
from orchestrator import ContextManager
from orchestrator.persistence.sqlite.lock import held_files
from orchestrator.policy import Policy

_FULL_DISK = """
import json, resource, signal, sys
from context_graph.errors import StoreError
from orchestrator import ContextManager
from orchestrator.policy import Policy

path = sys.argv[1]
manager = ContextManager.open(path)
manager.add_user("first")
manager.add_user("second")
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, hard))
report = {}
try:
    manager.add_user("too big " * 200_000)
except StoreError as exc:
    report["write"] = str(exc)
try:
    manager.close()
except StoreError as exc:
    report["close"] = str(exc)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
again = ContextManager.open(path)  # in the same process
report["texts"] = [node.text for node in again.raw]
again.add_user("after")
again.close()
print(json.dumps(report))
"""


def test_a_write_past_the_file_size_limit_leaves_the_file_reopenable(tmp_path: Path) -> None:
    """EFBIG (RLIMIT_FSIZE): the write fails, close releases, the reopen holds the committed."""
    path = tmp_path / "session.db"
    done = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert "cannot write to it" in report["write"]
    assert report["texts"] == ["first", "second"]
    manager = ContextManager.open(path, policy=Policy())
    assert [node.text for node in manager.raw] == ["first", "second", "after"]
    manager.close()


# -- a failure injected at each statement the store runs --------------------------------------

# (statement kind, which occurrence after arming): each is a point where a write fails.
POINTS = {
    "begin": (sqlite3.SQLITE_TRANSACTION, "BEGIN"),
    "insert": (sqlite3.SQLITE_INSERT, "journal"),
    "commit": (sqlite3.SQLITE_TRANSACTION, "COMMIT"),
    "state": (sqlite3.SQLITE_INSERT, "state"),
}


def _fail_at(connection: sqlite3.Connection, action: int, target: str) -> None:
    def authorizer(code: int, arg1: str | None, *_: object) -> int:
        if code == action and arg1 == target:
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    connection.set_authorizer(authorizer)


@pytest.fixture(name="path")
def path_fixture(tmp_path: Path) -> Iterator[Path]:
    before = held_files()
    yield tmp_path / "session.db"
    assert held_files() == before


@pytest.mark.parametrize("point", POINTS.values(), ids=POINTS.keys())
@pytest.mark.parametrize("when", ["ingest", "close"])
def test_every_failure_point_releases_on_close(
    path: Path, point: tuple[int, str], when: str
) -> None:
    """A statement that fails on ingest or on close's save: close releases, reopen is exact."""
    manager = ContextManager.open(path, policy=Policy())
    manager.add_user("first")
    manager.add_user("second")
    manager.render_sync()
    store = manager.store
    assert store is not None
    _fail_at(store.connection, *point)  # type: ignore[attr-defined]
    committed = ["first", "second"]
    if when == "ingest":
        try:
            manager.add_user("third")
        except StoreError:
            pass
        else:  # this point is not on an ingest's way (the state insert)
            committed.append("third")
    else:
        with contextlib.suppress(StoreError):
            manager.report_usage(1234)  # a state change for close to save
    try:
        manager.close()
    except StoreError as exc:
        assert str(path) in str(exc)
    assert store.closed
    again = ContextManager.open(path, policy=Policy())  # reopened in the same process
    assert [node.text for node in again.raw] == committed
    again.add_user("after")
    again.close()


def test_a_failed_atomic_flush_on_close_still_releases(path: Path) -> None:
    """An atomic block still open at close whose entries cannot be written: released."""
    from orchestrator.persistence import SQLiteStore

    store = SQLiteStore.open(path)
    session = store.restore()
    session.raw.add_user("kept")
    block = store.atomic()
    block.__enter__()
    session.raw.add_user("queued")
    _fail_at(store.connection, *POINTS["commit"])
    with pytest.raises(StoreError, match="cannot write"):
        store.close()
    with SQLiteStore.open(path) as again:
        assert [node.text for node in again.restore().raw] == ["kept"]


# -- every refused open gives back what it took ----------------------------------------------


def _not_sqlite(path: Path) -> None:
    path.write_text('{"role": "user"}\n')


def _other_application(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE invoices (id INTEGER)")
    connection.close()


def _other_counter(path: Path) -> None:
    from context_graph.testing import WordCounter

    ContextManager.open(path, counter=WordCounter(), policy=Policy()).close()


def _corrupt_journal(path: Path) -> None:
    manager = ContextManager.open(path, policy=Policy())
    manager.add_user("hello")
    manager.close()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE journal SET body = 'garbage'")
    connection.commit()
    connection.close()


REFUSALS = {
    "not-sqlite": _not_sqlite,
    "other-application": _other_application,
    "other-counter": _other_counter,
    "corrupt-journal": _corrupt_journal,
}


@pytest.mark.parametrize("make", REFUSALS.values(), ids=REFUSALS.keys())
def test_a_refused_open_leaves_nothing_held(path: Path, make: Callable[[Path], None]) -> None:
    """A refused open releases the descriptor and the lock: a writer takes the file next."""
    make(path)
    before = held_files()
    with pytest.raises(StoreError):
        ContextManager.open(path, policy=Policy())
    assert held_files() == before
    descriptor = os.open(path, os.O_RDWR)  # nothing of this process holds the file now
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no writer lock left
    finally:
        os.close(descriptor)
