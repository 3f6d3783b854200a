"""A throwaway PostgreSQL cluster for `benchmarks.store`: a temporary folder, a free port.

The server refuses to run as root, so as root it runs as the `postgres` user (the Debian
packages make one). It keeps fsync on: the benchmark measures what a deployment gets.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["throwaway_server"]


@contextlib.contextmanager
def throwaway_server(bindir: Path) -> Iterator[str]:
    """Start a cluster with the binaries in `bindir`; its URL; stopped and removed after."""
    folder = Path(tempfile.mkdtemp(prefix="cg-bench-pg-"))
    folder.chmod(0o755)
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    with contextlib.closing(socket.socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = folder / "data"

    def run(*command: str) -> None:
        subprocess.run([*prefix, *command], check=True, capture_output=True, timeout=120)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8")
        options = f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c max_connections=200"
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(folder / "log"), "-o", options,
            "-w", "start")  # fmt: skip
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        with contextlib.suppress(subprocess.CalledProcessError):
            run(str(bindir / "pg_ctl"), "-D", str(data), "stop", "-m", "fast")
        shutil.rmtree(folder, ignore_errors=True)
