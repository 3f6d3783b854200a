"""`IdleCollector`: full garbage collections wait for a moment with no request in flight."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator

import httpx
import pytest
from aiohttp import web

from orchestrator.gateway.collector import IdleCollector


class _Cycle:
    """An object in a reference cycle: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _gc_restored() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process's collector as it was


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def _serve(
    collector: IdleCollector, made: list[weakref.ref[_Cycle]]
) -> tuple[str, web.AppRunner]:
    async def handler(request: web.Request) -> web.Response:
        cycle = _Cycle()  # garbage once the request is answered
        made.append(weakref.ref(cycle))
        return web.Response(text="ok")

    app = web.Application(middlewares=[collector.middleware])
    app.router.add_get("/", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    return f"http://{host}:{port}/", runner


async def test_a_request_freezes_what_it_left_and_an_idle_moment_collects() -> None:
    clock = _Clock()
    collector = IdleCollector(idle=0.01, every=10.0, overdue=1000.0, clock=clock)
    made: list[weakref.ref[_Cycle]] = []
    url, runner = await _serve(collector, made)
    gc.disable()  # no automatic pass: only the collector's
    try:
        async with httpx.AsyncClient() as client:
            await client.get(url)
            assert gc.get_freeze_count() > 0, "what the request left alive is frozen"
            await asyncio.sleep(0.05)  # idle, but a full pass ran less than `every` ago
            assert collector.full_passes == 0 and made[0]() is not None
            clock.now = 11.0
            await client.get(url)
            await asyncio.sleep(0.05)  # idle past `every`: a full pass, frozen ones included
            assert collector.full_passes == 1
            assert made[0]() is None and made[1]() is None, "the cycles were collected"
            assert gc.get_freeze_count() > 0, "frozen again after the pass"
    finally:
        gc.enable()
        collector.close()
        await runner.cleanup()


async def test_a_proxy_never_idle_still_collects_once_overdue() -> None:
    clock = _Clock()
    collector = IdleCollector(idle=1000.0, every=10.0, overdue=100.0, clock=clock)
    made: list[weakref.ref[_Cycle]] = []
    url, runner = await _serve(collector, made)
    gc.disable()
    try:
        async with httpx.AsyncClient() as client:
            await client.get(url)
            assert collector.full_passes == 0
            clock.now = 101.0
            await client.get(url)  # at its end, overdue: collected then and there
            assert collector.full_passes == 1 and made[0]() is None
    finally:
        gc.enable()
        collector.close()
        await runner.cleanup()
