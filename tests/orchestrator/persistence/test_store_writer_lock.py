"""One writer per session file, however the file is named, in this process or another.

The writer lock belongs to the database file: a symlink, a hard link, a `..` path, a
deleted `<path>.lock` sidecar (earlier versions locked one) reach the same file and are
refused, in the same process and from another one. Every refusal names who holds it.
"""

from __future__ import annotations

import inspect
import multiprocessing
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from context_graph.errors import StoreLockedError
from orchestrator import ContextManager
from orchestrator.persistence import SQLiteStore, open_store
from orchestrator.persistence.sqlite.lock import held_files
from orchestrator.policy import Policy

Alias = Callable[[Path], Path]


def _symlink(path: Path) -> Path:
    link = path.with_name("link.db")
    link.symlink_to(path)
    return link


def _hard_link(path: Path) -> Path:
    link = path.with_name("hard.db")
    os.link(path, link)
    return link


def _dotted(path: Path) -> Path:
    (path.parent / "sub").mkdir()
    return path.parent / "sub" / ".." / path.name


def _relative(path: Path) -> Path:
    return Path(os.path.relpath(path))


def _sidecar_deleted(path: Path) -> Path:
    path.with_name(f"{path.name}.lock").unlink(missing_ok=True)
    return path


ALIASES: dict[str, Alias] = {
    "symlink": _symlink,
    "hard-link": _hard_link,
    "dot-dot": _dotted,
    "relative": _relative,
    "sidecar-deleted": _sidecar_deleted,
}


@pytest.fixture(name="path")
def path_fixture(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "session.db"
    SQLiteStore.open(path).close()  # the file exists, so every alias can reach it
    before = held_files()
    yield path
    assert held_files() == before  # nothing of this test left open


def _entries(path: Path) -> list[str]:
    with SQLiteStore.open(path, read_only=True) as store:
        return [node.text for node in store.restore().raw]


class TestSameProcess:
    @pytest.mark.parametrize("alias", ALIASES.values(), ids=ALIASES.keys())
    def test_a_second_writer_through_another_name_is_refused(
        self, path: Path, alias: Alias
    ) -> None:
        """The second writer is refused whatever name it uses; the first goes on."""
        first = ContextManager.open(path, policy=Policy())
        line = inspect.currentframe().f_lineno - 1  # type: ignore[union-attr]
        first.add_user("one")
        other = alias(path)
        with pytest.raises(StoreLockedError) as refused:
            ContextManager.open(other, policy=Policy())
        assert refused.value.pid == os.getpid()
        assert refused.value.holder == f"{__file__}:{line}"
        assert "this process" in str(refused.value)
        assert "close()" in str(refused.value)
        first.add_user("two")
        first.close()
        again = ContextManager.open(other, policy=Policy())  # free once the first closed
        again.add_user("three")
        again.close()
        assert _entries(path) == ["one", "two", "three"]

    def test_a_reader_meanwhile_keeps_the_writer_whole(self, path: Path) -> None:
        """A read-only open (the refusal's suggestion) works and leaves the writer writing."""
        writer = SQLiteStore.open(path)
        session = writer.restore()
        session.raw.add_user("one")
        reader = open_store(_symlink(path), read_only=True)
        assert [node.text for node in reader.restore(clock=lambda: 0.0).raw] == ["one"]
        reader.close()
        session.raw.add_user("two")
        writer.close()
        assert _entries(path) == ["one", "two"]

    def test_a_store_dropped_unclosed_gives_the_file_back(self, path: Path) -> None:
        """A writer collected without `close()` releases the file (safety net, not a pattern)."""
        SQLiteStore.open(path).restore().raw.add_user("kept")
        import gc

        gc.collect()
        with SQLiteStore.open(path) as store:
            assert [node.text for node in store.restore().raw] == ["kept"]


_HOLDER = """
import sys
from orchestrator.persistence import SQLiteStore
store = SQLiteStore.open(sys.argv[1])
store.restore().raw.add_user("from the other process")
print("ready", flush=True)
sys.stdin.readline()
store.close()
print("closed", flush=True)
"""


@pytest.fixture(name="holder")
def holder_fixture() -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []

    def start(path: Path) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.communicate()


class TestAnotherProcess:
    @pytest.mark.parametrize("alias", ALIASES.values(), ids=ALIASES.keys())
    def test_a_writer_in_another_process_keeps_every_name_out(
        self, path: Path, alias: Alias, holder: Callable[[Path], subprocess.Popen[str]]
    ) -> None:
        """Another process writes through one name; this one is refused through any other."""
        other = holder(path)
        with pytest.raises(StoreLockedError) as refused:
            SQLiteStore.open(alias(path))
        assert refused.value.pid == other.pid
        assert refused.value.holder is None
        assert f"process {other.pid}" in str(refused.value)
        assert "read_only=True" in str(refused.value)
        assert other.stdin is not None and other.stdout is not None
        other.stdin.write("\n")
        other.stdin.flush()
        assert other.stdout.readline() == "closed\n"
        assert other.wait(timeout=60) == 0
        assert _entries(path) == ["from the other process"]

    @pytest.mark.parametrize("alias", ALIASES.values(), ids=ALIASES.keys())
    def test_this_process_keeps_another_out_through_any_name(
        self, path: Path, alias: Alias
    ) -> None:
        """This process writes; another process is refused through any other name."""
        script = (
            "import sys\nfrom context_graph.errors import StoreLockedError\n"
            "from orchestrator.persistence import SQLiteStore\n"
            "try:\n    SQLiteStore.open(sys.argv[1])\n"
            "except StoreLockedError as exc:\n    print('refused', exc.pid)\n"
            "else:\n    print('opened')\n"
        )
        with SQLiteStore.open(path):
            other = alias(path)  # made while the writer holds the file
            done = subprocess.run(
                [sys.executable, "-c", script, str(other)],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=os.getcwd(),
            )
        assert done.stdout == f"refused {os.getpid()}\n", done.stderr


def _open_in_child(path: str, answer: Any) -> None:
    try:
        SQLiteStore.open(path).close()
    except StoreLockedError as exc:
        answer.put(("refused", exc.pid, exc.holder))
    else:
        answer.put(("opened", None, None))


class TestForkedChild:
    def test_a_forked_child_does_not_inherit_the_writer(self, path: Path) -> None:
        """A child forked from the writer is refused as another process, named by pid."""
        if threading.active_count() > 1:
            pytest.skip("fork needs a single-threaded test process")
        context = multiprocessing.get_context("fork")
        answer = context.SimpleQueue()
        with SQLiteStore.open(path):
            child = context.Process(target=_open_in_child, args=(str(_symlink(path)), answer))
            child.start()
            child.join(timeout=120)
        assert child.exitcode == 0
        assert answer.get() == ("refused", os.getpid(), None)
