"""Headless Chromium over the DevTools protocol, for the report's tests in a real browser.

`browser` (the fixture in conftest.py) starts one Chromium per test module; `open_page`
opens a tab on a URL and yields a `Page` to send commands to and read events from.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

__all__ = ["Page", "chromium", "needs_browser", "open_page"]


def chromium() -> str | None:
    """The Chromium (or Chrome) binary on PATH, if there is one."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


_REQUIRED = os.environ.get("CONTEXT_GRAPH_REQUIRE_CHROMIUM") == "1"
needs_browser = pytest.mark.skipif(
    chromium() is None and not _REQUIRED,
    reason="no Chromium here: `apt-get install chromium` (Debian) runs these tests",
)


class Page:
    """One browser tab over the DevTools protocol: commands, and the events seen so far."""

    def __init__(self, socket: Any) -> None:
        self._socket = socket
        self._ids = itertools.count(1)
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, **params: Any) -> dict[str, Any]:
        number = next(self._ids)
        self._socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(self._socket.recv(timeout=30))
            if message.get("id") == number:
                if "error" in message:
                    raise AssertionError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            self.events.append(message)

    def wait_for(self, method: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while not any(e.get("method") == method for e in self.events):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {method} within {seconds} s")
            self.events.append(json.loads(self._socket.recv(timeout=left)))

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise AssertionError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[str]:
        """Console errors, uncaught exceptions and log errors seen so far."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
                found.append(str(params.get("args")))
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
            elif method == "Page.javascriptDialogOpening":  # alert(): a script of the data ran
                found.append(f"dialog: {params.get('message')}")
        return found


def open_page(browser: str, url: str, width: int | None = None) -> Iterator[Page]:
    """A new tab on `url` (`width`: the window's width in CSS pixels), once loaded."""
    from websockets.sync.client import connect

    address, path = browser.split("|")
    with connect(f"ws://{address}{path}", max_size=None) as root:
        control = Page(root)
        target = control.send("Target.createTarget", url="about:blank")["targetId"]
        with connect(f"ws://{address}/devtools/page/{target}", max_size=None) as socket:
            page = Page(socket)
            for domain in ("Runtime", "Log", "Page"):
                page.send(f"{domain}.enable")
            if width is not None:
                page.send(
                    "Emulation.setDeviceMetricsOverride",
                    width=width,
                    height=900,
                    deviceScaleFactor=1,
                    mobile=False,
                )
            page.send("Page.navigate", url=url)
            page.wait_for("Page.loadEventFired")
            yield page
        control.send("Target.closeTarget", targetId=target)
