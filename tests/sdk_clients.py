"""The HTTP clients a test opened, closed when it ends (wired in by tests/conftest.py).

The fake upstreams keep a connection open from request to request, as the providers'
APIs do (HTTP/1.1 keep-alive). An SDK client a test made and never closed then holds an
open socket after the test, and an async one holds it past the event loop that opened
it, which Python reports as an unclosed resource when the socket is collected, during
whichever test runs then. So every `httpx` client (and `httpx2`, which the Anthropic SDK
uses) is noted when it is made, and closed when its test ends: an async test's on its
own event loop, before that loop closes; any test's sync clients after it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

_OPEN: weakref.WeakSet[Any] = weakref.WeakSet()


def _noted(make: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(make)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        make(self, *args, **kwargs)
        _OPEN.add(self)

    return init


for _name in ("httpx", "httpx2"):
    try:
        _module = importlib.import_module(_name)
    except ImportError:  # the SDK that uses it is not installed
        continue
    for _client in (_module.Client, _module.AsyncClient):
        _client.__init__ = _noted(_client.__init__)


def _made_since(before: set[int], kind: str) -> list[Any]:
    return [
        client
        for client in list(_OPEN)
        if id(client) not in before and type(client).__mro__[-2].__name__ == kind
    ]


def _open_now() -> set[int]:
    return {id(client) for client in list(_OPEN)}


def _closing_async(test: Callable[..., Any]) -> Callable[..., Any]:
    """`test` (a coroutine function), then `aclose()` of the async clients it opened."""

    @functools.wraps(test)
    async def run(*args: Any, **kwargs: Any) -> Any:
        before = _open_now()
        try:
            return await test(*args, **kwargs)
        finally:
            for client in _async_clients_since(before):
                if not client.is_closed:
                    await client.aclose()

    return run


def _async_clients_since(before: set[int]) -> list[Any]:
    return [
        client for client in list(_OPEN) if id(client) not in before and hasattr(client, "aclose")
    ]


def close_async_clients_of(items: list[pytest.Item]) -> None:
    """Wrap each coroutine test so that it closes its async clients on its own loop."""
    for item in items:
        test = getattr(item, "obj", None)
        if isinstance(item, pytest.Function) and inspect.iscoroutinefunction(test):
            item.obj = _closing_async(test)


@pytest.fixture(name="close_sync_clients", autouse=True)
def close_sync_clients_fixture() -> Iterator[None]:
    """After each test, close the sync clients it opened."""
    before = _open_now()
    yield
    for client in list(_OPEN):
        if id(client) not in before and not hasattr(client, "aclose") and not client.is_closed:
            client.close()
