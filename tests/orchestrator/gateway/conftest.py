"""The gateway's tests: a real HTTP gateway between the SDK (or an agent CLI) and the fake API.

`benchmarks.provider_server.ProviderServer` is the upstream: it checks every body it
gets with our validator and the SDK's request types and refuses one over its `limit`,
so a request the gateway sends wrong fails the test at the upstream, as it would
against the real API.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from benchmarks.provider_server import ProviderServer
from orchestrator.gateway import GatewayThread, gateway_for
from orchestrator.policy import get_policy
from tests.orchestrator.gateway.scripted import BUDGET


@pytest.fixture(name="upstream")
def upstream_fixture(
    provider_server: Callable[..., ProviderServer],
) -> Callable[..., ProviderServer]:
    """A factory of started Anthropic `ProviderServer`s (tests/orchestrator/conftest.py)."""
    return functools.partial(provider_server, "anthropic")


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
            upstream.url, budget=budget, policy=get_policy(profile), store=store, strict=strict
        )
        thread = GatewayThread(gateway)
        url = thread.__enter__()
        running.append(thread)
        return url, thread

    yield make
    for thread in reversed(running):
        thread.__exit__(None, None, None)
