"""The gateway's tests: a real HTTP gateway between the SDK (or an agent CLI) and the fake API.

`benchmarks.provider_server.ProviderServer` is the upstream: it checks every body it
gets with our validator and the SDK's request types and refuses one over its `limit`,
so a request the gateway sends wrong fails the test at the upstream, as it would
against the real API.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import GatewayThread, gateway_for
from orchestrator.profiles import get_profile
from tests.orchestrator.gateway.scripted import BUDGET


@pytest.fixture(name="upstream")
def upstream_fixture() -> Iterator[Callable[..., ProviderServer]]:
    """A factory of started Anthropic `ProviderServer`s, stopped after the test."""
    started: list[ProviderServer] = []

    def make(**options: Any) -> ProviderServer:
        server = ProviderServer("anthropic", **options)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture(name="serve_gateway")
def serve_gateway_fixture() -> Iterator[Callable[..., tuple[str, GatewayThread]]]:
    """A factory of gateways served on threads, stopped after the test."""
    running: list[GatewayThread] = []

    def make(
        upstream: ProviderServer,
        *,
        budget: int = BUDGET,
        store: Path | None = None,
        strict: bool = False,
        profile: str = "coding",
    ) -> tuple[str, GatewayThread]:
        gateway = gateway_for(
            upstream.url, budget=budget, profile=get_profile(profile), store=store, strict=strict
        )
        thread = GatewayThread(gateway)
        url = thread.__enter__()
        running.append(thread)
        return url, thread

    yield make
    for thread in reversed(running):
        thread.__exit__(None, None, None)
