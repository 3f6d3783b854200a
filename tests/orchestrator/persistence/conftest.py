"""A throwaway PostgreSQL cluster for the store tests, started once per test session.

The cluster lives in a temporary folder (data, socket, log) and listens on a free
loopback port; it is stopped and removed when the session ends. The server binaries are
found in `$CONTEXT_GRAPH_PG_BIN`, on `PATH` (`initdb`), or in
`/usr/lib/postgresql/*/bin` (the Debian packages). Without them the PostgreSQL tests
skip, saying how to get a server, unless `CI` or `CONTEXT_GRAPH_REQUIRE_POSTGRES=1` is
set: then they fail. `CONTEXT_GRAPH_TEST_POSTGRES_URL` points the tests at a server of
your own instead (its tests that stop the server then skip).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

_HOW = (
    "install the PostgreSQL server (Debian: `apt-get install -y postgresql`), or set "
    "CONTEXT_GRAPH_PG_BIN to the folder holding initdb and pg_ctl, or "
    "CONTEXT_GRAPH_TEST_POSTGRES_URL to a server the tests may create tables in"
)


def _required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("CONTEXT_GRAPH_REQUIRE_POSTGRES") == "1"


def _bindir() -> Path | None:
    given = os.environ.get("CONTEXT_GRAPH_PG_BIN")
    if given:
        return Path(given)
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    debian = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    return Path(debian[-1]).parent if debian else None


def _major(path: str) -> int:
    version = Path(path).parent.parent.name
    return int(version) if version.isdigit() else 0


class PgServer:
    """A PostgreSQL server the tests use: its URL, and a way to stop and start it.

    Args:
        url: The database URL (no session).
        bindir: The server binaries (`None`: an outside server, never stopped).
        data: The cluster's folder.
        port: The loopback port.
    """

    def __init__(self, url: str, bindir: Path | None, data: Path | None, port: int) -> None:
        self.url = url
        self.bindir = bindir
        self.data = data
        self.port = port

    def location(self, prefix: str = "t") -> str:
        """A URL naming a fresh session."""
        return f"{self.url}#{prefix}-{uuid.uuid4().hex[:12]}"

    def execute(self, sql: str, params: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
        """Run one statement as the superuser; its rows."""
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            cursor = conn.execute(sql.encode(), params or None)
            return list(cursor.fetchall()) if cursor.description else []

    def terminate_workers(self) -> int:
        """Drop every connection the stores opened (`pg_terminate_backend`); how many."""
        rows = self.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = 'context-graph' AND pid <> pg_backend_pid()"
        )
        return len(rows)

    def stop(self) -> None:
        """Stop the server (fast: open connections are dropped)."""
        self._ctl("stop", "-m", "fast")

    def start(self) -> None:
        """Start the server again on the same port."""
        assert self.data is not None
        options = (
            f"-p {self.port} -k {self.data.parent} -c listen_addresses=127.0.0.1"
            " -c fsync=off -c full_page_writes=off -c max_connections=200"
        )
        self._ctl("start", "-w", "-l", str(self.data.parent / "server.log"), "-o", options)

    def _ctl(self, *args: str) -> None:
        if self.bindir is None or self.data is None:
            pytest.skip("the tests' PostgreSQL server is not theirs to stop (an outside URL)")
        _run([str(self.bindir / "pg_ctl"), "-D", str(self.data), *args])


def _as_server_user() -> list[str]:
    """The prefix that runs a server binary: the server refuses to run as root."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.fail("running as root needs a `postgres` user to run the test server as")
    return ["runuser", "-u", "postgres", "--"]


def _run(command: list[str]) -> None:
    done = subprocess.run(
        [*_as_server_user(), *command], capture_output=True, text=True, check=False, timeout=120
    )
    if done.returncode != 0:
        msg = f"{' '.join(command)} failed ({done.returncode}): {done.stderr or done.stdout}"
        raise RuntimeError(msg)


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(name="postgres", scope="session")
def postgres_fixture() -> Iterator[PgServer]:
    """The session's PostgreSQL server (skips, or fails in CI, without one)."""
    outside = os.environ.get("CONTEXT_GRAPH_TEST_POSTGRES_URL")
    if outside:
        yield PgServer(outside, None, None, 0)
        return
    bindir = _bindir()
    if bindir is None or not (bindir / "initdb").exists():
        message = f"no PostgreSQL server binaries found; {_HOW}"
        if _required():
            pytest.fail(message)
        pytest.skip(message)
    folder = Path(tempfile.mkdtemp(prefix="cg-postgres-"))
    folder.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    port = _free_port()
    server = PgServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", bindir, data, port)
    try:
        _run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres",
              "--no-sync", "-E", "UTF8", "--locale=C"])  # fmt: skip
        server.start()
    except RuntimeError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"the test PostgreSQL server did not start: {exc}")
    try:
        yield server
    finally:
        with contextlib.suppress(RuntimeError):
            _run([str(bindir / "pg_ctl"), "-D", str(data), "stop", "-m", "immediate"])
        shutil.rmtree(folder, ignore_errors=True)
