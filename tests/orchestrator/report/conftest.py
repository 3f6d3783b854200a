"""The `browser` fixture: one headless Chromium per test module (see chromium.py)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.orchestrator.report.chromium import chromium


@pytest.fixture(scope="module")
def browser() -> Iterator[str]:
    """A headless Chromium on a free loopback port; yields its DevTools address."""
    from websockets.sync.client import connect  # noqa: F401  (fail early if absent)

    binary = chromium()
    if binary is None:
        pytest.fail("CONTEXT_GRAPH_REQUIRE_CHROMIUM=1 but no chromium binary is on PATH")
    profile = tempfile.mkdtemp(prefix="cg-chromium-")
    process = subprocess.Popen(
        [
            binary,
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if time.monotonic() > deadline or process.poll() is not None:
                pytest.fail("Chromium did not open its DevTools port")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        yield f"127.0.0.1:{port}|{path}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)
