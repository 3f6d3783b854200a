"""The integrations' and the gateway's tests run against `ProviderServer` (benchmarks).

One copy of the strict local model server serves these tests and
`python -m benchmarks.integrations`: four wire formats, every body validated with our
validator and the SDK's request types, prompts counted at a factor, and a body that
breaks a rule or is over `limit` refused with the provider's HTTP 400.

Fixtures: `provider_server` (a factory: `provider_server("anthropic", limit=4000)`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchmarks.provider_server import ProviderServer, Wire


@pytest.fixture(name="provider_server")
def provider_server_fixture() -> Iterator[Callable[..., ProviderServer]]:
    """A factory of started `ProviderServer`s, stopped after the test."""
    started: list[ProviderServer] = []

    def make(wire: Wire, **options: Any) -> ProviderServer:
        server = ProviderServer(wire, **options)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()
