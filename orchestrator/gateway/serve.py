"""Running the gateway: the sessions' managers made from a policy, served on a port."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from orchestrator.gateway.collector import IdleCollector
from orchestrator.gateway.places import places_for
from orchestrator.gateway.server import Gateway
from orchestrator.gateway.threads import ManagerFactory, SessionTable
from orchestrator.gateway.wires import WIRES
from orchestrator.integrations.extras import missing_extra
from orchestrator.manager import ContextManager
from orchestrator.policy import Policy

try:
    from aiohttp import web
except ImportError as exc:  # the extra is not installed
    raise missing_extra(__name__, "aiohttp", "proxy", "aiohttp") from exc

__all__ = ["GatewayThread", "gateway_for", "serve"]


def gateway_for(
    upstream: str,
    *,
    budget: int | None,
    policy: Policy,
    store: Path | str | None,
    strict: bool = False,
    wires: Sequence[str] | None = None,
) -> Gateway:
    """A gateway to `upstream` whose conversations are managed under `policy` and `budget`.

    Each wire format named in `wires` (by default every one in `WIRES`) is served (the
    others' paths are passed through);
    its sessions are kept under `<store>/<wire>/`, or, for a `postgresql://` store, as
    sessions of that database which other gateways may serve at the same time (`places`).
    """
    tables = {
        name: SessionTable(WIRES[name].api, _factory(name, budget, policy), places_for(store, name))
        for name in (WIRES if wires is None else wires)
    }
    return Gateway(upstream, tables, budget=budget, strict=strict)


def _factory(wire: str, budget: int | None, policy: Policy) -> ManagerFactory:
    # An agent behind the gateway works on its own between user turns: after a summary
    # it is told to carry on (`auto_continue`).
    chosen = policy.replace(auto_continue=True)
    if WIRES[wire].http.engine_cache_marks:
        # The agent's own cache marks are taken off what it sends (they move every call):
        # the engine marks the prefix it keeps stable, or nothing would be cached.
        chosen = chosen.replace(cache_breakpoints=True)
    format = WIRES[wire].api.format

    def make(path: Path | str | None) -> ContextManager:
        if path is None:
            return ContextManager(format, budget, policy=chosen)
        return ContextManager.open(path, format=format, budget=budget, policy=chosen)

    return make


async def serve(
    *,
    upstream: str,
    budget: int | None,
    policy: Policy,
    store: Path | str | None,
    host: str,
    port: int,
    strict: bool,
    wires: Sequence[str],
    announce: Callable[[str], None],
    stopped: Callable[[str], None] | None = None,
) -> int:
    """Serve the gateway on `host:port` until SIGTERM or SIGINT (or cancelled).

    `announce` gets its URL once bound. On a signal the server stops taking connections,
    lets the requests in flight finish (their streams included, for up to
    `SHUTDOWN_GRACE` seconds; then they are cut), and closes every session's store;
    `stopped` then gets a line saying so. A second signal while it stops ends the
    process at once, as the signal does by default. Returns the signal's number.
    """
    gateway = gateway_for(
        upstream, budget=budget, policy=policy, store=store, strict=strict, wires=wires
    )
    # The process is the gateway's own: its garbage collection is kept off the requests.
    collector = IdleCollector()
    runner = web.AppRunner(
        gateway.app(middlewares=[collector.middleware]),
        access_log=None,
        shutdown_timeout=SHUTDOWN_GRACE,
    )
    await runner.setup()
    received: list[int] = []
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = runner.addresses[0]
        announce(f"http://{bound[0]}:{bound[1]}")
        received.append(await _signalled())
    finally:
        threads = sum(len(t) for w in wires for t in gateway.table_of(w).sessions.values())
        await runner.cleanup()  # waits for the requests in flight, then closes the stores
        collector.close()
    if stopped is not None:
        name = signal.Signals(received[0]).name
        stopped(f"stopped on {name}: {threads} conversation(s) closed, every store saved")
    return received[0]


SHUTDOWN_GRACE = 30.0
"""Seconds a stopping gateway lets the requests in flight run before it cuts them."""

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


async def _signalled() -> int:
    """Wait for SIGTERM or SIGINT; the number of the one that came."""
    loop = asyncio.get_running_loop()
    came: asyncio.Future[int] = loop.create_future()
    for number in _STOP_SIGNALS:
        loop.add_signal_handler(number, _settle, came, number)
    try:
        return await came
    finally:
        for number in _STOP_SIGNALS:
            loop.remove_signal_handler(number)


def _settle(came: asyncio.Future[int], number: int) -> None:
    if not came.done():  # two at once: the first decides (a later one ends the process)
        came.set_result(number)


class GatewayThread:
    """A gateway served from a thread of its own, for tests and benchmarks.

    `with GatewayThread(gateway) as url:` serves on a free loopback port until the block
    ends, then stops the server and closes every session.
    """

    def __init__(self, gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self._gateway = gateway
        self._host, self._port = host, port
        self._ready = threading.Event()
        self._url = ""
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="context-graph-gateway", daemon=True)

    @property
    def gateway(self) -> Gateway:
        """The gateway served."""
        return self._gateway

    def __enter__(self) -> str:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self._url

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # reported to the thread that waits
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop, self._stop = asyncio.get_running_loop(), asyncio.Event()
        runner = web.AppRunner(self._gateway.app(), access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, self._host, self._port).start()
            host, port = runner.addresses[0][:2]
            self._url = f"http://{host}:{port}"
            self._ready.set()
            await self._stop.wait()
        finally:
            await runner.cleanup()
