"""`context-graph proxy` run as a user runs it, in a process of its own, and a stalling stream.

`ProxyProcess` starts the command on a free port and reads the URL it announces;
`Stall` holds the fake upstream's next streamed answer after a few events until it is
let go, so that a test can signal or kill the proxy while an answer is streaming.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import benchmarks.provider_server
from benchmarks.provider_streams import write_stream
from tests.orchestrator.gateway.scripted import ROOT

_WAIT = 60.0
"""Seconds any wait gives up after: a hung proxy fails the test instead of hanging it."""


class ProxyProcess:
    """A `context-graph proxy` subprocess; `url` once it announced it.

    Args:
        upstream: The fake upstream's URL.
        store: The store (a folder, or a `postgresql://` URL).
        budget: The budget of every request.
    """

    def __init__(self, upstream: str, store: Path | str, budget: int) -> None:
        command = [
            sys.executable,
            "-m",
            "orchestrator.cli",
            "proxy",
            "--upstream-url",
            upstream,
            "--budget",
            str(budget),
            "--store",
            str(store),
            "--port",
            "0",
        ]
        self.popen = subprocess.Popen(
            command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.popen.stdout is not None
        first = self.popen.stdout.readline()
        found = re.search(r"(http://\S+) ->", first)
        if found is None:
            self.popen.kill()
            _, err = self.popen.communicate(timeout=_WAIT)
            pytest.fail(f"the proxy did not start: {first!r} {err}")
        self.url = found.group(1)

    def stop(self, number: int = signal.SIGTERM) -> tuple[int, str]:
        """Send the signal, wait for the process to end: its exit code and its stderr."""
        self.popen.send_signal(number)
        return self.wait()

    def wait(self) -> tuple[int, str]:
        """Wait for the process to end: its exit code and its stderr."""
        _, err = self.popen.communicate(timeout=_WAIT)
        return self.popen.returncode, err

    def close(self) -> None:
        """Kill the process if it still runs (a failed test's leftover)."""
        if self.popen.poll() is None:
            self.popen.kill()
        self.popen.communicate(timeout=_WAIT)


class Stall:
    """Holds the upstream's next streamed answer after `after` events until `release`.

    Installed over `benchmarks.provider_server.write_stream` for the test (`install`).
    """

    def __init__(self, after: int = 3) -> None:
        self.after = after
        self.armed = False
        self.stalled = threading.Event()
        self.released = threading.Event()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Route the fake upstream's streams through this stall."""

        def stalling(handler: Any, wire: str, events: list[Any], fault: Any = None) -> None:
            if self.armed:
                self.armed = False
                events = _Held(events, self)
            write_stream(handler, wire, events, fault)

        monkeypatch.setattr(benchmarks.provider_server, "write_stream", stalling)

    def wait_stalled(self) -> None:
        """Wait until the armed stream has sent its first events and is held."""
        assert self.stalled.wait(_WAIT), "the stream never stalled"


class _Held(list[Any]):
    """Events that stop coming after the stall's count until it is released."""

    def __init__(self, events: list[Any], stall: Stall) -> None:
        super().__init__(events)
        self._stall = stall

    def __iter__(self) -> Iterator[Any]:
        for index, event in enumerate(super().__iter__()):
            if index == self._stall.after:
                self._stall.stalled.set()
                self._stall.released.wait(_WAIT)
            yield event
